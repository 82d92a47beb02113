package debate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/structured"
)

var contributionLabel = regexp.MustCompile(`(?m)^Contribution ([A-Z]):`)

// wireHandoff is a well-formed handoff of about 200 tokens.
func wireHandoff() map[string]any {
	var b strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "Point %d of the argument explains one part of the answer in plain and careful words. ", i)
	}
	return map[string]any{
		"context_summary":  strings.TrimSpace(b.String()),
		"key_points":       []string{"State the mechanism first.", "Handle the edge cases.", "Measure before optimising."},
		"confidence_score": 0.7,
	}
}

// wireReply answers the debate's agents over the wire as a well-behaved
// model would: handoffs inside the token budget, rankings that list every
// contribution of the prompt once, and a plain-text answer.
func wireReply(req *openaitest.ChatRequest) openaitest.Reply {
	var v any
	name := ""
	if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
		name = req.ResponseFormat.JSONSchema.Name
	}
	switch name {
	case "debate_handoff":
		v = wireHandoff()
	case "debate_ranking":
		// The contributions are in the first user message (a re-ask adds
		// more).
		prompt := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				prompt = m.Content
				break
			}
		}
		var labels []string
		for _, m := range contributionLabel.FindAllStringSubmatch(prompt, -1) {
			labels = append(labels, m[1])
		}
		v = map[string]any{"ranking": labels, "reasons": "The first is the most complete."}
	case "":
		return openaitest.Reply{Content: "The answer: start from the mechanism, handle the edge cases, and measure.", PromptTokens: 50, CompletionTokens: 20}
	default:
		return openaitest.Reply{Content: "unexpected schema " + name}
	}
	b, _ := json.Marshal(v)
	return openaitest.Reply{Content: string(b), PromptTokens: 50, CompletionTokens: 40}
}

// wireRun runs a debate through the OpenAI provider against respond.
func wireRun(t *testing.T, respond func(*openaitest.ChatRequest) openaitest.Reply, p Params) (*Result, *openaitest.Server, error) {
	t.Helper()
	srv := openaitest.NewServer(t, respond)
	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b", Structured: openai.StructuredBoth})
	res, err := runOver(t, client, p)
	return res, srv, err
}

// runOver runs a debate over client.
func runOver(t *testing.T, client llm.Client, p Params) (*Result, error) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pipe, err := New(counter, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: client}
	r, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "debate", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(context.Background(), r, p, nil)
	_ = r.Finish(context.Background(), res, err)
	return res, err
}

// callsBySchema counts the requests per json_schema name ("" for none).
func callsBySchema(srv *openaitest.Server) map[string]int {
	out := map[string]int{}
	for _, q := range srv.Requests() {
		name := ""
		if q.ResponseFormat != nil && q.ResponseFormat.JSONSchema != nil {
			name = q.ResponseFormat.JSONSchema.Name
		}
		out[name]++
	}
	return out
}

func findRepairs(reps []llm.Repair, agent, rule string) []llm.Repair {
	var out []llm.Repair
	for _, r := range reps {
		if r.Agent == agent && r.Rule == rule {
			out = append(out, r)
		}
	}
	return out
}

type repairWant struct{ agent, rule string }

// TestRepairsAgainstImperfectModel runs every agent of the debate against
// every imperfection that applies to it, through the OpenAI provider and
// the wire protocol: each usable reply is kept, the repair recorded, and
// only what the model alone can fix is asked again.
func TestRepairsAgainstImperfectModel(t *testing.T) {
	const (
		propose = "debate_handoff"
		review  = "debate_ranking"
	)
	long := strings.Repeat("This sentence makes the handoff much longer than its budget allows. ", 30)
	tests := []struct {
		name   string
		flaws  map[string][]openaitest.Flaw
		review bool
		// calls are the requests per schema name.
		calls map[string]int
		want  []repairWant
		check func(t *testing.T, res *Result)
	}{
		{name: "well-formed replies need no repair", review: true,
			calls: map[string]int{propose: 3, review: 3, "": 1}},
		{name: "handoff under the token budget is kept",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Set("context_summary", "Too short to reach the target."), openaitest.Keep("key_points", 1)}},
			calls: map[string]int{propose: 3, "": 1}, want: []repairWant{{agentPropose, "budget"}},
			check: func(t *testing.T, res *Result) {
				short := 0
				for _, h := range res.Handoffs {
					if h.Tokens < MinHandoffTokens {
						short++
						if h.ContextSummary != "Too short to reach the target." || h.Tokens != handoffTokens(counter, h.ContextSummary, h.KeyPoints) {
							t.Errorf("short handoff %+v", h)
						}
					}
				}
				if short != 1 {
					t.Errorf("%d short handoffs, want 1", short)
				}
			}},
		{name: "handoff over the token budget is trimmed at a sentence boundary",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Set("context_summary", long)}},
			calls: map[string]int{propose: 3, "": 1}, want: []repairWant{{agentPropose, "budget"}},
			check: func(t *testing.T, res *Result) {
				for _, h := range res.Handoffs {
					if h.Tokens > MaxHandoffTokens || !strings.HasSuffix(h.ContextSummary, ".") {
						t.Errorf("handoff not trimmed to the budget at a sentence end: %d tokens, %q", h.Tokens, h.ContextSummary)
					}
				}
			}},
		{name: "handoff in prose is taken as the summary",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Prose(strings.TrimSpace(strings.Repeat("The drafter thinks the answer starts from the mechanism and then covers each step. ", 10)) + "\n- mechanism first\n- then the steps")}},
			calls: map[string]int{propose: 3, "": 1}, want: []repairWant{{agentPropose, "prose"}},
			check: func(t *testing.T, res *Result) {
				n := 0
				for _, h := range res.Handoffs {
					if strings.HasPrefix(h.ContextSummary, "The drafter thinks") {
						n++
						if strings.Join(h.KeyPoints, "|") != "mechanism first|then the steps" || h.ConfidenceScore != nil || strings.Contains(h.ContextSummary, "- mechanism") {
							t.Errorf("prose handoff %+v", h)
						}
					}
				}
				if n != 1 {
					t.Errorf("%d prose handoffs, want 1", n)
				}
			}},
		{name: "handoff in a markdown fence is read, the fence recorded",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Fence()}},
			calls: map[string]int{propose: 3, "": 1}, want: []repairWant{{agentPropose, "syntax"}}},
		{name: "confidence as text is coerced",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.AsText("confidence_score")}},
			calls: map[string]int{propose: 3, "": 1}, want: []repairWant{{agentPropose, "type"}}},
		{name: "confidence out of range is clamped",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Set("confidence_score", 7)}},
			calls: map[string]int{propose: 3, "": 1}, want: []repairWant{{agentPropose, "range"}},
			check: func(t *testing.T, res *Result) {
				for _, h := range res.Handoffs {
					if h.ConfidenceScore == nil || *h.ConfidenceScore > 1 {
						t.Errorf("confidence %v not clamped", h.ConfidenceScore)
					}
				}
			}},
		{name: "too many key points are asked again, never cut at once",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Set("key_points", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"})}},
			calls: map[string]int{propose: 4, "": 1},
			check: func(t *testing.T, res *Result) {
				for _, h := range res.Handoffs {
					if len(h.KeyPoints) > 8 {
						t.Errorf("%d key points", len(h.KeyPoints))
					}
				}
			}},
		{name: "a missing confidence is left out, not assumed",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Delete("confidence_score")}},
			calls: map[string]int{propose: 3, "": 1},
			check: func(t *testing.T, res *Result) {
				absent := 0
				for _, h := range res.Handoffs {
					if h.ConfidenceScore == nil {
						absent++
					}
				}
				if absent != 1 {
					t.Errorf("%d handoffs without a confidence, want the 1 whose reply gave none", absent)
				}
			}},
		{name: "a missing summary is asked for once",
			flaws: map[string][]openaitest.Flaw{propose: {openaitest.Delete("context_summary")}},
			calls: map[string]int{propose: 4, "": 1}},
		{name: "ranking with an unknown contribution drops it", review: true,
			flaws: map[string][]openaitest.Flaw{review: {openaitest.Map("ranking", func(v any) any { return append([]any{"Z"}, v.([]any)...) })}},
			calls: map[string]int{propose: 3, review: 3, "": 1}, want: []repairWant{{agentReview, "reference"}},
			check: func(t *testing.T, res *Result) { wantPoints(t, res, 9) }},
		{name: "ranking with a repeated contribution keeps its first place", review: true,
			flaws: map[string][]openaitest.Flaw{review: {openaitest.Map("ranking", func(v any) any { l := v.([]any); return append([]any{l[0]}, l...) })}},
			calls: map[string]int{propose: 3, review: 3, "": 1}, want: []repairWant{{agentReview, "index"}},
			check: func(t *testing.T, res *Result) { wantPoints(t, res, 9) }},
		{name: "ranking with a missing contribution appends it", review: true,
			flaws: map[string][]openaitest.Flaw{review: {openaitest.Keep("ranking", 1)}},
			calls: map[string]int{propose: 3, review: 3, "": 1}, want: []repairWant{{agentReview, "count"}},
			check: func(t *testing.T, res *Result) { wantPoints(t, res, 9) }},
		{name: "ranking in words and lower case is read", review: true,
			flaws: map[string][]openaitest.Flaw{review: {openaitest.Map("ranking", func(v any) any {
				var out []any
				for _, l := range v.([]any) {
					out = append(out, "contribution "+strings.ToLower(l.(string)))
				}
				return out
			})}},
			calls: map[string]int{propose: 3, review: 3, "": 1},
			check: func(t *testing.T, res *Result) { wantPoints(t, res, 9) }},
		{name: "ranking naming no contribution is asked again", review: true,
			flaws: map[string][]openaitest.Flaw{review: {openaitest.Set("ranking", []string{"the first one"})}},
			calls: map[string]int{propose: 3, review: 4, "": 1},
			check: func(t *testing.T, res *Result) { wantPoints(t, res, 9) }},
		{name: "ranking that never names a contribution is left out", review: true,
			flaws: map[string][]openaitest.Flaw{review: {openaitest.Set("ranking", []string{"the first one"}), openaitest.Always}},
			calls: map[string]int{propose: 3, review: 6, "": 1}, want: []repairWant{{agentReview, "reference"}},
			check: func(t *testing.T, res *Result) { wantPoints(t, res, 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := query("Explain step by step how to design a rate limiter", func(p *Params) { p.PeerReview = tt.review; p.NoSearch = true })
			res, srv, err := wireRun(t, openaitest.Imperfect(wireReply, tt.flaws), q)
			if err != nil {
				t.Fatal(err)
			}
			if res.Answer == "" || res.Repairs == nil {
				t.Fatalf("no answer or nil repairs: %+v", res)
			}
			if got := callsBySchema(srv); fmt.Sprint(got) != fmt.Sprint(tt.calls) {
				t.Errorf("calls %v, want %v", got, tt.calls)
			}
			for _, w := range tt.want {
				if len(findRepairs(res.Repairs, w.agent, w.rule)) == 0 {
					t.Errorf("no %s repair of %s recorded: %v", w.rule, w.agent, res.Repairs)
				}
			}
			if len(tt.want) == 0 && len(res.Repairs) != 0 {
				t.Errorf("unexpected repairs %v", res.Repairs)
			}
			for _, r := range res.Repairs {
				if r.Step == "" || r.Action == "" {
					t.Errorf("repair without step or action: %+v", r)
				}
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

// wantPoints checks the Borda total: 3 points per counted review of three
// contributions (2+1+0).
func wantPoints(t *testing.T, res *Result, total int) {
	t.Helper()
	sum := 0
	for _, r := range res.Ranking {
		sum += r.Points
	}
	if len(res.Ranking) != 3 || sum != total {
		t.Errorf("ranking %+v, want %d points", res.Ranking, total)
	}
}

// TestHardReplyFailsResumably: a proposer whose every reply lacks a
// required field fails the debate with a ReplyError naming it; resumed
// once the model is healthy, the debate finishes, replaying the proposers
// that had succeeded.
func TestHardReplyFailsResumably(t *testing.T) {
	var mu sync.Mutex
	healthy, critic := false, regexp.MustCompile(`Your role: CRITIC`)
	respond := func(req *openaitest.ChatRequest) openaitest.Reply {
		r := wireReply(req)
		mu.Lock()
		defer mu.Unlock()
		if !healthy && critic.MatchString(req.System()) {
			r.Content = openaitest.Apply(r.Content, openaitest.Delete("context_summary"))
		}
		return r
	}
	srv := openaitest.NewServer(t, respond)
	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b"})
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pipe, err := New(counter, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := query("Explain step by step how to design a rate limiter", func(p *Params) { p.NoSearch = true })
	e := &engine.Engine{Store: db, Client: client}
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "debate", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(ctx, r, p, nil)
	var re *structured.ReplyError
	if !errors.As(err, &re) || re.Agent != agentPropose || !strings.HasPrefix(err.Error(), "critic: ") {
		t.Fatalf("err = %v, want a ReplyError of the critic", err)
	}
	if err := r.Finish(ctx, res, err); err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	steps, err := db.Steps(ctx, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if st.Status == madspark.StepDone {
			done[st.Key] = true
		}
	}
	if done["r1/critic"] {
		t.Fatal("the failed step is journaled as done")
	}
	before := len(srv.Requests())
	mu.Lock()
	healthy = true
	mu.Unlock()
	r2, err := e.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = pipe.Run(ctx, r2, p, nil)
	if err != nil || res.Answer == "" {
		t.Fatalf("resumed: %v", err)
	}
	// Only the proposers that had not finished are asked again, then the
	// aggregator.
	roles := regexp.MustCompile(`Your role: ([A-Z]+)`)
	asked := map[string]bool{}
	for _, q := range srv.Requests()[before:] {
		if m := roles.FindStringSubmatch(q.System()); m != nil {
			role := strings.ToLower(m[1])
			if done["r1/"+role] {
				t.Errorf("the %s's finished step was asked again", role)
			}
			asked[role] = true
		}
	}
	if !asked["critic"] {
		t.Error("the critic was not asked again")
	}
}

// TestAnswerEmptyOrCutOff: an empty final answer is asked for once more; one
// cut off at the token limit is kept, and the repair recorded.
func TestAnswerEmptyOrCutOff(t *testing.T) {
	var mu sync.Mutex
	answers := 0
	empty := func(req *openaitest.ChatRequest) openaitest.Reply {
		r := wireReply(req)
		if req.ResponseFormat == nil {
			mu.Lock()
			answers++
			if answers == 1 {
				r.Content = " "
			}
			mu.Unlock()
		}
		return r
	}
	q := query("Explain step by step how to design a rate limiter", func(p *Params) { p.NoSearch = true })
	res, srv, err := wireRun(t, empty, q)
	if err != nil || callsBySchema(srv)[""] != 2 || !strings.HasPrefix(res.Answer, "The answer") {
		t.Fatalf("empty answer not asked again: %v %v", err, callsBySchema(srv))
	}
	cut := func(req *openaitest.ChatRequest) openaitest.Reply {
		r := wireReply(req)
		if req.ResponseFormat == nil {
			r.FinishReason = "length"
		}
		return r
	}
	res, srv, err = wireRun(t, cut, q)
	if err != nil || callsBySchema(srv)[""] != 1 || len(findRepairs(res.Repairs, agentAggregate, "length")) != 1 {
		t.Fatalf("cut-off answer: %v, calls %v, repairs %v", err, callsBySchema(srv), res.Repairs)
	}
}

func TestTrimToBudget(t *testing.T) {
	summary := strings.Repeat("One sentence of about ten tokens in plain English. ", 60)
	s, kp := trimToBudget(counter, summary, []string{"a", "b"}, MaxHandoffTokens)
	if n := handoffTokens(counter, s, kp); n > MaxHandoffTokens || n < MaxHandoffTokens-20 || !strings.HasSuffix(s, ".") || len(kp) != 2 {
		t.Fatalf("trimmed to %d tokens: %q %v", n, s, kp)
	}
	// One sentence longer than the budget is kept whole; key points go.
	one := strings.Repeat("word ", 400) + "end."
	s, kp = trimToBudget(counter, one, []string{"a", "b", "c"}, MaxHandoffTokens)
	if s != one || len(kp) != 1 {
		t.Fatalf("single sentence: %d key points", len(kp))
	}
}
