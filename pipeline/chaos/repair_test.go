package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/structured"
)

var (
	wireAsked = regexp.MustCompile(`Generate (\d+) new ideas`)
	wireName  = regexp.MustCompile(`\*\*(.+?)\*\*`)
	wirePair  = regexp.MustCompile(`(?m)^Pair (\d+):`)
)

// firstUser is the first user message of a request: the prompt, before any
// re-ask.
func firstUser(req *openaitest.ChatRequest) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// textAgent tells which plain-text agent a request is for, from its prompt.
func textAgent(req *openaitest.ChatRequest) string {
	p := firstUser(req)
	switch {
	case strings.Contains(p, "Random seed concepts:"):
		return agentChaos
	case strings.Contains(p, "Tangents from the chaos generator"):
		return agentCreative
	case strings.Contains(p, "Ideas to refine:"):
		return agentRefine
	case strings.Contains(p, "Parent ideas:"):
		return agentEvolve
	}
	return ""
}

// numbered is a numbered list of n ideas named prefix 1..n.
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d. **%s %d**: a concrete idea that starts in one street and spreads.\n", i, prefix, i)
	}
	return b.String()
}

// wireReply answers chaos's agents over the wire as a well-behaved model
// would: as many ideas as asked, a judge that accepts four ideas, one
// verdict per tournament pair.
func wireReply(req *openaitest.ChatRequest) openaitest.Reply {
	name := ""
	if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
		name = req.ResponseFormat.JSONSchema.Name
	}
	prompt := firstUser(req)
	var v any
	switch name {
	case "":
		switch textAgent(req) {
		case agentChaos:
			return openaitest.Reply{Content: "1. A tangent about tides.\n2. A tangent about kites."}
		case agentCreative:
			var n int
			fmt.Sscan(wireAsked.FindStringSubmatch(prompt)[1], &n)
			track := "Alpha"
			if strings.Contains(req.System(), "practical") {
				track = "Beta"
			}
			return openaitest.Reply{Content: numbered(track, n)}
		case agentRefine, agentEvolve:
			var b strings.Builder
			i := 0
			for _, m := range wireName.FindAllStringSubmatch(prompt, -1) {
				if m[1] == "Idea name" { // the prompt's example of the format
					continue
				}
				i++
				fmt.Fprintf(&b, "%d. **%s** — originality 7/10. Refinement: name an owner.\n", i, m[1])
			}
			return openaitest.Reply{Content: b.String()}
		}
		return openaitest.Reply{Content: "unexpected prompt"}
	case "chaos_judgement":
		list := []string{"a point"}
		accepted, rejected := []any{}, []any{}
		seen := map[string]bool{}
		for _, m := range wireName.FindAllStringSubmatch(prompt, -1) {
			if seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			if len(accepted) < 4 {
				accepted = append(accepted, map[string]any{"idea_name": m[1], "quality_score": 8 - 0.5*float64(len(accepted)), "feasibility_score": 7, "impact_score": 7, "originality_score": 7,
					"key_points": list, "implementation_path": "Pilot, then scale.", "required_resources": list, "success_metrics": list, "next_steps": list})
			} else {
				rejected = append(rejected, map[string]any{"idea_name": m[1], "rejection_reason": "Too vague.", "quality_score": 3, "fatal_flaw": "No owner."})
			}
		}
		v = map[string]any{"accepted_ideas": accepted, "rejected_ideas": rejected, "synthesis": "Start small.",
			"top_recommendations": list, "strategic_insights": list, "unresolved_questions": list}
	case "chaos_comparisons":
		results := []any{}
		for _, m := range wirePair.FindAllStringSubmatch(prompt, -1) {
			var i int
			fmt.Sscan(m[1], &i)
			results = append(results, map[string]any{"pair": i, "winner": "a", "reason": "Clearer first step."})
		}
		v = map[string]any{"results": results}
	default:
		return openaitest.Reply{Content: "unexpected schema " + name}
	}
	b, _ := json.Marshal(v)
	return openaitest.Reply{Content: string(b)}
}

// textFlaw changes the first reply (or, with always, every reply) to the
// plain-text agent named agent.
func textFlaw(base func(*openaitest.ChatRequest) openaitest.Reply, agent string, always bool, change func(openaitest.Reply) openaitest.Reply) func(*openaitest.ChatRequest) openaitest.Reply {
	var mu sync.Mutex
	n := 0
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		reply := base(req)
		if req.ResponseFormat != nil || textAgent(req) != agent {
			return reply
		}
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first || always {
			reply = change(reply)
		}
		return reply
	}
}

// wireChaos runs chaos through the OpenAI provider against respond, with
// five ideas per track.
func wireChaos(t *testing.T, respond func(*openaitest.ChatRequest) openaitest.Reply, mod func(*Params)) (*Result, map[string]int, error) {
	t.Helper()
	srv := openaitest.NewServer(t, respond)
	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b", Structured: openai.StructuredBoth})
	db := newDB(t)
	pipe, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	p := params(func(p *Params) { p.IdeasPerTrack = 5 })
	if mod != nil {
		mod(&p)
	}
	e := &engine.Engine{Store: db, Client: client}
	r, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "chaos", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(context.Background(), r, p, nil)
	_ = r.Finish(context.Background(), res, err)
	calls := map[string]int{}
	for _, q := range srv.Requests() {
		switch {
		case q.ResponseFormat != nil && q.ResponseFormat.JSONSchema != nil:
			calls[q.ResponseFormat.JSONSchema.Name]++
		default:
			calls[textAgent(q)]++
		}
	}
	return res, calls, err
}

func repairsOf(reps []llm.Repair, agent, rule string) []llm.Repair {
	var out []llm.Repair
	for _, r := range reps {
		if r.Agent == agent && r.Rule == rule {
			out = append(out, r)
		}
	}
	return out
}

// TestRepairsAgainstImperfectModel runs every agent of chaos against every
// imperfection that applies to it, over the wire through the OpenAI
// provider: usable replies are kept and the repair recorded, deterministic
// repairs cost no call, and only what the model alone can supply is asked
// again.
func TestRepairsAgainstImperfectModel(t *testing.T) {
	const (
		judge   = "chaos_judgement"
		compare = "chaos_comparisons"
	)
	imperfect := func(flaws map[string][]openaitest.Flaw) func(*openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Imperfect(wireReply, flaws)
	}
	// judgedTwice adds a rejection of the first accepted idea.
	judgedTwice := openaitest.Flaw(func(v any) any {
		m := v.(map[string]any)
		first := m["accepted_ideas"].([]any)[0].(map[string]any)
		m["rejected_ideas"] = append(m["rejected_ideas"].([]any), map[string]any{"idea_name": strings.ToUpper(first["idea_name"].(string)), "rejection_reason": "On second thought, no.", "quality_score": 2, "fatal_flaw": ""})
		return m
	})
	base := map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 1}
	withTournament := map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 1, compare: 2}
	tests := []struct {
		name       string
		respond    func(*openaitest.ChatRequest) openaitest.Reply
		tournament bool
		calls      map[string]int
		want       []string // agent/rule of the repairs expected
		check      func(t *testing.T, res *Result)
	}{
		{name: "well-formed replies need no repair", respond: wireReply, tournament: true, calls: withTournament,
			check: func(t *testing.T, res *Result) {
				if res.Tournament == nil || res.Tournament.Comparisons != 4 {
					t.Errorf("tournament %+v", res.Tournament)
				}
			}},
		{name: "judge: accepted below the threshold is moved to rejected",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Set("accepted_ideas/0/quality_score", 4.9)}}),
			calls:   base, want: []string{agentJudge + "/consistency"},
			check: func(t *testing.T, res *Result) {
				j := res.Iterations[0].Judgement
				last := j.RejectedIdeas[len(j.RejectedIdeas)-1]
				if len(j.AcceptedIdeas) != 3 || last.IdeaName != "Alpha 1" || last.QualityScore != 4.9 || !strings.Contains(last.RejectionReason, "below the acceptance threshold 6") {
					t.Errorf("judgement %+v", j)
				}
				if len(res.Accepted) != 3 {
					t.Errorf("%d ideas remembered, want 3", len(res.Accepted))
				}
			}},
		{name: "judge: an idea judged twice keeps its first verdict",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {judgedTwice}}),
			calls:   base, want: []string{agentJudge + "/id"},
			check: func(t *testing.T, res *Result) {
				j := res.Iterations[0].Judgement
				if len(j.AcceptedIdeas) != 4 || len(j.RejectedIdeas) != 6 {
					t.Errorf("%d accepted, %d rejected: %+v", len(j.AcceptedIdeas), len(j.RejectedIdeas), j.RejectedIdeas)
				}
			}},
		{name: "judge: a score as text is coerced",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.AsText("accepted_ideas/*/quality_score")}}),
			calls:   base, want: []string{agentJudge + "/type"},
			check: func(t *testing.T, res *Result) {
				if res.Iterations[0].Judgement.AcceptedIdeas[0].QualityScore != 8 {
					t.Errorf("score %v", res.Iterations[0].Judgement.AcceptedIdeas[0].QualityScore)
				}
			}},
		{name: "judge: a score out of range is clamped",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Set("accepted_ideas/0/impact_score", 80)}}),
			calls:   base, want: []string{agentJudge + "/range"},
			check: func(t *testing.T, res *Result) {
				if s := res.Iterations[0].Judgement.AcceptedIdeas[0].ImpactScore; s != 10 {
					t.Errorf("impact %v, want 10", s)
				}
			}},
		{name: "judge: an optional list left out stays out",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Delete("unresolved_questions")}}),
			calls:   base},
		{name: "judge: a required list left out is asked for once",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Delete("rejected_ideas")}}),
			calls:   map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 2}},
		{name: "judge: fenced JSON is read, the fence recorded",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Fence()}}),
			calls:   base, want: []string{agentJudge + "/syntax"}},
		{name: "judge: nothing judged is asked again",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Set("accepted_ideas", []any{}), openaitest.Set("rejected_ideas", []any{})}}),
			calls:   map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 2}},
		{name: "judge: nothing judged twice is kept, accepting nothing",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Set("accepted_ideas", []any{}), openaitest.Set("rejected_ideas", []any{}), openaitest.Always}}),
			calls:   map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 2}, want: []string{agentJudge + "/count"},
			check: func(t *testing.T, res *Result) {
				if len(res.Accepted) != 0 {
					t.Errorf("accepted %v", res.Accepted)
				}
			}},
		{name: "judge: a missing synthesis is asked for once",
			respond: imperfect(map[string][]openaitest.Flaw{judge: {openaitest.Delete("synthesis")}}),
			calls:   map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 2}},
		{name: "creative: fewer ideas than asked are kept",
			respond: textFlaw(wireReply, agentCreative, false, func(r openaitest.Reply) openaitest.Reply { r.Content = numbered("Few", 3); return r }),
			calls:   base, want: []string{agentCreative + "/count"},
			check: func(t *testing.T, res *Result) {
				it := res.Iterations[0]
				if !strings.Contains(it.CreativeA+it.CreativeB, "3. **Few 3**") {
					t.Errorf("short track not kept: %q %q", it.CreativeA, it.CreativeB)
				}
			}},
		{name: "creative: more ideas than asked are cut",
			respond: textFlaw(wireReply, agentCreative, false, func(r openaitest.Reply) openaitest.Reply { r.Content = numbered("Many", 9); return r }),
			calls:   base, want: []string{agentCreative + "/count"},
			check: func(t *testing.T, res *Result) {
				it := res.Iterations[0]
				both := it.CreativeA + it.CreativeB
				if !strings.Contains(both, "5. **Many 5**") || strings.Contains(both, "Many 6") {
					t.Errorf("long track not cut after 5: %q", both)
				}
			}},
		{name: "creative: prose instead of a list is kept",
			respond: textFlaw(wireReply, agentCreative, false, func(r openaitest.Reply) openaitest.Reply {
				r.Content = "One idea is a street-level **Swap Shelf**; another is a **Night Market**."
				return r
			}),
			calls: base},
		{name: "creative: an empty reply is asked again",
			respond: textFlaw(wireReply, agentCreative, false, func(r openaitest.Reply) openaitest.Reply { r.Content = ""; return r }),
			calls:   map[string]int{agentChaos: 1, agentCreative: 3, agentRefine: 2, judge: 1}},
		{name: "chaos generator: prose is its product",
			respond: textFlaw(wireReply, agentChaos, false, func(r openaitest.Reply) openaitest.Reply {
				r.Content = "Tides suggest sharing in cycles, and kites suggest lifting food on the wind."
				return r
			}),
			calls: base,
			check: func(t *testing.T, res *Result) {
				if !strings.HasPrefix(res.Iterations[0].Chaos, "Tides suggest") {
					t.Errorf("chaos %q", res.Iterations[0].Chaos)
				}
			}},
		{name: "chaos generator: cut off twice is kept",
			respond: textFlaw(wireReply, agentChaos, true, func(r openaitest.Reply) openaitest.Reply { r.FinishReason = "length"; return r }),
			calls:   map[string]int{agentChaos: 2, agentCreative: 2, agentRefine: 2, judge: 1}, want: []string{agentChaos + "/length"}},
		{name: "tournament: pairs numbered from 1 are renumbered", tournament: true,
			respond: imperfect(map[string][]openaitest.Flaw{compare: {openaitest.Add("results/*/pair", 1)}}),
			calls:   withTournament, want: []string{agentCompare + "/index"},
			check: func(t *testing.T, res *Result) { wantComparisons(t, res, 4) }},
		{name: "tournament: a pair that does not exist is dropped", tournament: true,
			respond: imperfect(map[string][]openaitest.Flaw{compare: {openaitest.Map("results", func(v any) any {
				return append(v.([]any), map[string]any{"pair": 7, "winner": "b", "reason": "?"})
			})}}),
			calls: withTournament, want: []string{agentCompare + "/index"},
			check: func(t *testing.T, res *Result) { wantComparisons(t, res, 4) }},
		{name: "tournament: a pair answered twice keeps its first verdict", tournament: true,
			respond: imperfect(map[string][]openaitest.Flaw{compare: {openaitest.Map("results", func(v any) any {
				l := v.([]any)
				return append(l, map[string]any{"pair": 0, "winner": "b", "reason": "again"})
			})}}),
			calls: withTournament, want: []string{agentCompare + "/index"},
			check: func(t *testing.T, res *Result) { wantComparisons(t, res, 4) }},
		{name: "tournament: a winner in other words is mapped", tournament: true,
			respond: imperfect(map[string][]openaitest.Flaw{compare: {openaitest.Set("results/0/winner", "Second")}}),
			calls:   withTournament, want: []string{agentCompare + "/enum"},
			check: func(t *testing.T, res *Result) { wantComparisons(t, res, 4) }},
		{name: "tournament: a missing verdict is asked for once", tournament: true,
			respond: imperfect(map[string][]openaitest.Flaw{compare: {openaitest.Drop("results", 0)}}),
			calls:   map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 1, compare: 3},
			check:   func(t *testing.T, res *Result) { wantComparisons(t, res, 4) }},
		{name: "tournament: a verdict missing twice leaves the pair undecided", tournament: true,
			respond: imperfect(map[string][]openaitest.Flaw{compare: {openaitest.Drop("results", 0), openaitest.Always}}),
			calls:   map[string]int{agentChaos: 1, agentCreative: 2, agentRefine: 2, judge: 1, compare: 4}, want: []string{agentCompare + "/count"},
			check: func(t *testing.T, res *Result) { wantComparisons(t, res, 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, calls, err := wireChaos(t, tt.respond, func(p *Params) { p.Tournament = tt.tournament })
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(calls) != fmt.Sprint(tt.calls) {
				t.Errorf("calls %v, want %v", calls, tt.calls)
			}
			if res.Repairs == nil {
				t.Fatal("repairs is nil")
			}
			for _, w := range tt.want {
				agent, rule, _ := strings.Cut(w, "/")
				if len(repairsOf(res.Repairs, agent, rule)) == 0 {
					t.Errorf("no %s repair of %s: %v", rule, agent, res.Repairs)
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

// wantComparisons checks the tournament of the four accepted ideas: two
// rounds of two pairs, n comparisons decided, and a win and a loss for
// each.
func wantComparisons(t *testing.T, res *Result, n int) {
	t.Helper()
	tr := res.Tournament
	if tr == nil || len(tr.Ratings) != 4 || tr.Rounds != 2 || tr.Comparisons != n {
		t.Fatalf("tournament %+v, want %d comparisons", tr, n)
	}
	games := 0
	for _, r := range tr.Ratings {
		games += r.Wins + r.Losses
	}
	if games != 2*n {
		t.Errorf("%d games for %d comparisons", games, n)
	}
}

// TestTournamentFailureKeepsIterations: a tournament whose replies are
// never usable fails the run at that step, with the finished iterations
// returned, and a resume on a healthy model replays them and runs only the
// tournament.
func TestTournamentFailureKeepsIterations(t *testing.T) {
	var mu sync.Mutex
	healthy := false
	respond := func(req *openaitest.ChatRequest) openaitest.Reply {
		r := wireReply(req)
		mu.Lock()
		defer mu.Unlock()
		if !healthy && req.ResponseFormat != nil && req.ResponseFormat.JSONSchema.Name == "chaos_comparisons" {
			r.Content = "I would pick the first idea every time."
		}
		return r
	}
	srv := openaitest.NewServer(t, respond)
	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b"})
	db := newDB(t)
	pipe, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	p := params(func(p *Params) { p.IdeasPerTrack, p.Tournament = 5, true })
	e := &engine.Engine{Store: db, Client: client}
	ctx := context.Background()
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "chaos", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	res, err := pipe.Run(ctx, r, p, func(Iteration, []madspark.RememberedIdea) error { written++; return nil })
	var re *structured.ReplyError
	if !errors.As(err, &re) || re.Agent != agentCompare || !strings.HasPrefix(err.Error(), "tournament: ") {
		t.Fatalf("err = %v", err)
	}
	if res == nil || res.FailedStep != "tournament" || len(res.Iterations) != 1 || len(res.Accepted) != 4 || written != 1 || res.Tournament != nil {
		t.Fatalf("partial result %+v", res)
	}
	if err := r.Finish(ctx, res, err); err != nil {
		t.Fatal(err)
	}
	before := len(srv.Requests())
	mu.Lock()
	healthy = true
	mu.Unlock()
	r2, err := e.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := pipe.Run(ctx, r2, p, nil)
	if err != nil || res2.Tournament == nil || res2.FailedStep != "" {
		t.Fatalf("resumed: %v %+v", err, res2)
	}
	for _, q := range srv.Requests()[before:] {
		if q.ResponseFormat == nil || q.ResponseFormat.JSONSchema.Name != "chaos_comparisons" {
			t.Fatalf("the resumed run called %s again", textAgent(q))
		}
	}
}
