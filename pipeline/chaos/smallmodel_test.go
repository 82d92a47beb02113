package chaos

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// variedReply is wireReply with every value told apart: the judge scores
// each idea differently on each dimension, halves included, and gives
// three items named after the idea in each of its lists; the tournament's
// winners alternate.
func variedReply(req *openaitest.ChatRequest) openaitest.Reply {
	r := wireReply(req)
	var v map[string]any
	if req.ResponseFormat == nil || json.Unmarshal([]byte(r.Content), &v) != nil {
		return r
	}
	three := func(what string) []any {
		return []any{what + `, the "first" one`, what + ", second", what + ", third"}
	}
	for k, x := range v {
		items, ok := x.([]any)
		if !ok {
			continue
		}
		if len(items) == 0 || func() bool { _, ok := items[0].(string); return ok }() {
			v[k] = three(k)
			continue
		}
		for i, it := range items {
			item := it.(map[string]any)
			for f, y := range item {
				if _, ok := y.([]any); ok {
					item[f] = three(fmt.Sprintf("%s of %v", f, item["idea_name"]))
				}
			}
			switch k {
			case "accepted_ideas":
				item["feasibility_score"], item["impact_score"], item["originality_score"] = 5+i, 9.5-float64(i), 6+0.5*float64(i)
			case "rejected_ideas":
				item["quality_score"] = 0.5 + 0.5*float64(i)
			case "results":
				item["winner"] = []string{"a", "b"}[i%2]
			}
		}
	}
	b, _ := json.Marshal(v)
	r.Content = string(b)
	return r
}

// TestSmallModelShapes runs chaos with its tournament through the OpenAI
// provider against a model whose every JSON reply comes in the formats
// and shapes of small local models, with the schema sent and with it in
// the prompt: each run completes with the clean run's judgement, scores,
// lists and tournament, the formats and shapes recorded as repairs, and
// only the replies that need it asked again (see openaitest.ShapeCheck).
func TestSmallModelShapes(t *testing.T) {
	pipe, err := New(newDB(t))
	if err != nil {
		t.Fatal(err)
	}
	openaitest.ShapeCheck{
		Base:   func() func(*openaitest.ChatRequest) openaitest.Reply { return variedReply },
		Agents: pipe.StructuredAgents(),
		Run: func(t *testing.T, srv *openaitest.Server, mode string) (any, []llm.Repair, error) {
			client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b", Structured: mode})
			res, _, err := runChaos(t, newDB(t), client, params(func(p *Params) { p.IdeasPerTrack, p.Tournament = 5, true }), nil)
			if res == nil {
				return nil, nil, err
			}
			return res, res.Repairs, err
		},
	}.Check(t, openai.StructuredNative, openai.StructuredPrompt)
}
