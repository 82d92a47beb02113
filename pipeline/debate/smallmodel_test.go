package debate

import (
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

var roleRE = regexp.MustCompile(`Your role: ([A-Z]+)`)

// variedReply is wireReply with every value told apart: each role's
// handoff has key points and a confidence of its own, and each reviewer
// ranks the contributions in another order.
func variedReply(req *openaitest.ChatRequest) openaitest.Reply {
	r := wireReply(req)
	var v map[string]any
	if req.ResponseFormat == nil || json.Unmarshal([]byte(r.Content), &v) != nil {
		return r
	}
	role := "NONE"
	if m := roleRE.FindStringSubmatch(req.System()); m != nil {
		role = m[1]
	}
	k := strings.Index("DRAFTER CRITIC SYNTHESIZER", role) / 7
	if _, ok := v["key_points"]; ok {
		v["key_points"] = []string{role + ` point "one" first`, role + " point two", role + " point three"}
		v["confidence_score"] = []float64{0.6, 0.75, 0.9, 0.5}[k%4]
	}
	if ranking, ok := v["ranking"].([]any); ok && len(ranking) > 0 {
		for range k % len(ranking) {
			ranking = append(ranking[1:], ranking[0])
		}
		v["ranking"] = ranking
	}
	b, _ := json.Marshal(v)
	r.Content = string(b)
	return r
}

// TestSmallModelShapes runs a two-round debate with peer review through
// the OpenAI provider against a model whose every JSON reply comes in the
// formats and shapes of small local models, with the schema sent and with
// it in the prompt: each run completes with the clean run's handoffs, key
// points, confidences and ranking, the formats and shapes recorded as
// repairs, no handoff taken as prose, and only the replies that need it
// asked again (see openaitest.ShapeCheck).
func TestSmallModelShapes(t *testing.T) {
	pipe, err := New(counter, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	openaitest.ShapeCheck{
		Base:   func() func(*openaitest.ChatRequest) openaitest.Reply { return variedReply },
		Agents: pipe.StructuredAgents(),
		Run: func(t *testing.T, srv *openaitest.Server, mode string) (any, []llm.Repair, error) {
			client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b", Structured: mode})
			res, err := runOver(t, client, query("Explain step by step how to design a rate limiter", func(p *Params) {
				p.PeerReview, p.NoSearch, p.Rounds = true, true, 2
			}))
			if res == nil {
				return nil, nil, err
			}
			// The handoffs and the transitions are listed as they
			// happen, which depends on the proposers' timing, not on the
			// replies: they are compared in proposer order.
			slices.SortStableFunc(res.Handoffs, func(a, b HandoffMessage) int {
				return cmp.Or(cmp.Compare(a.Round, b.Round), cmp.Compare(slices.Index(Proposers, a.FromRole), slices.Index(Proposers, b.FromRole)))
			})
			slices.SortStableFunc(res.Transitions, func(a, b Transition) int {
				return cmp.Or(cmp.Compare(a.Round, b.Round), cmp.Compare(a.From, b.From), cmp.Compare(a.Event, b.Event), cmp.Compare(a.Detail, b.Detail))
			})
			return res, res.Repairs, err
		},
	}.Check(t, openai.StructuredNative, openai.StructuredPrompt)
}
