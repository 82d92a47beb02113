package spark

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// variedReply is wireReply with every value told apart: each list of
// texts holds three items named after the idea (a word of the first in
// double quotes), the seven dimensions score differently on each idea, halves included, and the confidences differ,
// so that a value read into the wrong place shows.
func variedReply(req *openaitest.ChatRequest) openaitest.Reply {
	r := wireReply(req)
	var v map[string]any
	if json.Unmarshal([]byte(r.Content), &v) != nil {
		return r
	}
	for _, list := range v {
		items, _ := list.([]any)
		for _, it := range items {
			item, _ := it.(map[string]any)
			i, ok := item["index"].(float64)
			if !ok {
				continue
			}
			for k, x := range item {
				switch x := x.(type) {
				case []any:
					item[k] = []any{fmt.Sprintf(`%s of idea %v, the "first" one`, k, i), fmt.Sprintf("%s of idea %v, second", k, i), fmt.Sprintf("%s of idea %v, third", k, i)}
				case map[string]any: // the dimensions
					dims := make([]string, 0, len(x))
					for d := range x {
						dims = append(dims, d)
					}
					sort.Strings(dims)
					for j, d := range dims {
						x[d] = 2 + float64((j+int(i))%7) + 0.5*float64(j%2)
					}
				}
			}
			if _, ok := item["confidence"]; ok {
				item["confidence"] = 0.55 + 0.1*float64(int(i)%4)
			}
		}
	}
	b, _ := json.Marshal(v)
	r.Content = string(b)
	return r
}

// TestSmallModelShapes runs the pipeline, every agent on, through the
// OpenAI provider against a model whose every JSON reply comes in the
// formats and shapes of small local models, with the schema sent and with
// it in the prompt: each run completes with the clean run's ideas, scores
// and lists, the formats and shapes recorded as repairs, and only the
// replies that need it asked again (see openaitest.ShapeCheck).
func TestSmallModelShapes(t *testing.T) {
	pipe, err := New()
	if err != nil {
		t.Fatal(err)
	}
	openaitest.ShapeCheck{
		Base:   func() func(*openaitest.ChatRequest) openaitest.Reply { return variedReply },
		Agents: pipe.StructuredAgents(),
		Run: func(t *testing.T, srv *openaitest.Server, mode string) (any, []llm.Repair, error) {
			client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b", Structured: mode})
			res, _, err := runSpark(t, newStore(t), client, wireParams(nil))
			if res == nil {
				return nil, nil, err
			}
			return res, res.Repairs, err
		},
	}.Check(t, openai.StructuredNative, openai.StructuredPrompt)
}
