package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
)

func TestPipelines(t *testing.T) {
	hs := newHarness(t, options{})
	r := hs.do("GET", "/api/pipelines", nil)
	var out api.PipelineList
	r.json(t, &out)
	var names []string
	for _, p := range out.Pipelines {
		names = append(names, p.Name)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(p.ParamsSchema, &schema); err != nil || schema.Type != "object" || len(schema.Properties) == 0 {
			t.Errorf("%s: params_schema is not an object schema: %s", p.Name, p.ParamsSchema)
		}
		var defaults map[string]any
		if err := json.Unmarshal(p.Defaults, &defaults); err != nil {
			t.Errorf("%s: defaults: %v", p.Name, err)
		}
		for k := range defaults {
			if _, ok := schema.Properties[k]; !ok {
				t.Errorf("%s: default %q is not a parameter of the schema", p.Name, k)
			}
		}
		if p.Title == "" || p.Description == "" {
			t.Errorf("%s has no title or description", p.Name)
		}
	}
	if strings.Join(names, ",") != "assess,chaos,debate,eval,proposal,spark" {
		t.Errorf("pipelines = %v", names)
	}
	var spark api.PipelineInfo
	for _, p := range out.Pipelines {
		if p.Name == "spark" {
			spark = p
		}
	}
	var d struct {
		NumCandidates int `json:"num_candidates"`
	}
	_ = json.Unmarshal(spark.Defaults, &d)
	if d.NumCandidates != 5 || !strings.Contains(string(spark.ParamsSchema), `"seed_ideas"`) {
		t.Errorf("spark defaults %s, schema %s", spark.Defaults, spark.ParamsSchema)
	}
}

func TestStartRunFollowAndList(t *testing.T) {
	hs := newHarness(t, options{workers: 2})
	r := hs.do("POST", "/api/runs", map[string]any{"pipeline": "spark", "params": map[string]any{"topic": "urban farming", "num_candidates": 4}, "tags": []string{" food ", "city", "food"}})
	if r.status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	var started api.StartRunResponse
	r.json(t, &started)
	if started.Status != madspark.RunQueued || r.header.Get("Location") != "/api/runs/"+started.RunID ||
		started.Links.Events != "/api/runs/"+started.RunID+"/events" || started.Links.WS != "/ws/runs/"+started.RunID {
		t.Errorf("started: %+v, Location %q", started, r.header.Get("Location"))
	}
	run := hs.wait(started.RunID)
	if run.Status != madspark.RunSucceeded || run.Title != "urban farming" || run.Mode != "mock" || !slices.Equal(run.Tags, []string{"food", "city"}) {
		t.Fatalf("run: %+v", run.RunSummary)
	}
	var res struct {
		Candidates []struct {
			ImprovedScore float64 `json:"improved_score"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(run.Result, &res); err != nil || len(res.Candidates) != 3 || res.Candidates[0].ImprovedScore == 0 {
		t.Errorf("result: %s", run.Result)
	}
	if run.Progress == nil || run.Progress.Progress != 100 || run.FinishedAt == nil || run.Usage.LLMCalls != 6 {
		t.Errorf("run progress %+v, finished %v, usage %+v", run.Progress, run.FinishedAt, run.Usage)
	}
	// More runs, to page and filter through.
	chaosID := hs.startRun("chaos", map[string]any{"prompt": "quiet streets", "iterations": 1})
	hs.wait(chaosID)
	for i := range 3 {
		hs.wait(hs.startRun("spark", map[string]any{"topic": fmt.Sprintf("ocean cleanup %d", i), "num_candidates": 2, "num_top_candidates": 2}))
	}
	list := func(q string) api.RunList {
		t.Helper()
		r := hs.do("GET", "/api/runs"+q, nil)
		if r.status != 200 {
			t.Fatalf("GET /api/runs%s: %d %s", q, r.status, r.body)
		}
		var l api.RunList
		r.json(t, &l)
		return l
	}
	all := list("")
	if len(all.Runs) != 5 || all.NextOffset != nil || all.Limit != 20 || all.Runs[4].RunID != started.RunID {
		t.Errorf("all runs: %d, next %v", len(all.Runs), all.NextOffset)
	}
	page := list("?limit=2&offset=1")
	if len(page.Runs) != 2 || page.NextOffset == nil || *page.NextOffset != 3 || page.Runs[0].RunID != all.Runs[1].RunID {
		t.Errorf("page: %+v", page)
	}
	last := list("?limit=2&offset=4")
	if len(last.Runs) != 1 || last.NextOffset != nil {
		t.Errorf("last page: %+v", last)
	}
	if l := list("?pipeline=chaos"); len(l.Runs) != 1 || l.Runs[0].RunID != chaosID || l.Runs[0].Title != "quiet streets" {
		t.Errorf("chaos runs: %+v", l.Runs)
	}
	if l := list("?q=OCEAN&status=succeeded"); len(l.Runs) != 3 {
		t.Errorf("q=OCEAN: %d runs", len(l.Runs))
	}
	if l := list("?status=failed"); len(l.Runs) != 0 || l.Runs == nil {
		t.Errorf("failed runs: %+v", l.Runs)
	}
}

func TestRunsBadInput(t *testing.T) {
	hs := newHarness(t, options{config: func(c *api.Config) { c.MaxBodyBytes = 2048 }})
	for _, tc := range []struct {
		name   string
		body   string
		status int
		typ    string
		field  string
	}{
		{"malformed JSON", `{"pipeline": "spark",`, 400, "invalid_request", ""},
		{"empty body", ``, 400, "invalid_request", ""},
		{"not an object", `[1]`, 400, "invalid_request", ""},
		{"trailing data", `{"pipeline":"spark","params":{"topic":"x"}} {}`, 400, "invalid_request", ""},
		{"unknown field", `{"pipeline":"spark","parms":{}}`, 400, "invalid_request", "parms"},
		{"wrong type", `{"pipeline":3}`, 400, "invalid_request", "pipeline"},
		{"missing pipeline", `{"params":{"topic":"x"}}`, 422, "validation", "pipeline"},
		{"unknown pipeline", `{"pipeline":"nonesuch"}`, 422, "validation", "pipeline"},
		{"params not an object", `{"pipeline":"spark","params":"x"}`, 400, "invalid_request", "params"},
		{"unknown parameter", `{"pipeline":"spark","params":{"topic":"x","bogus":1}}`, 400, "invalid_request", "params.bogus"},
		{"legacy name", `{"pipeline":"spark","params":{"theme":"x"}}`, 400, "invalid_request", "params.theme"},
		{"parameter of the wrong type", `{"pipeline":"spark","params":{"topic":"x","num_candidates":"five"}}`, 400, "invalid_request", "params.num_candidates"},
		{"nested wrong type", `{"pipeline":"spark","params":{"topic":"x","temperatures":{"generate":"hot"}}}`, 400, "invalid_request", "params.temperatures.generate"},
		{"out of range", `{"pipeline":"spark","params":{"topic":"x","num_candidates":30}}`, 422, "validation", "params.num_candidates"},
		{"inconsistent", `{"pipeline":"spark","params":{"topic":"x","num_candidates":2,"num_top_candidates":3}}`, 422, "validation", "params.num_top_candidates"},
		{"missing required", `{"pipeline":"spark","params":{"context":"x"}}`, 422, "validation", "params.topic"},
		{"empty topic", `{"pipeline":"spark","params":{"topic":"   "}}`, 422, "validation", "params.topic"},
		{"chaos out of range", `{"pipeline":"chaos","params":{"prompt":"x","iterations":11}}`, 422, "validation", "params.iterations"},
		{"empty tag", `{"pipeline":"spark","params":{"topic":"x"},"tags":["a",""]}`, 422, "validation", "tags[1]"},
		{"too many tags", `{"pipeline":"spark","params":{"topic":"x"},"tags":[` + strings.Repeat(`"t",`, 20) + `"u"]}`, 422, "validation", "tags"},
		{"too large", `{"pipeline":"spark","params":{"topic":"` + strings.Repeat("x", 3000) + `"}}`, 413, "too_large", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hs.do("POST", "/api/runs", tc.body)
			e := r.err(t)
			if r.status != tc.status || e.Error.Type != tc.typ || e.Error.Field != tc.field {
				t.Errorf("%d %s %q: %s; want %d %s %q", r.status, e.Error.Type, e.Error.Field, e.Error.Message, tc.status, tc.typ, tc.field)
			}
		})
	}
	runs, _ := hs.db.Runs(t.Context(), madspark.RunFilter{})
	if len(runs) != 0 {
		t.Errorf("bad requests recorded %d runs", len(runs))
	}
	for q, want := range map[string]struct {
		status int
		field  string
	}{
		"?status=done":                   {422, "status"},
		"?pipeline=nonesuch":             {422, "pipeline"},
		"?limit=0":                       {422, "limit"},
		"?limit=101":                     {422, "limit"},
		"?limit=ten":                     {400, "limit"},
		"?offset=-1":                     {422, "offset"},
		"?q=" + strings.Repeat("q", 201): {422, "q"},
	} {
		r := hs.do("GET", "/api/runs"+q, nil)
		if e := r.err(t); r.status != want.status || e.Error.Field != want.field {
			t.Errorf("GET /api/runs%s: %d %q, want %d %q", q, r.status, e.Error.Field, want.status, want.field)
		}
	}
	for _, path := range []string{"/api/runs/nope", "/api/runs/nope/export?format=json", "/api/runs/nope/events", "/ws/runs/nope"} {
		if r := hs.do("GET", path, nil); r.status != 404 || r.err(t).Error.Type != "not_found" {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	if r := hs.do("DELETE", "/api/runs/nope", nil); r.status != 404 {
		t.Errorf("DELETE unknown run: %d", r.status)
	}
	if r := hs.do("PUT", "/api/runs", "{}"); r.status != 405 || r.header.Get("Allow") == "" || r.err(t).Error.Type != "invalid_request" {
		t.Errorf("PUT /api/runs: %d %v %s", r.status, r.header, r.body)
	}
}

// TestChaosSeed: a chaos run started without a seed gets a random one,
// fixed in its parameters; one given is kept.
func TestChaosSeed(t *testing.T) {
	hs := newHarness(t, options{})
	seed := func(params map[string]any) float64 {
		var p struct {
			Seed float64 `json:"seed"`
		}
		if err := json.Unmarshal(hs.run(hs.startRun("chaos", params)).Params, &p); err != nil {
			t.Fatal(err)
		}
		return p.Seed
	}
	a, b := seed(map[string]any{"prompt": "x"}), seed(map[string]any{"prompt": "x"})
	if a == b {
		t.Errorf("two runs without a seed got the same seed %v", a)
	}
	if got := seed(map[string]any{"prompt": "x", "seed": 42}); got != 42 {
		t.Errorf("seed 42 became %v", got)
	}
}

func TestCancel(t *testing.T) {
	// Without a worker, runs stay queued.
	hs := newHarness(t, options{})
	id := hs.startRun("spark", map[string]any{"topic": "x"})
	r := hs.do("DELETE", "/api/runs/"+id, nil)
	var c api.CancelResponse
	r.json(t, &c)
	if r.status != 202 || c.Status != madspark.RunCancelled || c.RunID != id {
		t.Fatalf("cancel a queued run: %d %s", r.status, r.body)
	}
	if run := hs.run(id); run.Status != madspark.RunCancelled || run.Error == "" || run.Failure == nil || run.Failure.Kind != failure.Cancelled {
		t.Errorf("cancelled run: %+v, failure %+v", run.RunSummary, run.Failure)
	}
	if r := hs.do("DELETE", "/api/runs/"+id, nil); r.status != 409 || r.err(t).Error.Type != "conflict" {
		t.Errorf("cancel twice: %d %s", r.status, r.body)
	}

	// A running run is stopped by its worker, which the answer waits for.
	hs = newHarness(t, options{workers: 1, latency: 300 * time.Millisecond})
	id = hs.startRun("spark", map[string]any{"topic": "x"})
	for deadline := time.Now().Add(10 * time.Second); hs.run(id).Status != madspark.RunRunning; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run never ran")
		}
	}
	r = hs.do("DELETE", "/api/runs/"+id, nil)
	r.json(t, &c)
	if r.status != 202 || c.Status != madspark.RunCancelled {
		t.Fatalf("cancel a running run: %d %s", r.status, r.body)
	}
	if run := hs.run(id); run.Status != madspark.RunCancelled {
		t.Errorf("run after cancel: %s", run.Status)
	}
	done := hs.succeeded("spark", map[string]any{"topic": "y", "num_candidates": 1, "num_top_candidates": 1})
	if r := hs.do("DELETE", "/api/runs/"+done.RunID, nil); r.status != 409 {
		t.Errorf("cancel a finished run: %d %s", r.status, r.body)
	}
}

// TestCancelKeepsFinishedIterations: a chaos run cancelled after its first
// iteration keeps it, shown with the run and in its exports.
func TestCancelKeepsFinishedIterations(t *testing.T) {
	hs := newHarness(t, options{workers: 1, latency: 100 * time.Millisecond})
	id := hs.startRun("chaos", map[string]any{"prompt": "quiet streets", "iterations": 3})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		steps, err := hs.db.Steps(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(steps, func(s *madspark.Step) bool { return s.Key == "i1/shared_state" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first iteration did not finish")
		}
	}
	if r := hs.do("DELETE", "/api/runs/"+id, nil); r.status != 202 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	run := hs.run(id)
	var res struct {
		Iterations []struct{ Number int } `json:"iterations"`
	}
	if run.Status != madspark.RunCancelled || json.Unmarshal(run.Result, &res) != nil || len(res.Iterations) < 1 || len(res.Iterations) > 2 {
		t.Fatalf("cancelled chaos run: %s %s", run.Status, run.Result)
	}
	if !run.Outcome.Partial || run.Outcome.Verdict != nil || run.DurationMS == nil {
		t.Errorf("the cancelled run's outcome %+v, duration %v: want partial", run.Outcome, run.DurationMS)
	}
	r := hs.do("GET", "/api/runs/"+id+"/export?format=markdown", nil)
	if r.status != 200 || !strings.Contains(string(r.body), "Iteration 1") || !strings.Contains(string(r.body), "Cancelled: the ") {
		t.Fatalf("the cancelled run's Markdown: %d %s", r.status, clip(r.body))
	}
	steps, _ := hs.db.Steps(t.Context(), id)
	if !slices.ContainsFunc(steps, func(s *madspark.Step) bool { return s.Status == madspark.StepCancelled }) {
		t.Errorf("no step was recorded cancelled: %d steps", len(steps))
	}
}

// TestRunFailureKind: a run the provider failed says what kind of failure
// it was.
func TestRunFailureKind(t *testing.T) {
	var f *flaky
	hs := newHarness(t, options{workers: 1, client: func(c llm.Client) llm.Client { f = &flaky{next: c}; return f }})
	f.down.Store(true)
	run := hs.wait(hs.startRun("spark", map[string]any{"topic": "x"}))
	if run.Status != madspark.RunFailed || run.Failure == nil || run.Failure.Kind != failure.ProviderError || run.Failure.Provider != "openai" || run.Failure.Detail != run.Error {
		t.Fatalf("failed run: %s %q, failure %+v", run.Status, run.Error, run.Failure)
	}
}
