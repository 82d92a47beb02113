package api_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/store/postgres/pgtest"
)

func init() {
	// The document's text/csv bodies are files.
	openapi3filter.RegisterBodyDecoder("text/csv", openapi3filter.FileBodyDecoder)
}

// batch uploads a batch file as the body and returns the answer, which
// must be 202.
func (hs *harness) batch(pipe, contentType, file string) api.CreateBatchResponse {
	hs.t.Helper()
	r := hs.do("POST", "/api/batches?pipeline="+pipe, file, "Content-Type", contentType)
	if r.status != http.StatusAccepted {
		hs.t.Fatalf("POST /api/batches: %d %s", r.status, r.body)
	}
	var out api.CreateBatchResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		hs.t.Fatal(err)
	}
	return out
}

// waitBatch polls a batch until every row has finished.
func (hs *harness) waitBatch(id string) api.Batch {
	hs.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var b api.Batch
		r := hs.do("GET", "/api/batches/"+id, nil)
		if r.status != 200 || json.Unmarshal(r.body, &b) != nil {
			hs.t.Fatalf("GET batch: %d %s", r.status, r.body)
		}
		if b.Done {
			return b
		}
	}
	hs.t.Fatal("the batch did not finish")
	return api.Batch{}
}

// TestBatchUnknownColumnRefused: a CSV column that is no parameter (a
// misspelt num_candidates) refuses the file with a 400 naming it, and no
// run nor batch is made; ignore_unknown_columns=true runs it without the
// column. On both stores.
func TestBatchUnknownColumnRefused(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { unknownColumnRefused(t, options{}) })
	t.Run("postgres", func(t *testing.T) { unknownColumnRefused(t, options{postgres: pgtest.URL(t)}) })
}

func unknownColumnRefused(t *testing.T, o options) {
	hs := newHarness(t, o)
	const file = "topic,num_candidate\nurban farming,2\n"
	r := hs.do("POST", "/api/batches?pipeline=spark", file, "Content-Type", "text/csv")
	if e := r.err(t); r.status != 400 || e.Error.Field != "file" || !strings.Contains(e.Error.Message, `unknown column "num_candidate" (column 2)`) || !strings.Contains(e.Error.Message, "ignore_unknown_columns") {
		t.Fatalf("unknown column: %d %s", r.status, r.body)
	}
	var list api.RunList
	hs.do("GET", "/api/runs", nil).json(t, &list)
	var batches api.BatchList
	hs.do("GET", "/api/batches", nil).json(t, &batches)
	if len(list.Runs) != 0 || len(batches.Batches) != 0 {
		t.Fatalf("a refused file made %d runs and %d batches", len(list.Runs), len(batches.Batches))
	}
	if r := hs.do("POST", "/api/batches?pipeline=spark&ignore_unknown_columns=maybe", file, "Content-Type", "text/csv"); r.status != 400 || r.err(t).Error.Field != "ignore_unknown_columns" {
		t.Errorf("ignore_unknown_columns=maybe: %d %s", r.status, r.body)
	}
	out := hs.batch("spark&ignore_unknown_columns=true", "text/csv", file)
	if len(out.Accepted) != 1 || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "num_candidate") {
		t.Errorf("ignored: %+v", out)
	}
}

func TestBatchCSVWithABadRow(t *testing.T) {
	hs := newHarness(t, options{workers: 2})
	out := hs.batch("spark&ignore_unknown_columns=true", "text/csv", "topic,num_candidates,tags,owner\n"+
		"urban farming,2,\"food, cities\",ana\n"+
		"ocean cleanup,many,,bo\n"+
		"remote work,2,,cy\n")
	if len(out.Accepted) != 2 || len(out.Rejected) != 1 || out.Rejected[0].Line != 3 ||
		!strings.Contains(out.Rejected[0].Reason, `num_candidates: want an integer, got "many"`) || out.Source != "upload.csv" {
		t.Fatalf("answer %+v", out)
	}
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "owner") {
		t.Errorf("warnings %q", out.Warnings)
	}
	b := hs.waitBatch(out.BatchID)
	want := batch.Counts{Total: 3, Succeeded: 2, Rejected: 1}
	if b.Counts != want || len(b.Items) != 3 {
		t.Fatalf("batch %+v, want counts %+v", b, want)
	}
	for _, it := range b.Items {
		switch it.Line {
		case 3:
			if it.Status != "rejected" || it.RunID != "" || it.Error == "" {
				t.Errorf("row 3: %+v", it)
			}
		default:
			if it.Status != "succeeded" || it.RunID == "" || it.Progress != 100 {
				t.Errorf("row %d: %+v", it.Line, it)
			}
			// Each row's run is an ordinary run.
			if run := hs.run(it.RunID); run.Status != "succeeded" {
				t.Errorf("run of row %d: %+v", it.Line, run)
			}
		}
	}
	if tags := b.Items[0].Tags; len(tags) != 2 || tags[0] != "food" {
		t.Errorf("tags %q", tags)
	}

	// The results document, as the CLI writes it.
	r := hs.do("GET", "/api/batches/"+out.BatchID+"/results", nil)
	var res batch.Results
	if r.status != 200 || json.Unmarshal(r.body, &res) != nil || res.Succeeded != 2 || res.Failed != 1 || res.Mode != "mock" ||
		res.Items[0].Result == nil || res.Items[1].Status != "rejected" {
		t.Fatalf("results: %d %s", r.status, clip(r.body))
	}
	if cd := r.header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment; filename=\"madspark-batch-") {
		t.Errorf("Content-Disposition %q", cd)
	}

	// The zip of every row's exports.
	r = hs.do("GET", "/api/batches/"+out.BatchID+"/export", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "application/zip" {
		t.Fatalf("export: %d %s", r.status, r.header)
	}
	zr, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body)))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	hasResults := false
	for _, f := range zr.File {
		if f.Name == "results.json" {
			hasResults = true
			continue
		}
		dir, name, _ := strings.Cut(f.Name, "/")
		dirs[dir] = true
		if name == "report.md" {
			rc, _ := f.Open()
			md, _ := io.ReadAll(rc)
			rc.Close()
			if !strings.Contains(strings.ToLower(string(md)), "mock data") {
				t.Errorf("%s: %.100s", f.Name, md)
			}
		}
	}
	if !hasResults || len(dirs) != 2 || !dirs["line0002-urban-farming-"+b.Items[0].RunID[len(b.Items[0].RunID)-12:]] {
		t.Errorf("zip directories %v, results.json %v", dirs, hasResults)
	}

	// The list.
	r = hs.do("GET", "/api/batches", nil)
	var list api.BatchList
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Batches) != 1 || list.Batches[0].BatchID != out.BatchID || list.Batches[0].Counts != want {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
}

func TestBatchUploadForms(t *testing.T) {
	hs := newHarness(t, options{workers: 1})
	// JSON of another pipeline's parameters, as the body.
	out := hs.batch("chaos", "application/json", `[{"prompt": "food waste", "seed": 1}, {"prompt": "noise", "colour": "red"}]`)
	if len(out.Accepted) != 1 || len(out.Rejected) != 1 || out.Rejected[0].Line != 1 || !strings.Contains(out.Rejected[0].Reason, "item 2: chaos parameters: colour: unknown field") {
		t.Fatalf("chaos answer %+v", out)
	}
	// A multipart form, as a browser sends it.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "my ideas.csv")
	io.WriteString(fw, "topic\nurban farming\n")
	mw.Close()
	r := hs.do("POST", "/api/batches?pipeline=spark", body.Bytes(), "Content-Type", mw.FormDataContentType())
	var mp api.CreateBatchResponse
	if r.status != 202 || json.Unmarshal(r.body, &mp) != nil || mp.Source != "my ideas.csv" || len(mp.Accepted) != 1 {
		t.Fatalf("multipart: %d %s", r.status, r.body)
	}
	if r.header.Get("Location") != "/api/batches/"+mp.BatchID {
		t.Errorf("Location %q", r.header.Get("Location"))
	}
	hs.waitBatch(mp.BatchID)
}

func TestBatchBadInput(t *testing.T) {
	hs := newHarness(t, options{})
	big := "topic\n" + strings.Repeat("x\n", batch.MaxRows+1)
	huge := "topic\n" + strings.Repeat("x", batch.MaxBytes)
	var noFile bytes.Buffer
	mw := multipart.NewWriter(&noFile)
	mw.WriteField("other", "x")
	mw.Close()
	for _, tc := range []struct {
		name, query, ct, body string
		status                int
		want, field           string
	}{
		{"empty", "", "text/csv", "", 400, "empty file", "file"},
		{"no header", "", "text/csv", "urban farming,cheap\n", 400, "the first line must be a header", "file"},
		{"only a header", "", "text/csv", "topic\n", 400, "no items", "file"},
		{"one object", "", "application/json", `{"topic": "x"}`, 400, "got one object", "file"},
		{"broken JSON", "", "application/json", `[{"topic": "x"}, {"topic": }]`, 400, "item 2 (line 1): invalid JSON", "file"},
		{"CSV for chaos", "?pipeline=chaos", "text/csv", "topic\nx\n", 400, "CSV is spark's batch format", "file"},
		{"unknown pipeline", "?pipeline=nosuch", "text/csv", "topic\nx\n", 422, `unknown pipeline "nosuch"`, "pipeline"},
		{"too many rows", "", "text/csv", big, 413, "more than 5000 items", "file"},
		{"too large", "", "text/csv", huge, 413, "larger than", ""},
		{"no file part", "", mw.FormDataContentType(), noFile.String(), 400, "no part named file", "file"},
		{"wrong type", "", "application/xml", "<x/>", 415, "Content-Type must be", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hs.do("POST", "/api/batches"+tc.query, tc.body, "Content-Type", tc.ct)
			var e api.ErrorBody
			if r.status != tc.status || json.Unmarshal(r.body, &e) != nil || !strings.Contains(e.Error.Message, tc.want) || e.Error.Field != tc.field {
				t.Fatalf("%d %s; want %d with %q (field %q)", r.status, clip(r.body), tc.status, tc.want, tc.field)
			}
		})
	}
	// Nothing was queued by any of them.
	if r := hs.do("GET", "/api/batches", nil); !strings.Contains(string(r.body), `"batches":[]`) {
		t.Errorf("batches after bad input: %s", r.body)
	}
	for _, p := range []string{"", "/results", "/export", "/events"} {
		if r := hs.do("GET", "/api/batches/nope"+p, nil); r.status != 404 {
			t.Errorf("GET /api/batches/nope%s: %d", p, r.status)
		}
	}
	if r := hs.do("DELETE", "/api/batches/nope", nil); r.status != 404 {
		t.Errorf("DELETE missing: %d", r.status)
	}
	if r := hs.do("GET", "/api/batches?limit=0", nil); r.status != 422 {
		t.Errorf("limit 0: %d", r.status)
	}
}

// TestBatchCancelAndEvents: with no worker, the rows stay queued; the
// progress stream shows them, DELETE cancels them, and the stream ends
// with done.
func TestBatchCancelAndEvents(t *testing.T) {
	hs := newHarness(t, options{config: func(c *api.Config) { c.BatchPoll = 20 * time.Millisecond }})
	out := hs.batch("spark", "text/csv", "topic\none\ntwo\n\"bad\",x,y\n")
	req, _ := http.NewRequest("GET", hs.url+"/api/batches/"+out.BatchID+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	next := func() (string, api.Batch) {
		var typ string
		for sc.Scan() {
			line := sc.Text()
			if t, ok := strings.CutPrefix(line, "event: "); ok {
				typ = t
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				var b api.Batch
				if err := json.Unmarshal([]byte(d), &b); err != nil {
					t.Fatal(err)
				}
				return typ, b
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return "", api.Batch{}
	}
	typ, b := next()
	if typ != "progress" || b.Counts.Pending != 2 || b.Counts.Rejected != 1 || b.Done {
		t.Fatalf("first event %s %+v", typ, b.Counts)
	}
	r := hs.do("DELETE", "/api/batches/"+out.BatchID, nil)
	var c api.CancelBatchResponse
	if r.status != 202 || json.Unmarshal(r.body, &c) != nil || c.Cancelled != 2 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	for typ != "done" {
		typ, b = next()
	}
	if b.Counts.Cancelled != 2 || b.Counts.Failed != 0 || !b.Done || b.Items[0].Status != "cancelled" {
		t.Fatalf("done %+v", b)
	}
	if sc.Scan() && strings.HasPrefix(sc.Text(), "event:") {
		t.Errorf("an event after done: %q", sc.Text())
	}
	// Cancelling again cancels nothing.
	if r := hs.do("DELETE", "/api/batches/"+out.BatchID, nil); r.status != 202 || !strings.Contains(string(r.body), `"cancelled":0`) {
		t.Errorf("cancel again: %d %s", r.status, r.body)
	}
}
