package eval_test

import (
	"context"
	"testing"

	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// TestSmallModelShapes runs an eval of five topics through the OpenAI
// provider against a model whose every JSON reply (the judge's verdicts)
// comes in the formats and shapes of small local models, with the schema
// sent and with it in the prompt: each eval completes with the clean
// eval's verdicts, counts and rates, the formats and shapes recorded as
// repairs, and only the replies that need it asked again (see
// openaitest.ShapeCheck).
func TestSmallModelShapes(t *testing.T) {
	agents, err := eval.Agents()
	if err != nil {
		t.Fatal(err)
	}
	openaitest.ShapeCheck{
		Base:   func() func(*openaitest.ChatRequest) openaitest.Reply { return responder },
		Agents: agents,
		Run: func(t *testing.T, srv *openaitest.Server, mode string) (any, []llm.Repair, error) {
			f := fixtureOver(t, srv, openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "small-3b", Structured: mode}))
			// The script's topics but "words", whose verdicts are
			// synonyms, read with repairs even when clean.
			rep, err := f.run(t, context.Background(), f.params(t, 2, "win", "loss", "tie", "biased", "half"))
			if rep == nil {
				return nil, nil, err
			}
			return rep, rep.Repairs, err
		},
	}.Check(t, openai.StructuredNative, openai.StructuredPrompt)
}
