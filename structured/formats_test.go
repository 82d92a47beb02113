package structured

import (
	"context"
	"strings"
	"testing"
)

// TestFormats: YAML, label-value text, markdown tables and JSON5 numbers
// are read as the value they state, with the format recorded; YAML
// aliases are never expanded.
func TestFormats(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"},"score":{"type":"number","minimum":0,"maximum":10},"passed":{"type":"boolean"},
	"tags":{"type":"array","items":{"type":"string"}},
	"ideas":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"rank":{"type":"integer"}},"required":["name","rank"]}},
	"scores":{"type":"object","properties":{"impact":{"type":"number"}}}},"required":["title","score","tags"],"additionalProperties":false}`
	s, err := NewSpecFromSchema("formats", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, reply, want, format string }{
		{"YAML", "title: Seed swap\nscore: 7\npassed: yes\ntags:\n  - a\n  - b\n",
			`{"passed":true,"score":7,"tags":["a","b"],"title":"Seed swap"}`, "read as YAML"},
		{"YAML in a fence", "Here:\n```yaml\ntitle: t\nscore: .5\ntags: [a, b]\n```",
			`{"score":0.5,"tags":["a","b"],"title":"t"}`, "YAML taken from a code fence"},
		{"label-value text", "Here is my review.\n\n**Title:** Seed \"quoted\" swap\n**Score:** 7 points\nTags:\n- a\n- b\nIdeas:\n1. Name: x\n   Rank: 2nd\n2. Name: y\n   Rank: #3\nScores.impact: 8\n\nHope this helps.",
			`{"ideas":[{"name":"x","rank":2},{"name":"y","rank":3}],"score":7,"scores":{"impact":8},"tags":["a","b"],"title":"Seed \"quoted\" swap"}`, "read as label-value text"},
		{"a table under a label", "**Title:** t\n**Score:** 7\nTags: []\nIdeas:\n| Name | Rank |\n|---|---|\n| x | 1 |\n| y \\| z | 2 |\n",
			`{"ideas":[{"name":"x","rank":1},{"name":"y | z","rank":2}],"score":7,"tags":[],"title":"t"}`, "a list read as a markdown table"},
		{"JSON5 numbers", `{title: 't', score: +7.5, tags: [], ideas: [{name: 'x', rank: 0x2}]}`,
			`{"ideas":[{"name":"x","rank":2}],"score":7.5,"tags":[],"title":"t"}`, "JSON5 numbers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := s.Parse(context.Background(), tc.reply)
			if !p.Usable || string(p.Value) != tc.want {
				t.Fatalf("read as %s (%s), want %s", p.Value, p.Problem, tc.want)
			}
			found := false
			for _, r := range p.Repairs {
				found = found || strings.Contains(r.Action, tc.format)
			}
			if !found {
				t.Fatalf("no repair says %q: %+v", tc.format, p.Repairs)
			}
		})
	}
	// A billion laughs: refused, never expanded.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ntitle: t\nscore: 1\ntags: *d\n"
	if v, err := readYAML(bomb); err == nil {
		t.Fatalf("YAML with aliases read as %v", v)
	}
	if p := s.Parse(context.Background(), bomb); p.Usable && strings.Count(string(p.Value), "x") > 9 {
		t.Fatalf("aliases expanded: %s", p.Value)
	}
	// Prose is not a field.
	if p := s.Parse(context.Background(), "I would rather say it in words: solar farms on school roofs."); p.Usable {
		t.Fatalf("prose read as %s", p.Value)
	}
}
