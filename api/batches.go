package api

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/export"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/pipeline"
)

// BatchRow is a row of an uploaded batch file that was accepted: its line
// and its run.
type BatchRow struct {
	Line  int    `json:"line"`
	Topic string `json:"topic"`
	RunID string `json:"run_id"`
}

// RejectedRow is a row of an uploaded batch file that was not run: its line
// and why.
type RejectedRow struct {
	Line   int    `json:"line"`
	Topic  string `json:"topic,omitempty"`
	Reason string `json:"reason"`
}

// BatchLinks are where to follow a batch.
type BatchLinks struct {
	Self    string `json:"self"`
	Events  string `json:"events"`
	Results string `json:"results"`
	Export  string `json:"export"`
}

func batchLinks(id string) BatchLinks {
	base := "/api/batches/" + id
	return BatchLinks{Self: base, Events: base + "/events", Results: base + "/results", Export: base + "/export"}
}

// CreateBatchResponse is the answer of POST /api/batches.
type CreateBatchResponse struct {
	BatchID  string        `json:"batch_id"`
	Pipeline string        `json:"pipeline"`
	Source   string        `json:"source"`
	Accepted []BatchRow    `json:"accepted"`
	Rejected []RejectedRow `json:"rejected"`
	// Warnings are remarks on the file that did not stop it, such as
	// ignored columns.
	Warnings []string   `json:"warnings,omitempty"`
	Links    BatchLinks `json:"links"`
}

// BatchItem is a row of a batch and the state of its run.
type BatchItem struct {
	Line   int      `json:"line"`
	Topic  string   `json:"topic"`
	Tags   []string `json:"tags,omitempty"`
	Status string   `json:"status" jsonschema:"enum=queued,enum=running,enum=succeeded,enum=failed,enum=cancelled,enum=rejected"`
	RunID  string   `json:"run_id,omitempty"`
	// Error says why a rejected row was not run, or why its run failed.
	Error string `json:"error,omitempty"`
	// Progress is a running row's latest progress, 0-100, and Stage its
	// stage.
	Progress int    `json:"progress,omitempty" jsonschema:"minimum=0,maximum=100"`
	Stage    string `json:"stage,omitempty"`
	// Best is a succeeded row's best-scored idea, when its pipeline lists
	// ideas.
	Best *BestIdea `json:"best,omitempty"`
	// Outcome is how a row's run came out beyond its status, once it
	// ended.
	Outcome *Outcome `json:"outcome,omitempty"`
}

// BatchSummary is a batch without its rows, for lists.
type BatchSummary struct {
	BatchID   string       `json:"batch_id"`
	Pipeline  string       `json:"pipeline"`
	Source    string       `json:"source"`
	CreatedAt time.Time    `json:"created_at"`
	Counts    batch.Counts `json:"counts"`
	// Done is true when every row has finished or was rejected.
	Done  bool       `json:"done"`
	Links BatchLinks `json:"links"`
}

// Batch is a batch with its rows, the answer of GET /api/batches/{id} and
// the data of its progress events.
type Batch struct {
	BatchSummary
	Items []BatchItem `json:"items"`
}

// BatchList is the answer of GET /api/batches.
type BatchList struct {
	Batches []BatchSummary `json:"batches"`
}

// CancelBatchResponse is the answer of DELETE /api/batches/{id}.
type CancelBatchResponse struct {
	BatchID string `json:"batch_id"`
	// Cancelled counts the rows whose runs were cancelled (or are
	// stopping).
	Cancelled int `json:"cancelled"`
}

func summary(b *madspark.Batch) BatchSummary {
	c := batch.CountsOf(b)
	return BatchSummary{BatchID: b.ID, Pipeline: b.Pipeline, Source: b.Source, CreatedAt: b.CreatedAt.UTC(), Counts: c, Done: c.Done(), Links: batchLinks(b.ID)}
}

// upload reads a batch file from r: the body itself (text/csv,
// application/json) or the part "file" of a multipart/form-data body. It
// returns the file's name (the part's file name, else upload.csv or
// upload.json) and its contents.
func (h *Handler) upload(w http.ResponseWriter, r *http.Request) (string, []byte, error) {
	tooLarge := errorf(http.StatusRequestEntityTooLarge, typeTooLarge, "", "the batch file is larger than %d bytes", batch.MaxBytes)
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return "", nil, errorf(http.StatusUnsupportedMediaType, typeInvalid, "", "Content-Type must be text/csv, application/json or multipart/form-data")
	}
	// A multipart body carries a little more than its file.
	body := http.MaxBytesReader(w, r.Body, batch.MaxBytes+64<<10)
	read := func(rd io.Reader) ([]byte, error) {
		data, err := io.ReadAll(io.LimitReader(rd, batch.MaxBytes+1))
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok || len(data) > batch.MaxBytes {
			return nil, tooLarge
		}
		if err != nil {
			return nil, invalid("", "could not read the request body")
		}
		return data, nil
	}
	switch mt {
	case "text/csv", "text/plain":
		data, err := read(body)
		return "upload.csv", data, err
	case "application/json":
		data, err := read(body)
		return "upload.json", data, err
	case "multipart/form-data":
		if params["boundary"] == "" {
			return "", nil, invalid("", "multipart/form-data without a boundary")
		}
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return "", nil, invalid("file", "the form has no part named file")
			}
			if err != nil {
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					return "", nil, tooLarge
				}
				return "", nil, invalid("", "malformed multipart/form-data body")
			}
			if p.FormName() != "file" {
				continue
			}
			name := path.Base(strings.ReplaceAll(p.FileName(), "\\", "/"))
			if name == "." || name == "/" || name == "" {
				name = "upload.csv"
				if ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct == "application/json" {
					name = "upload.json"
				}
			}
			data, err := read(p)
			return name, data, err
		}
	}
	return "", nil, errorf(http.StatusUnsupportedMediaType, typeInvalid, "", "Content-Type must be text/csv, application/json or multipart/form-data, not %s", mt)
}

func (h *Handler) createBatch(w http.ResponseWriter, r *http.Request) error {
	pipe := r.URL.Query().Get("pipeline")
	if pipe == "" {
		pipe = "spark"
	}
	if _, err := h.cfg.Registry.Get(pipe); err != nil {
		return unprocessable("pipeline", "%v", err)
	}
	var opts batch.Options
	if v := r.URL.Query().Get("ignore_unknown_columns"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return invalid("ignore_unknown_columns", "ignore_unknown_columns must be true or false, got %q", v)
		}
		opts.IgnoreUnknownColumns = b
	}
	name, data, err := h.upload(w, r)
	if err != nil {
		return err
	}
	// The file's name decides between CSV and JSON when its contents do
	// not.
	in, err := h.batches.Parse(pipe, name, data, opts)
	if fe, ok := errors.AsType[*batch.FileError](err); ok {
		fe.Name = ""
		if fe.TooLarge {
			return errorf(http.StatusRequestEntityTooLarge, typeTooLarge, "file", "%s", fe.Msg)
		}
		return invalid("file", "%s", fe.Msg)
	}
	if errors.Is(err, pipeline.ErrUnknown) {
		return unprocessable("pipeline", "%v", err)
	}
	if err != nil {
		return err
	}
	b, err := h.batches.Submit(r.Context(), pipe, name, in, 0)
	if err != nil {
		return err
	}
	out := CreateBatchResponse{BatchID: b.ID, Pipeline: b.Pipeline, Source: b.Source, Accepted: []BatchRow{}, Rejected: []RejectedRow{},
		Warnings: in.Warnings, Links: batchLinks(b.ID)}
	for _, it := range b.Items {
		if it.RunID == "" {
			out.Rejected = append(out.Rejected, RejectedRow{Line: it.Line, Topic: it.Topic, Reason: it.Error})
		} else {
			out.Accepted = append(out.Accepted, BatchRow{Line: it.Line, Topic: it.Topic, RunID: it.RunID})
		}
	}
	w.Header().Set("Location", out.Links.Self)
	writeJSON(w, http.StatusAccepted, out)
	return nil
}

func (h *Handler) listBatches(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, 1000000)
	if err != nil {
		return err
	}
	list, err := h.batches.List(r.Context(), limit, offset)
	if err != nil {
		return err
	}
	out := BatchList{Batches: make([]BatchSummary, 0, len(list))}
	for _, b := range list {
		out.Batches = append(out.Batches, summary(b))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// loadBatch reads batch id, a 404 when there is none.
func (h *Handler) loadBatch(ctx context.Context, id string) (*madspark.Batch, error) {
	b, err := h.batches.Get(ctx, id)
	if errors.Is(err, madspark.ErrNotFound) {
		return nil, notFound("no batch %s", id)
	}
	return b, err
}

// batchView is b with its rows: the runs' errors, and the latest progress
// of those running.
func (h *Handler) batchView(ctx context.Context, b *madspark.Batch) (Batch, error) {
	out := Batch{BatchSummary: summary(b), Items: make([]BatchItem, 0, len(b.Items))}
	for _, it := range b.Items {
		bi := BatchItem{Line: it.Line, Topic: it.Topic, Tags: it.Tags, Status: batch.ItemStatus(it), RunID: it.RunID, Error: it.Error}
		switch madspark.RunStatus(bi.Status) {
		case madspark.RunRunning:
			if e, err := h.cfg.Store.LastEvent(ctx, it.RunID); err == nil && e != nil {
				bi.Progress, bi.Stage = min(max(e.Progress, 0), 100), e.Stage
			}
		case madspark.RunFailed, madspark.RunCancelled:
			if rec, err := h.cfg.Store.Run(ctx, it.RunID); err == nil {
				bi.Error = failure.Scrub(failure.Of(rec.Error).Line())
				f := h.finished.get(h, rec)
				bi.Outcome = &f.outcome
			}
		case madspark.RunSucceeded:
			bi.Progress = 100
			if rec, err := h.cfg.Store.Run(ctx, it.RunID); err == nil {
				f := h.finished.get(h, rec)
				bi.Best, bi.Outcome = f.best, &f.outcome
			}
		}
		out.Items = append(out.Items, bi)
	}
	return out, nil
}

func (h *Handler) getBatch(w http.ResponseWriter, r *http.Request) error {
	b, err := h.loadBatch(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	v, err := h.batchView(r.Context(), b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (h *Handler) batchResults(w http.ResponseWriter, r *http.Request) error {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "csv" {
		return unprocessable("format", "format must be json or csv, got %q", format)
	}
	b, err := h.loadBatch(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if format == "csv" {
		return h.batchResultsCSV(r.Context(), w, b)
	}
	res, err := h.batches.Results(r.Context(), b, nil)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="madspark-batch-%s-results.json"`, short8(b.ID)))
	writeJSON(w, http.StatusOK, res)
	return nil
}

// resultsCSVHeader is the header row of a batch's results as CSV.
var resultsCSVHeader = []string{"line", "topic", "tags", "status", "best_idea", "best_score", "verdict", "repairs",
	"llm_calls", "input_tokens", "output_tokens", "cost_usd", "duration_s", "run_id", "error"}

// batchResultsCSV answers b's results as CSV, a row per line of its file
// in order: what each row's run came to (its best idea and score, the
// pipeline's verdict, the repairs), what it cost, and why a row failed.
func (h *Handler) batchResultsCSV(ctx context.Context, w http.ResponseWriter, b *madspark.Batch) error {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	_ = cw.Write(resultsCSVHeader)
	_, err := h.batches.Results(ctx, b, func(it madspark.BatchItem, rec *madspark.Run) error {
		row := map[string]string{"line": strconv.Itoa(it.Line), "topic": it.Topic, "tags": strings.Join(it.Tags, ", "),
			"status": batch.StatusRejected, "error": it.Error}
		if rec != nil {
			row["status"], row["run_id"], row["error"] = string(rec.Status), rec.ID, oneLine(rec.Error)
			if rec.Status.Final() || rec.Status == madspark.RunInterrupted {
				f := h.finished.get(h, rec)
				if f.best != nil {
					row["best_idea"], row["best_score"] = f.best.Text, export.Number(f.best.Score)
				}
				if v := f.outcome.Verdict; v != nil {
					row["verdict"] = v.Check + ": " + map[bool]string{true: "passed", false: "not passed"}[v.Passed]
				}
				row["repairs"] = strconv.Itoa(f.outcome.Repairs)
				if d := durationMS(rec); d != nil {
					row["duration_s"] = strconv.FormatFloat(float64(*d)/1000, 'f', 1, 64)
				}
			}
			u := rec.Usage
			row["llm_calls"], row["input_tokens"], row["output_tokens"] = strconv.Itoa(u.LLMCalls), strconv.Itoa(u.InputTokens), strconv.Itoa(u.OutputTokens)
			if u.Priced() {
				row["cost_usd"] = strconv.FormatFloat(u.CostUSD, 'f', 6, 64)
			}
		} else if it.RunID != "" {
			row["status"], row["run_id"] = "missing", it.RunID
		}
		cells := make([]string, len(resultsCSVHeader))
		for i, k := range resultsCSVHeader {
			cells[i] = export.SafeCell(row[k])
		}
		return cw.Write(cells)
	})
	if err != nil {
		return err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	writeFile(w, "text/csv; charset=utf-8", fmt.Sprintf("madspark-batch-%s-results.csv", short8(b.ID)), buf.Bytes())
	return nil
}

// exportBatch answers a zip of every succeeded row's files, each row in a
// directory of its own, with the results document at the top.
func (h *Handler) exportBatch(w http.ResponseWriter, r *http.Request) error {
	b, err := h.loadBatch(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	// Built in memory first, so that a failure is an ordinary error
	// answer rather than a cut-off file.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	put := func(name string, data []byte) error {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: b.CreatedAt})
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return err
	}
	res, err := h.batches.Files(r.Context(), b, put)
	if err != nil {
		return err
	}
	doc, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := put("results.json", append(doc, '\n')); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	writeFile(w, "application/zip", fmt.Sprintf("madspark-batch-%s.zip", short8(b.ID)), buf.Bytes())
	return nil
}

func (h *Handler) cancelBatch(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := h.loadBatch(r.Context(), id); err != nil {
		return err
	}
	n, err := h.batches.Cancel(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, CancelBatchResponse{BatchID: id, Cancelled: n})
	return nil
}

// batchEvents streams a batch's progress as server-sent events: "event:
// progress" with the batch (as GET /api/batches/{id} answers it) whenever
// it changes, then "event: done" with the batch once every row finished.
func (h *Handler) batchEvents(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	b, err := h.loadBatch(r.Context(), id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(h.base, cancel)()
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	send := func(s string) error {
		_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout))
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		return rc.Flush()
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := send("retry: 2000\n\n"); err != nil {
		return nil
	}
	tick := time.NewTicker(h.cfg.BatchPoll)
	defer tick.Stop()
	beat := time.NewTicker(h.cfg.Heartbeat)
	defer beat.Stop()
	var last []byte
	for seq := 1; ; {
		v, err := h.batchView(ctx, b)
		if err != nil {
			return nil
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		if !bytes.Equal(data, last) {
			typ := "progress"
			if v.Done {
				typ = "done"
			}
			if err := send(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", seq, typ, data)); err != nil {
				return nil
			}
			seq++
			last = data
		}
		if v.Done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
			if err := send(": keep-alive\n\n"); err != nil {
				return nil
			}
			continue
		case <-tick.C:
		}
		nb, err := h.batches.Get(ctx, id)
		if err != nil {
			return nil
		}
		b = nb
	}
}

// short8 is the last 8 characters of an ID, for file names.
func short8(id string) string { return id[max(0, len(id)-8):] }
