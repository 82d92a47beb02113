package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/bookmark"
	"github.com/madspark/madspark/export"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
)

// PipelineInfo describes a registered pipeline, for forms.
type PipelineInfo struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// ParamsSchema is the JSON Schema of the pipeline's parameters;
	// Defaults are the values of those a request may leave out, as the
	// schema's defaults give them (required parameters have none).
	ParamsSchema json.RawMessage `json:"params_schema"`
	Defaults     json.RawMessage `json:"defaults"`
}

// PipelineList is the answer of GET /api/pipelines.
type PipelineList struct {
	Pipelines []PipelineInfo `json:"pipelines"`
	// Broken are the pipeline files the server was given that it could
	// not serve, each with its problems.
	Broken []BrokenPipeline `json:"broken"`
}

// BrokenPipeline is a pipeline file that is not served: its name in the
// pipelines directory, its error in one line, and each of its problems
// ("name.yaml:12: …").
type BrokenPipeline struct {
	File     string   `json:"file"`
	Error    string   `json:"error"`
	Problems []string `json:"problems"`
}

func (h *Handler) listPipelines(w http.ResponseWriter, _ *http.Request) error {
	out := PipelineList{Pipelines: []PipelineInfo{}, Broken: append([]BrokenPipeline{}, h.cfg.BrokenPipelines...)}
	for _, d := range h.cfg.Registry.List() {
		schema, err := h.cfg.Registry.ParamsSchema(d.Name)
		if err != nil {
			return err
		}
		defaults, err := h.cfg.Registry.Defaults(d.Name)
		if err != nil {
			return err
		}
		out.Pipelines = append(out.Pipelines, PipelineInfo{Name: d.Name, Title: d.Title, Description: d.Description, ParamsSchema: schema, Defaults: defaults})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// StartRunRequest is the body of POST /api/runs.
type StartRunRequest struct {
	Pipeline string `json:"pipeline"`
	// Params are the pipeline's parameters (see its params_schema); those
	// left out take their defaults.
	Params json.RawMessage `json:"params,omitempty"`
	// Tags label the run; its bookmarks take them when they are given
	// none.
	Tags []string `json:"tags,omitempty" input:"line"`
}

// Links are where to follow a run.
type Links struct {
	Self   string `json:"self"`
	Events string `json:"events"`
	WS     string `json:"ws"`
}

// StartRunResponse is the answer of POST /api/runs and of a remix.
type StartRunResponse struct {
	RunID  string             `json:"run_id"`
	Status madspark.RunStatus `json:"status" jsonschema:"enum=queued,enum=running,enum=succeeded,enum=failed,enum=cancelled"`
	Links  Links              `json:"links"`
}

func runLinks(id string) Links {
	return Links{Self: "/api/runs/" + id, Events: "/api/runs/" + id + "/events", WS: "/ws/runs/" + id}
}

// checkTags validates tags (field names them; see bookmark.Tags) and
// returns them trimmed, without repeats.
func checkTags(field string, tags []string) ([]string, error) {
	out, err := bookmark.Tags(tags)
	if te, ok := errors.AsType[*bookmark.TagError](err); ok {
		if te.Index >= 0 {
			field = fmt.Sprintf("%s[%d]", field, te.Index)
		}
		return nil, unprocessable(field, "%s: %v", field, te.Err)
	}
	return out, err
}

func (h *Handler) startRun(w http.ResponseWriter, r *http.Request) error {
	var req StartRunRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	rec, err := h.enqueue(r.Context(), req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/runs/"+rec.ID)
	writeJSON(w, http.StatusAccepted, StartRunResponse{RunID: rec.ID, Status: rec.Status, Links: runLinks(rec.ID)})
	return nil
}

// enqueue checks req and gives it to the queue. Parameter errors name
// their field under params.
func (h *Handler) enqueue(ctx context.Context, req StartRunRequest) (*madspark.Run, error) {
	if req.Pipeline == "" {
		return nil, unprocessable("pipeline", "pipeline is required")
	}
	if _, err := h.cfg.Registry.Get(req.Pipeline); err != nil {
		return nil, unprocessable("pipeline", "%v", err)
	}
	tags, err := checkTags("tags", req.Tags)
	if err != nil {
		return nil, err
	}
	rec, err := h.cfg.Queue.Enqueue(ctx, jobs.Request{Pipeline: req.Pipeline, Params: req.Params, Tags: tags})
	if err != nil {
		return nil, paramsError("params", err)
	}
	return rec, nil
}

// paramsError turns a *pipeline.ParamsError into a 400 (malformed) or 422
// naming the field under prefix; other errors pass.
func paramsError(prefix string, err error) error {
	pe, ok := errors.AsType[*pipeline.ParamsError](err)
	if !ok {
		return err
	}
	field, msg := prefix, strings.TrimPrefix(pe.Error(), pe.Pipeline+" parameters: ")
	switch {
	case prefix == "":
		field = pe.Field
	case pe.Field != "":
		field = prefix + "." + pe.Field
	}
	if prefix != "" {
		msg = prefix + ": " + msg
	}
	if pe.Malformed {
		return invalid(field, "%s", msg)
	}
	return unprocessable(field, "%s", msg)
}

// RunSummary is a run as listed.
type RunSummary struct {
	RunID    string             `json:"run_id"`
	Pipeline string             `json:"pipeline"`
	Status   madspark.RunStatus `json:"status" jsonschema:"enum=queued,enum=running,enum=succeeded,enum=failed,enum=cancelled,enum=interrupted"`
	// Resumable says that POST /api/runs/{id}/resume finishes the run:
	// it failed, was cancelled, or was interrupted (the process working it
	// is gone).
	Resumable bool   `json:"resumable"`
	Mode      string `json:"mode"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	// Title is what the run is about: its topic, prompt, query or idea.
	Title      string     `json:"title"`
	Tags       []string   `json:"tags"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at" jsonschema:"nullable"`
	// DurationMS is how long the run took, from when it was made (its
	// time in the queue included) to when it ended; null while it goes on.
	DurationMS *int64    `json:"duration_ms" jsonschema:"nullable"`
	Usage      llm.Usage `json:"usage"`
	// Outcome is how the run came out beyond its status: the pipeline's
	// verdict, a partial result, the replies repaired.
	Outcome Outcome `json:"outcome"`
	// Parent is the eval, batch or conversation the run was made for;
	// absent for a run started on its own. Its tag is not among Tags.
	Parent *Parent `json:"parent,omitempty"`
}

// Progress is where a run stands: its latest event.
type Progress struct {
	Stage    string `json:"stage"`
	Progress int    `json:"progress" jsonschema:"minimum=0,maximum=100"`
	Message  string `json:"message"`
}

// Run is a run in full.
type Run struct {
	RunSummary
	Params json.RawMessage `json:"params"`
	// Result is the pipeline's result, once the run succeeded; for a
	// cancelled run, what it had finished, when its pipeline keeps that
	// (chaos's finished iterations).
	Result json.RawMessage `json:"result,omitempty"`
	// Error says why a run failed or was cancelled.
	Error string `json:"error,omitempty"`
	// Failure is what kind of failure Error is, for a message in plain
	// words.
	Failure  *failure.Failure `json:"failure,omitempty"`
	Progress *Progress        `json:"progress" jsonschema:"nullable"`
}

// RunList is a page of runs, newest first.
type RunList struct {
	Runs       []RunSummary `json:"runs"`
	Limit      int          `json:"limit"`
	Offset     int          `json:"offset"`
	NextOffset *int         `json:"next_offset" jsonschema:"nullable"`
}

// summary describes rec.
func (h *Handler) summary(rec *madspark.Run) RunSummary {
	s := RunSummary{RunID: rec.ID, Pipeline: rec.Pipeline, Status: rec.Status, Mode: rec.Mode, Provider: rec.Provider,
		Model: rec.Model, Title: h.title(rec), Tags: []string{}, CreatedAt: rec.CreatedAt.UTC(), Usage: rec.Usage,
		Resumable: rec.Status.Resumable(), DurationMS: durationMS(rec), Outcome: h.outcome(rec), Parent: parentOf(rec)}
	for _, t := range rec.Tags {
		if !madspark.IsParentTag(t) {
			s.Tags = append(s.Tags, t)
		}
	}
	if !rec.FinishedAt.IsZero() {
		t := rec.FinishedAt.UTC()
		s.FinishedAt = &t
	}
	return s
}

// title is what rec is about, by its pipeline's Topic.
func (h *Handler) title(rec *madspark.Run) string {
	def, err := h.cfg.Registry.Get(rec.Pipeline)
	if err != nil || def.Topic == nil {
		return ""
	}
	p := def.NewParams()
	if json.Unmarshal(rec.Params, p) != nil {
		return ""
	}
	return oneLine(def.Topic(p))
}

// sweepEvery is how often reading runs looks for runs whose process is
// gone, at most.
const sweepEvery = 2 * time.Second

// sweep records as interrupted the runs whose process is gone (their lease
// expired), at most every sweepEvery, so that reads show them as they are.
func (h *Handler) sweep(ctx context.Context) {
	now := time.Now().UnixNano()
	last := h.swept.Load()
	if now-last < int64(sweepEvery) || !h.swept.CompareAndSwap(last, now) {
		return
	}
	if _, err := h.cfg.Engine.Interrupt(ctx); err != nil {
		h.log.Warn("could not look for interrupted runs", "err", err)
	}
}

func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := madspark.RunFilter{Pipeline: q.Get("pipeline"), Status: madspark.RunStatus(q.Get("status")), Query: strings.TrimSpace(q.Get("q"))}
	if f.Pipeline != "" {
		if _, err := h.cfg.Registry.Get(f.Pipeline); err != nil {
			return unprocessable("pipeline", "%v", err)
		}
	}
	if f.Status != "" && !slices.Contains(madspark.RunStatuses(), f.Status) {
		return unprocessable("status", "status must be one of queued, running, succeeded, failed, cancelled, interrupted, got %q", f.Status)
	}
	if utf8.RuneCountInString(f.Query) > 200 {
		return unprocessable("q", "q is at most 200 characters")
	}
	limit, err := queryInt(r, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, 1_000_000)
	if err != nil {
		return err
	}
	f.Limit, f.Offset = limit+1, offset
	h.sweep(r.Context())
	runs, err := h.cfg.Store.Runs(r.Context(), f)
	if err != nil {
		return err
	}
	out := RunList{Runs: []RunSummary{}, Limit: limit, Offset: offset}
	if len(runs) > limit {
		runs = runs[:limit]
		next := offset + limit
		out.NextOffset = &next
	}
	for _, rec := range runs {
		out.Runs = append(out.Runs, h.summary(rec))
	}
	h.titleParents(r.Context(), out.Runs)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// loadRun returns run id, or a 404.
func (h *Handler) loadRun(ctx context.Context, id string) (*madspark.Run, error) {
	rec, err := h.cfg.Store.Run(ctx, id)
	if errors.Is(err, madspark.ErrNotFound) {
		return nil, notFound("no run %s", id)
	}
	return rec, err
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) error {
	h.sweep(r.Context())
	rec, err := h.loadRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := Run{RunSummary: h.summary(rec), Params: rec.Params, Error: h.errorText(r, rec.Error), Failure: h.failureOf(r, rec.Error)}
	h.titleParents(r.Context(), []RunSummary{out.RunSummary})
	if len(out.Params) == 0 {
		out.Params = json.RawMessage("{}")
	}
	if rec.Status == madspark.RunSucceeded || rec.Status == madspark.RunCancelled || rec.Status == madspark.RunInterrupted {
		out.Result = rec.Result
	}
	last, err := h.cfg.Store.LastEvent(r.Context(), rec.ID)
	if err != nil {
		return err
	}
	if last != nil {
		msg := last.Message
		if last.Type == madspark.EventError {
			msg = h.errorText(r, msg)
		}
		out.Progress = &Progress{Stage: last.Stage, Progress: min(max(last.Progress, 0), 100), Message: msg}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// runSteps answers GET /api/runs/{id}/steps: the run's steps view.
func (h *Handler) runSteps(w http.ResponseWriter, r *http.Request) error {
	v, err := inspect.Load(r.Context(), h.cfg.Store, r.PathValue("id"))
	if errors.Is(err, madspark.ErrNotFound) {
		return notFound("no run %s", r.PathValue("id"))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// CancelResponse is the answer of DELETE /api/runs/{id}.
type CancelResponse struct {
	RunID string `json:"run_id"`
	// Status is cancelled, or running when the run's worker had not
	// stopped it within a few seconds (it will).
	Status madspark.RunStatus `json:"status" jsonschema:"enum=cancelled,enum=running"`
}

// cancelWait bounds how long DELETE waits for a running run's worker to
// stop it.
const cancelWait = 10 * time.Second

// resumeRun answers POST /api/runs/{id}/resume: the run goes back to the
// queue, unless another process still works it.
func (h *Handler) resumeRun(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := h.cfg.Engine.Interrupt(r.Context()); err != nil {
		return err
	}
	rec, err := h.cfg.Queue.Resume(r.Context(), id)
	switch {
	case errors.Is(err, madspark.ErrNotFound):
		return notFound("no run %s", id)
	case errors.Is(err, jobs.ErrNotResumable) && rec != nil && rec.Status == madspark.RunRunning:
		if l, ok := h.runLease(r.Context(), id); ok {
			return conflict("%s; resume it once that process has stopped", (&madspark.RunHeldError{Lease: l}).Error())
		}
		return conflict("run %s is running", id)
	case errors.Is(err, jobs.ErrNotResumable) && rec != nil:
		return conflict("run %s cannot be resumed: it is %s", id, rec.Status)
	case errors.Is(err, pipeline.ErrUnknown):
		return conflict("run %s cannot be resumed here: %v", id, err)
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusAccepted, h.summary(rec))
	return nil
}

// runLease returns the lease of running run id.
func (h *Handler) runLease(ctx context.Context, id string) (madspark.RunLease, bool) {
	ls, err := h.cfg.Store.RunLeases(ctx)
	if err != nil {
		return madspark.RunLease{}, false
	}
	for _, l := range ls {
		if l.RunID == id {
			return l, true
		}
	}
	return madspark.RunLease{}, false
}

func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	status, err := h.cfg.Queue.Cancel(r.Context(), id)
	switch {
	case errors.Is(err, madspark.ErrNotFound):
		return notFound("no run %s", id)
	case errors.Is(err, jobs.ErrFinished):
		return conflict("run %s already finished (%s)", id, status)
	case errors.Is(err, jobs.ErrNotQueued):
		return conflict("run %s is not worked by the queue: it runs in a command, which stops it", id)
	case err != nil:
		return err
	}
	if status == madspark.RunRunning {
		// Its worker stops it within a second or so: wait for that, so
		// that the answer says cancelled.
		ctx, cancel := context.WithTimeout(r.Context(), cancelWait)
		defer cancel()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for status == madspark.RunRunning {
			select {
			case <-ctx.Done():
				writeJSON(w, http.StatusAccepted, CancelResponse{RunID: id, Status: status})
				return nil
			case <-tick.C:
			}
			if rec, err := h.cfg.Store.Run(ctx, id); err == nil && rec.Status.Final() {
				status = rec.Status
			}
		}
		if status != madspark.RunCancelled {
			return conflict("run %s finished (%s) before it could be cancelled", id, status)
		}
	}
	writeJSON(w, http.StatusAccepted, CancelResponse{RunID: id, Status: madspark.RunCancelled})
	return nil
}

func (h *Handler) exportRun(w http.ResponseWriter, r *http.Request) error {
	format := export.Canonical(r.URL.Query().Get("format"))
	if format == "" {
		format = "json"
	}
	if !slices.Contains(export.Formats, format) {
		return unprocessable("format", "format must be one of %s, got %q", strings.Join(export.Formats, ", "), format)
	}
	rec, err := h.loadRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	def, err := h.cfg.Registry.Get(rec.Pipeline)
	if err != nil {
		return conflict("%v", err)
	}
	f, err := export.Render(def, rec, format, export.Options{Font: h.cfg.PDFFont})
	switch {
	case errors.Is(err, export.ErrNoResult):
		return conflict("%v", err)
	case errors.Is(err, export.ErrUnsupported):
		return unprocessable("format", "%v", err)
	case err != nil:
		return err
	}
	writeFile(w, f.ContentType, f.Name, f.Data)
	return nil
}

// writeFile answers data as a file to download, named name, of type
// contentType; nothing of it is cached.
func writeFile(w http.ResponseWriter, contentType, name string, data []byte) {
	hd := w.Header()
	hd.Set("Content-Type", contentType)
	hd.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, name))
	hd.Set("Content-Length", fmt.Sprint(len(data)))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}
