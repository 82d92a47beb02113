package debate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/store/sqlite"
)

var counter = func() func(string) int {
	c, err := NewTokenCounter()
	if err != nil {
		panic(err)
	}
	return c
}()

type fakeSearch struct {
	delay time.Duration
	err   error
	calls int
	mu    sync.Mutex
}

func (f *fakeSearch) Name() string { return "fake" }
func (f *fakeSearch) Search(ctx context.Context, q string, max int) ([]search.Result, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	time.Sleep(f.delay)
	if f.err != nil {
		return nil, f.err
	}
	var out []search.Result
	for i := 0; i < 5 && i < max; i++ {
		out = append(out, search.Result{Title: fmt.Sprintf("Result %d", i), URL: fmt.Sprintf("https://example.org/%d", i), Snippet: "about " + q})
	}
	return out, nil
}

func runDebate(t *testing.T, client llm.Client, s search.Provider, p Params, onDelta func(string)) (*Result, error) {
	t.Helper()
	return runDebateCtxDelta(t, context.Background(), client, s, p, onDelta)
}

func runDebateCtx(t *testing.T, ctx context.Context, client llm.Client, s search.Provider, p Params) (*Result, error) {
	t.Helper()
	return runDebateCtxDelta(t, ctx, client, s, p, nil)
}

func runDebateCtxDelta(t *testing.T, ctx context.Context, client llm.Client, s search.Provider, p Params, onDelta func(string)) (*Result, error) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pipe, err := New(counter, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: client}
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "debate", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(ctx, r, p, onDelta)
	_ = r.Finish(context.Background(), res, err)
	return res, err
}

func query(q string, mod func(*Params)) Params {
	p := DefaultParams()
	p.Query = q
	if mod != nil {
		mod(&p)
	}
	return p
}

func TestRouterContract(t *testing.T) {
	for q, want := range map[string]Level{
		"What is Rust?":                                                   Simple,
		"Define ownership":                                                Simple,
		"Explain step by step how async works":                            Complex,
		"Design a distributed cache architecture":                         Complex,
		"Why does this fail?\n```go\nfor {}\n```":                         Complex,
		"First install it, then configure the proxy, and finally restart": Complex,
		strings.Repeat("word ", 60):                                       Complex,
	} {
		r := Classify(q, counter)
		if r.Level != want || r.Confidence < 0.5 || r.Confidence > 1 {
			t.Errorf("Classify(%q) = %+v, want %s", q, r, want)
		}
	}
	r := Classify("Explain and compare the trade-offs of designing async architecture", counter)
	if !r.Features.HasReasoningKeywords || len(r.Features.Keywords) < 3 || r.Confidence <= Classify("Explain it", counter).Confidence {
		t.Errorf("more evidence should mean more confidence: %+v", r)
	}
}

func BenchmarkRouter(b *testing.B) {
	q := "Explain step by step how to implement async iterators in Rust, and compare them with streams"
	for i := 0; i < b.N; i++ {
		Classify(q, counter)
	}
}

func TestMachine(t *testing.T) {
	m := NewMachine(2, true, nil)
	steps := []Event{QueryReceived, ComplexityComplex, ProposalComplete, RoundComplete, ProposalComplete, AllProposalsComplete, ReviewsComplete, SynthesisComplete}
	for _, e := range steps {
		if err := m.Fire(e, ""); err != nil {
			t.Fatalf("%s: %v", e, err)
		}
	}
	if m.State() != Complete || len(m.History()) != len(steps) || m.Round() != 2 {
		t.Fatalf("state %s, round %d, history %d", m.State(), m.Round(), len(m.History()))
	}
	for _, bad := range []struct {
		prep []Event
		e    Event
	}{
		{nil, SynthesisComplete},
		{[]Event{QueryReceived}, AllProposalsComplete},
		{[]Event{QueryReceived, ComplexitySimple}, SynthesisComplete},
		{[]Event{QueryReceived, ComplexityComplex}, AllProposalsComplete},         // round 1 of 2
		{[]Event{QueryReceived, ComplexityComplex, RoundComplete}, RoundComplete}, // no round 3
		{[]Event{QueryReceived, ComplexitySimple, GenerationDone}, ErrorOccurred},
	} {
		m := NewMachine(2, false, nil)
		for _, e := range bad.prep {
			if err := m.Fire(e, ""); err != nil {
				t.Fatal(err)
			}
		}
		before := m.State()
		if err := m.Fire(bad.e, ""); err == nil || m.State() != before {
			t.Errorf("%v then %s: want an error and no change, got %v in %s", bad.prep, bad.e, err, m.State())
		}
	}
}

func TestBlackboardRecordsTokens(t *testing.T) {
	b := NewBlackboard(counter)
	b.Post(HandoffMessage{FromRole: Drafter, Round: 1, ContextSummary: "too short"})
	ok := strings.Repeat("word ", 200)
	b.Post(HandoffMessage{FromRole: Critic, Round: 1, ContextSummary: ok})
	if h, found := b.Latest(Critic); !found || h.Tokens < MinHandoffTokens || h.Tokens > MaxHandoffTokens || len(b.Round(1)) != 2 {
		t.Fatalf("latest %+v", h)
	}
	if h, _ := b.Latest(Drafter); h.Tokens != handoffTokens(counter, "too short", nil) {
		t.Fatalf("short handoff recorded with %d tokens", h.Tokens)
	}
}

func TestSimplePathStreamsOneCall(t *testing.T) {
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	var streamed strings.Builder
	res, err := runDebate(t, rec, nil, query("What is Rust?", nil), func(s string) { streamed.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != Simple || len(rec.Requests()) != 1 || rec.Requests()[0].Agent != agentDirect || streamed.String() != res.Answer || rec.Requests()[0].OnDelta == nil {
		t.Fatalf("path %s, %d calls, streamed %q", res.Path, len(rec.Requests()), streamed.String())
	}
	states := []string{}
	for _, tr := range res.Transitions {
		states = append(states, string(tr.To))
	}
	if strings.Join(states, ",") != "analyzing_complexity,simple_generation,complete" {
		t.Fatalf("transitions %v", states)
	}
}

func TestComplexPath(t *testing.T) {
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	s := &fakeSearch{}
	var streamed strings.Builder
	q := "Explain step by step how to implement async iterators"
	res, err := runDebate(t, rec, s, query(q, nil), func(d string) { streamed.WriteString(d) })
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Calls(); got["propose"] != 3 || got["aggregate"] != 1 || len(rec.Requests()) != 4 {
		t.Fatalf("calls %v", got)
	}
	if res.Repairs == nil || len(res.Repairs) != 0 {
		t.Fatalf("mock replies need no repair: %v", res.Repairs)
	}
	if len(res.Handoffs) != 3 || streamed.String() != res.Answer || s.calls != 1 || len(res.Sources) != MaxSearchResults {
		t.Fatalf("handoffs %d, sources %d, search calls %d", len(res.Handoffs), len(res.Sources), s.calls)
	}
	for _, h := range res.Handoffs {
		if h.Tokens < MinHandoffTokens || h.Tokens > MaxHandoffTokens || h.ToRole != Aggregator || h.ConversationID == "" {
			t.Fatalf("handoff %+v", h)
		}
	}
	for _, q2 := range rec.Requests() {
		prompt := q2.Prompt()
		switch {
		case q2.Agent == agentAggregate:
			// The aggregator always sees the original query, and the sources.
			if !strings.Contains(prompt, "The user's query (answer this):\n"+q) || !strings.Contains(prompt, "https://example.org/0") {
				t.Fatalf("aggregator prompt lacks the query or sources:\n%s", prompt)
			}
		case q2.Agent == agentPropose:
			role := q2.Input.(proposeInput).Role
			// Round 1 starts with the search and does not wait for it.
			if strings.Contains(prompt, "https://example.org/") {
				t.Fatalf("the round-1 %s waited for the search results", role)
			}
			if want := DefaultRoles()[role]; q2.Temperature != want.Temperature || q2.MaxTokens != want.MaxTokens {
				t.Fatalf("%s config %v/%d", role, q2.Temperature, q2.MaxTokens)
			}
		}
	}
}

func TestRoundsAndPeerReview(t *testing.T) {
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	res, err := runDebate(t, rec, nil, query("Design a distributed cache architecture", func(p *Params) {
		p.Rounds, p.PeerReview = 2, true
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Calls(); got["propose"] != 6 || got["review"] != 3 || got["aggregate"] != 1 {
		t.Fatalf("calls %v", got)
	}
	for _, q := range rec.Requests() {
		if q.Agent == agentPropose && q.Input.(proposeInput).Round == 2 && len(q.Input.(proposeInput).Peers) != 3 {
			t.Fatal("round 2 proposers must read the round 1 handoffs")
		}
		if q.Agent == agentReview && strings.Contains(q.Prompt(), "drafter") {
			t.Fatal("peer review must be anonymised")
		}
		if q.Agent == agentAggregate && !strings.Contains(q.Prompt(), "Peer review, aggregate ranking") {
			t.Fatal("aggregator does not see the ranking")
		}
	}
	if res.Repairs == nil || len(res.Repairs) != 0 {
		t.Fatalf("mock replies need no repair: %v", res.Repairs)
	}
	total := 0
	for _, rr := range res.Ranking {
		total += rr.Points
	}
	if len(res.Ranking) != 3 || total != 9 || res.Ranking[0].Points < res.Ranking[2].Points {
		t.Fatalf("ranking %+v", res.Ranking) // 3 reviewers × (2+1+0)
	}
	if res.SearchNote == "" || !strings.Contains(res.SearchNote, "TAVILY_API_KEY") {
		t.Fatalf("search note %q", res.SearchNote)
	}
}

func TestHandoffOverBudgetIsRepaired(t *testing.T) {
	base := mock.New(MockResponders())
	c := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agentPropose && len(req.Messages) == 1 && req.Input.(proposeInput).Role == Critic {
			long := strings.Repeat("A verbose sentence. ", 200)
			return &llm.Response{Text: `{"context_summary":"` + long + `","key_points":["a"],"confidence_score":0.5}`, Usage: llm.Usage{LLMCalls: 1}}, nil
		}
		return base.Generate(ctx, req)
	})
	rec := &mock.Recorder{Next: c}
	res, err := runDebate(t, rec, nil, query("Explain the trade-offs of Raft", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Calls()["propose"] != 3 {
		t.Fatalf("an over-budget handoff is trimmed, not sent back: %v", rec.Calls())
	}
	if len(res.Repairs) != 1 || res.Repairs[0].Rule != "budget" || res.Repairs[0].Step != "r1/critic" || !strings.Contains(res.Repairs[0].Action, "trimmed") {
		t.Fatalf("repairs %+v", res.Repairs)
	}
	for _, h := range res.Handoffs {
		if h.Tokens > MaxHandoffTokens {
			t.Fatalf("handoff of %d tokens", h.Tokens)
		}
	}
}

func TestProposerModelsAndFailures(t *testing.T) {
	roles := DefaultRoles()
	if err := ParseProposerModels(roles, "openai:gpt-4o-mini,,anthropic:claude-haiku-4-5"); err != nil {
		t.Fatal(err)
	}
	if roles[Drafter].Provider != "openai" || roles[Critic].Provider != "" || roles[Synthesizer].Model != "claude-haiku-4-5" {
		t.Fatalf("roles %+v", roles)
	}
	for _, bad := range []string{"cohere:x", "a,b,c,d"} {
		if err := ParseProposerModels(DefaultRoles(), bad); err == nil {
			t.Errorf("ParseProposerModels(%q) accepted", bad)
		}
	}
	if err := ParseRoleConfig(roles, "critic=0.2/300"); err != nil || roles[Critic].Temperature != 0.2 || roles[Critic].MaxTokens != 300 {
		t.Fatalf("role config %v %+v", err, roles[Critic])
	}
	for _, bad := range []string{"judge=0.1/100", "critic=3/100", "critic=0.1/10"} {
		if err := ParseRoleConfig(DefaultRoles(), bad); err == nil {
			t.Errorf("ParseRoleConfig(%q) accepted", bad)
		}
	}
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	if _, err := runDebate(t, rec, nil, query("Compare B-trees and LSM trees", func(p *Params) { p.Roles = roles }), nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range rec.Requests() {
		if q.Agent == agentPropose && q.Input.(proposeInput).Role == Drafter && (q.Provider != "openai" || q.Model != "gpt-4o-mini") {
			t.Fatalf("drafter routed to %s/%s", q.Provider, q.Model)
		}
	}

	// A proposer that keeps failing fails the debate, recorded as such.
	failing := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agentPropose {
			return nil, &llm.Error{Provider: "openai", Status: 500, Message: "boom"}
		}
		return mock.New(MockResponders()).Generate(ctx, req)
	})
	if _, err := runDebate(t, failing, &fakeSearch{err: errors.New("search down")}, query("Explain quicksort step by step", nil), nil); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("err = %v", err)
	}
}

func TestModeOverridesAndValidation(t *testing.T) {
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	res, err := runDebate(t, rec, nil, query("What is Rust?", func(p *Params) { p.Mode = "complex" }), nil)
	if err != nil || res.Path != Complex || res.Route.Level != Simple {
		t.Fatalf("forced complex: %+v %v", res, err)
	}
	for _, bad := range []func(*Params){
		func(p *Params) { p.Query = "  " },
		func(p *Params) { p.Mode = "fast" },
		func(p *Params) { p.Rounds = 6 },
		func(p *Params) { c := p.Roles[Direct]; c.ReasoningEffort = "extreme"; p.Roles[Direct] = c },
		func(p *Params) { c := p.Roles[Aggregator]; c.Verbosity = "loud"; p.Roles[Aggregator] = c },
	} {
		p := query("ok", bad)
		if p.Validate() == nil {
			t.Errorf("invalid params accepted: %+v", p)
		}
	}
}
