package assess

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bare prompt name is looked up among the agent's built-in prompts,
// experimental ones included, then as a path; a name found nowhere gets an
// error listing the names there are.
func TestAnalystPromptByBareName(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "mine.md")
	if err := os.WriteFile(own, []byte("You are a terse analyst."), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, choice := range []string{"concise.md", "experimental/analyst/concise.md", own, ""} {
		if err := CheckPrompts(params(dir, func(p *Params) { p.AnalystPrompt = choice })); err != nil {
			t.Errorf("%q: %v", choice, err)
		}
	}
	err := CheckPrompts(params(dir, func(p *Params) { p.AnalystPrompt = "verbose.md" }))
	if err == nil || !strings.Contains(err.Error(), `"verbose.md"`) || !strings.Contains(err.Error(), "available: concise.md, system.md") {
		t.Fatalf("unknown name: %v", err)
	}

	jp := JobParams{Idea: "A bakery that delivers by bicycle", Mode: Analyze, MaxIterations: 3, MinWords: 800, Strictness: Normal, MaxWebsearches: 10, AnalystPrompt: "concise.md"}
	if err := jp.Validate(); err != nil {
		t.Fatalf("job with concise.md: %v", err)
	}
	jp.AnalystPrompt = "verbose.md"
	if err := jp.Validate(); err == nil || !strings.Contains(err.Error(), "available: concise.md, system.md") {
		t.Fatalf("job with unknown name: %v", err)
	}
}
