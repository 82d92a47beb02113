package flow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/flow"
)

// TestDocumentBySchema: a report heads each agent's output with its title
// and lays it out by its schema: fields labelled in the file's order, a
// list of objects as a table, lists as bullets, for_each outputs numbered;
// inputs are labelled with their descriptions.
func TestDocumentBySchema(t *testing.T) {
	src := `name: idea-board
inputs:
  topic: {type: string, required: true, description: What to have ideas about}
  audience: {type: string}
agents:
  lister:
    title: Ideas
    prompt: "Ideas about {{.topic}}"
    output: {ideas: [{name: string, description: string, tags: [string]}], notes: [string]}
  judge_panel:
    prompt: "Judge {{.lister.ideas}}"
    output_schema:
      type: object
      properties:
        verdict: {type: string, title: The verdict}
        scores: {type: object, properties: {overall_score: {type: number}}, required: [overall_score]}
        approved: {type: boolean}
      required: [verdict, scores, approved]
  summary:
    title: In short
    prompt: "Sum up {{.lister.ideas}}"
    output: {text: string}
  scorer:
    title: Each idea scored
    prompt: "Score {{.it}}"
    output: {score: number, why: string}
    for_each: {over: lister.notes, as: it}
steps: [lister, judge_panel, summary, scorer]
`
	p, err := flow.Parse("f.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]any{
		"lister": map[string]any{"ideas": []any{
			map[string]any{"description": "Shared tools", "name": "Tool library", "tags": []any{"community", "cheap"}},
			map[string]any{"description": "Seed swaps", "name": "Seed bank", "tags": []any{}},
		}, "notes": []any{"first", "second"}},
		"judge_panel": map[string]any{"approved": true, "scores": map[string]any{"overall_score": 7.5}, "verdict": "pursue"},
		"summary":     map[string]any{"text": "Two cheap ideas."},
		"scorer":      []any{map[string]any{"score": 6.0, "why": "cheap"}, map[string]any{"score": 8.0, "why": "popular"}},
	}
	raw, _ := json.Marshal(res)
	d, err := p.Document(&madspark.Run{ID: "r1", Result: raw})
	if err != nil {
		t.Fatal(err)
	}
	md := string(document.Markdown(d))
	for _, want := range []string{
		"# Idea board",
		"## 1 Ideas", "**Ideas:**", "| Name | Description | Tags |", "| Tool library | Shared tools | community; cheap |",
		"**Notes:**", "- first",
		"## 2 Judge panel", "**The verdict:** pursue", `**Overall score:** 7\.5`, "**Approved:** yes",
		"## 3 In short\n\nTwo cheap ideas.",
		"## 4 Each idea scored", "| Score | Why |", "| 8 | popular |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "**Score:**") || strings.Contains(md, "**Why:**") {
		t.Errorf("a one-field output repeats its heading as a label:\n%s", md)
	}
	if strings.Contains(md, "{") || strings.Contains(md, "judge_panel") {
		t.Errorf("the report shows raw JSON or a step id:\n%s", md)
	}
	if i, j := strings.Index(md, "The verdict"), strings.Index(md, "Overall score"); i < 0 || j < i {
		t.Errorf("fields not in the file's order:\n%s", md)
	}

	var schema struct {
		Properties map[string]struct{ Title, Description string } `json:"properties"`
	}
	if err := json.Unmarshal(p.ParamsSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties["topic"].Title; got != "What to have ideas about" {
		t.Errorf("topic's label = %q, want its description", got)
	}
	if got := schema.Properties["audience"].Title; got != "Audience" {
		t.Errorf("audience's label = %q, want its name in words", got)
	}
	if def := p.Definition(); def.Title != "Idea board" {
		t.Errorf("title %q", def.Title)
	}
}
