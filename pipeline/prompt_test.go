package pipeline_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/pipeline"
)

// TestDecodeBoundsThePrompt: the limit on a run's text counts the query,
// the instructions and the whole history together, on every pipeline;
// beyond it the parameters are refused (malformed: a 400, a tool error)
// naming the limit, before Validate compiles anything.
func TestDecodeBoundsThePrompt(t *testing.T) {
	reg := registry(t, nil)
	reg.LimitPrompt(1000)
	turn := func(role string, n int) map[string]string {
		return map[string]string{"role": role, "content": strings.Repeat("h", n)}
	}
	for _, tc := range []struct {
		name, pipeline string
		params         map[string]any
		size           int // the text, in bytes; over 1000 is refused
	}{
		{"query alone", "debate", map[string]any{"query": strings.Repeat("q", 900)}, 900 + len("auto")},
		{"history", "debate", map[string]any{"query": "q", "history": []any{turn("user", 300), turn("assistant", 300), turn("user", 300)}}, 1 + 900 + 4 + 9 + 4 + len("auto")},
		{"instructions", "debate", map[string]any{"query": strings.Repeat("q", 500), "instructions": strings.Repeat("i", 500)}, 1000 + len("auto")},
		{"spark context", "spark", map[string]any{"topic": "t", "context": strings.Repeat("c", 1200)}, 1201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(tc.params)
			_, err := reg.Decode(tc.pipeline, raw)
			if tc.size <= 1000 {
				if err != nil {
					t.Fatalf("Decode of %d bytes: %v", tc.size, err)
				}
				return
			}
			var pe *pipeline.ParamsError
			var pr *input.PromptError
			if !errors.As(err, &pe) || !errors.As(err, &pr) || !pe.Malformed {
				t.Fatalf("Decode of %d bytes = %v, want a malformed *ParamsError wrapping *input.PromptError", tc.size, err)
			}
			if pr.Limit != 1000 || pr.Size < 1000 || !strings.Contains(err.Error(), "limit is 1000 bytes") {
				t.Errorf("the refusal %q does not name the limit", err)
			}
		})
	}
	// A format's schema is bounded on its own, and the prompt's check
	// comes first: a history over the limit is refused for its size even
	// with a schema that would take time to compile.
	raw, _ := json.Marshal(map[string]any{"query": "q", "history": []any{turn("user", 2000)},
		"format": map[string]any{"name": "x", "schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "file:///dev/stdin"}}}}})
	if _, err := reg.Decode("debate", raw); err == nil || !strings.Contains(err.Error(), "limit is 1000 bytes") {
		t.Errorf("a history over the limit with a format: %v", err)
	}
	// The default.
	def := registry(t, nil)
	raw, _ = json.Marshal(map[string]any{"query": "q", "history": []any{turn("user", input.DefaultMaxPromptBytes)}})
	if _, err := def.Decode("debate", raw); err == nil || !strings.Contains(err.Error(), "MADSPARK_MAX_PROMPT_BYTES") {
		t.Errorf("a history over the default limit: %v", err)
	}
}
