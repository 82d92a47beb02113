package api_test

import (
	"strings"
	"testing"

	"github.com/madspark/madspark"
)

// TestPromptLimitOnRuns: a run's text — a debate's query, instructions and
// history together, a spark's topic and context — over the registry's
// limit is a 400 naming the limit, and no run is recorded (the refusal
// comes before any write: mcpserver's TestPromptLimitOnCalls checks both
// stores).
func TestPromptLimitOnRuns(t *testing.T) {
	hs := newHarness(t, options{})
	hs.reg.LimitPrompt(4000)
	turn := func(role string) map[string]string {
		return map[string]string{"role": role, "content": strings.Repeat("x", 1500)}
	}
	for _, tc := range []struct {
		name, path string
		body       map[string]any
	}{
		{"debate history", "/api/runs", map[string]any{"pipeline": "debate", "params": map[string]any{"query": "and now?",
			"history": []any{turn("user"), turn("assistant"), turn("user")}}}},
		{"debate instructions", "/api/runs", map[string]any{"pipeline": "debate", "params": map[string]any{"query": strings.Repeat("q", 2500),
			"instructions": strings.Repeat("i", 2500)}}},
		{"generate ideas", "/api/generate-ideas", map[string]any{"topic": "t", "context": strings.Repeat("c", 4100)}},
	} {
		r := hs.do("POST", tc.path, tc.body)
		if r.status != 400 {
			t.Errorf("%s: %d %s, want 400", tc.name, r.status, r.body)
			continue
		}
		if e := r.err(t); !strings.Contains(e.Error.Message, "limit is 4000 bytes") {
			t.Errorf("%s: %q does not name the limit", tc.name, e.Error.Message)
		}
	}
	runs, err := hs.db.Runs(t.Context(), madspark.RunFilter{})
	if err != nil || len(runs) != 0 {
		t.Errorf("runs recorded for refused prompts: %d, %v", len(runs), err)
	}
	// Within it, the same run is accepted.
	r := hs.do("POST", "/api/runs", map[string]any{"pipeline": "debate", "params": map[string]any{"query": "and now?", "history": []any{turn("user"), turn("assistant")}}})
	if r.status != 202 {
		t.Errorf("a run within the limit: %d %s", r.status, r.body)
	}
}
