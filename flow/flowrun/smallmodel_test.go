package flowrun_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// fileReplies answers the agents of the pipeline files of
// TestSmallModelShapes by the agent a schema is named after
// ("review-file_scorer"), each value told apart from the others.
func fileReplies(req *openaitest.ChatRequest) openaitest.Reply {
	if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
		return openaitest.Reply{Content: "no schema was sent"}
	}
	_, agent, _ := strings.Cut(req.ResponseFormat.JSONSchema.Name, "_")
	prompt := req.Prompt()
	ideas := func(track, field string) []any {
		var out []any
		for i := 1; i <= 3; i++ {
			out = append(out, map[string]any{"name": fmt.Sprintf("%s %d", track, i), field: fmt.Sprintf("%s %d starts in one street, then spreads by %s.", track, i, []string{"word of mouth", "schools", "markets"}[i-1])})
		}
		return out
	}
	variants := []string{"a tool library on wheels", "a seed bank", "a repair café"}
	var v any
	switch agent {
	// examples/pipelines/chaos.yaml
	case "chaos":
		v = map[string]any{"seeds": []string{"Tidal pools keep what the tide leaves.", "Origami folds waste into shape.", "Jazz improvises with what is at hand."}}
	// The tracks' agents share their schema's description, so a client
	// that puts it in the prompt sends the same for both: the track is
	// told by the prompt.
	case "creative_a", "creative_b":
		track := map[bool]string{true: "Alpha", false: "Beta"}[strings.Contains(prompt, "Chaos seeds")]
		v = map[string]any{"ideas": ideas(track, "description")}
	case "refine_a", "refine_b":
		track := map[bool]string{true: "Alpha", false: "Beta"}[strings.Contains(prompt, "Alpha")]
		v = map[string]any{"ideas": ideas(track, "plan")}
	case "judge":
		v = map[string]any{
			"accepted_ideas": []any{
				map[string]any{"idea_name": "Alpha 2", "quality_score": 8.5, "feasibility_score": 7, "impact_score": 9, "originality_score": 6.5, "next_steps": []string{"find a street", `ask the "school" first`, "count the waste"}},
				map[string]any{"idea_name": "Beta 1", "quality_score": 7, "feasibility_score": 9.5, "impact_score": 6, "originality_score": 4, "next_steps": []string{"rent a stall"}},
			},
			"rejected_ideas": []any{
				map[string]any{"idea_name": "Alpha 1", "rejection_reason": "Too vague.", "quality_score": 4},
				map[string]any{"idea_name": "Alpha 3", "rejection_reason": "Costly.", "quality_score": 5.5},
				map[string]any{"idea_name": "Beta 2", "rejection_reason": "Exists already.", "quality_score": 3},
				map[string]any{"idea_name": "Beta 3", "rejection_reason": "No owner.", "quality_score": 2.5},
			},
			"synthesis":           "Start with the street, then the school.",
			"top_recommendations": []string{"pilot Alpha 2", "pair it with Beta 1"},
		}
	// testdata/review.yaml
	case "lister":
		v = map[string]any{"variants": variants}
	case "scorer":
		for i, name := range variants {
			if strings.Contains(prompt, name) {
				v = map[string]any{"score": []float64{6.5, 8, 3}[i], "confidence": []float64{0.55, 0.8, 0.95}[i], "feasible": i != 1,
					"risks": []string{name + ": theft", name + ": upkeep"}}
			}
		}
	case "ranker":
		v = map[string]any{"items": []any{
			map[string]any{"name": variants[1], "rank": 1}, map[string]any{"name": variants[0], "rank": 2}, map[string]any{"name": variants[2], "rank": 3},
		}}
	case "analyst":
		if strings.Contains(prompt, "Address this feedback") {
			v = map[string]any{"analysis": "Revised: the seed bank comes first.", "key_points": []string{"seeds keep", `schools "help" most`, "costs are low"}}
		} else {
			v = map[string]any{"analysis": "First draft: all three can work.", "key_points": []string{"three variants", "one street"}}
		}
	case "reviewer":
		if strings.Contains(prompt, "Revised:") {
			v = map[string]any{"verdict": "approve", "feedback": "Clear now.", "score": 8.5, "ready": true}
		} else {
			v = map[string]any{"verdict": "partially_approve", "feedback": "Choose one variant.", "score": 6, "ready": false}
		}
	}
	if v == nil {
		return openaitest.Reply{Content: "unexpected request for " + agent}
	}
	b, _ := json.Marshal(v)
	return openaitest.Reply{Content: string(b), PromptTokens: 40, CompletionTokens: 20}
}

// TestSmallModelShapes runs pipeline files (the chaos example, and one
// with for_each agents, a loop and values of every kind) through the
// OpenAI provider against a model whose every reply comes in the formats
// and shapes of small local models, with the schema sent and with it in
// the prompt: each run completes with the clean run's outputs, the loop
// stops where it did, the formats and shapes are recorded as repairs, and
// only the replies that need it are asked again (see
// openaitest.ShapeCheck).
func TestSmallModelShapes(t *testing.T) {
	for _, tc := range []struct {
		file, params string
	}{
		{filepath.Join("..", "..", "examples", "pipelines", "chaos.yaml"), `{"prompt":"new ways to reduce food waste in cities"}`},
		{filepath.Join("..", "testdata", "review.yaml"), `{"idea":"community tool libraries"}`},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			p, err := flow.Load(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			openaitest.ShapeCheck{
				Base:   func() func(*openaitest.ChatRequest) openaitest.Reply { return fileReplies },
				Agents: p.StructuredAgents(),
				Run: func(t *testing.T, srv *openaitest.Server, mode string) (any, []llm.Repair, error) {
					client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b", Structured: mode})
					r, res, err := runDef(t, newEngine(t, client), p, tc.params)
					return res, r.Repairs(), err
				},
			}.Check(t, openai.StructuredNative, openai.StructuredPrompt)
		})
	}
}
