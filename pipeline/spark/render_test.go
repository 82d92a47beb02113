package spark

import (
	"strings"
	"testing"
)

// TestMarkdownEscapesOneLineTexts: a topic, context or idea cannot add a
// heading, a table row or HTML to the Markdown report.
func TestMarkdownEscapesOneLineTexts(t *testing.T) {
	r := &Report{RunID: "r", Pipeline: "spark", Mode: "live", Topic: "Cafés | bars\n# Injected <script>alert(1)</script>", Context: "ctx\n\n| a | b |\n|---|---|",
		Candidates: []Candidate{{Idea: "Idea one\n## Injected <img src=x onerror=alert(2)>", Advocacy: "STRENGTHS:\n• good", Skepticism: "FLAWS:\n• bad"}}}
	var b strings.Builder
	if err := r.Write(&b, "markdown"); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	var h1, h2 int
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "# "):
			h1++
		case strings.HasPrefix(l, "## "):
			h2++
		case strings.HasPrefix(l, "|---"), strings.HasPrefix(l, "| a"):
			t.Errorf("a table from the context: %q", l)
		}
	}
	if h1 != 1 || h2 != 1 {
		t.Errorf("%d level-1 and %d level-2 headings, want 1 and 1:\n%s", h1, h2, md)
	}
	for _, want := range []string{
		"# Cafés \\| bars # Injected \\<script\\>alert(1)\\</script\\>\n",
		"**Context:** ctx \\| a \\| b \\| \\|---\\|---\\|\n",
		"## 1. Idea one ## Injected \\<img src=x onerror=alert(2)\\>\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
