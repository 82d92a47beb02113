package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/inspect"
)

// TestRunSteps: the steps of a run started over the API, as the document
// says (every answer is checked against it), while it runs and after; an
// unknown run is a 404 with a JSON error.
func TestRunSteps(t *testing.T) {
	hs := newHarness(t, options{workers: 1, latency: 30 * time.Millisecond})
	id := hs.startRun("spark", map[string]any{"topic": "urban farming", "num_candidates": 3, "num_top_candidates": 2})
	// While it runs, the finished steps are there already.
	var live inspect.View
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r := hs.do("GET", "/api/runs/"+id+"/steps", nil)
		if r.status != 200 {
			t.Fatalf("steps: %d %s", r.status, r.body)
		}
		if err := json.Unmarshal(r.body, &live); err != nil {
			t.Fatal(err)
		}
		if len(live.Steps) > 0 || live.Status.Final() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(live.Steps) == 0 {
		t.Fatal("no step seen while the run went on")
	}
	hs.wait(id)
	r := hs.do("GET", "/api/runs/"+id+"/steps", nil)
	var v inspect.View
	if r.status != 200 || json.Unmarshal(r.body, &v) != nil {
		t.Fatalf("steps: %d %s", r.status, r.body)
	}
	if v.RunID != id || v.Status != "succeeded" || len(v.Steps) < 4 || v.Steps[0].Key != "generate" {
		t.Fatalf("view = %+v", v)
	}
	for _, s := range v.Steps {
		if s.Agent == "" || s.Model == "" || len(s.Prompt) < 2 || s.Prompt[0].Role != "system" || s.Response == "" ||
			s.Attempts != 1 || s.LatencyMS < 30 || s.InputTokens == 0 || len(s.Calls) == 0 || !s.Priced {
			t.Errorf("step %+v", s)
		}
		// Each call has what was sent, as sent.
		for _, c := range s.Calls {
			if !c.Sent || len(c.Messages) != len(c.Prompt) || c.Messages[0].Role != "system" || c.Messages[0].Content != c.Prompt[0].Content {
				t.Errorf("step %s: call %+v", s.Key, c)
			}
		}
	}
	var raw struct {
		Steps []map[string]json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key", "agent", "model", "status", "attempts", "cached", "input_tokens", "output_tokens",
		"latency_ms", "cost_usd", "repairs", "prompt", "response", "started_at"} {
		if _, ok := raw.Steps[0][k]; !ok {
			t.Errorf("a step lacks %q", k)
		}
	}
	missing := hs.do("GET", "/api/runs/nope/steps", nil)
	if missing.status != 404 || !strings.Contains(string(missing.body), `"no run nope"`) {
		t.Errorf("unknown run: %d %s", missing.status, missing.body)
	}
}
