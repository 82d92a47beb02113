package assess

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// wireAnalysis is an analysis of at least words words with every section
// but skip, and extra at the end.
func wireAnalysis(words int, skip, extra string) string {
	var b strings.Builder
	for _, s := range Sections {
		if s.Title != skip {
			fmt.Fprintf(&b, "## %s\n\nThis covers %s.\n\n", s.Title, strings.ToLower(s.Title))
		}
	}
	for n := CountWords(b.String()); n < words; n++ {
		b.WriteString("detail ")
	}
	return b.String() + extra
}

var topSlugsRE = regexp.MustCompile(`for the slugs (.+), in that order`)

// wireReply answers every assess agent well, as a model would, by the
// schema name of the request; analyst gives the n-th analysis (from 1).
func wireReply(analyst func(n int) string) func(req *openaitest.ChatRequest) openaitest.Reply {
	var mu sync.Mutex
	analyses := 0
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
			mu.Lock()
			analyses++
			n := analyses
			mu.Unlock()
			return openaitest.Reply{Content: analyst(n)}
		}
		var v any
		switch name := req.ResponseFormat.JSONSchema.Name; name {
		case "assess_research_plan":
			v = map[string]any{"queries": []any{
				map[string]any{"query": "refurbished lab equipment market size", "purpose": "size the market"},
				map[string]any{"query": "lab equipment rental competitors", "purpose": "find the competition"},
			}}
		case "assess_reviewer_feedback":
			v = map[string]any{"overall_assessment": "Sound.", "strengths": []string{"clear"}, "critical_issues": []any{}, "improvements": []any{},
				"minor_suggestions": []string{}, "iteration_recommendation": "approve", "iteration_reason": "The market section needs real figures."}
		case "assess_fact_check":
			v = map[string]any{"claims": []any{map[string]any{"claim": "Labs replace equipment every five years", "section": "The Problem",
				"status": "supported", "source": "", "note": "common knowledge"}}, "verdict": "approve", "summary": "Claims hold."}
		case "assess_judgement":
			g := map[string]any{"grade": "B", "rationale": "solid"}
			v = map[string]any{"grades": map[string]any{"market_potential": g, "competitive_landscape": g, "technical_feasibility": g,
				"capital_requirements": g, "regulatory_risks": g, "execution_difficulty": g, "evidence_quality": g},
				"summary": "A fair idea.", "recommendation": "pursue"}
		case "assess_synthesis":
			var top []any
			if m := topSlugsRE.FindStringSubmatch(req.Prompt()); m != nil {
				for _, slug := range strings.Split(m[1], ", ") {
					top = append(top, map[string]any{"slug": slug, "why": "It ranks here for its grades."})
				}
			}
			v = map[string]any{"overview": "A varied field.", "top": top, "patterns": []string{"thin evidence"}, "recommendation": "Pursue the first."}
		default:
			return openaitest.Reply{Content: "unexpected schema " + name}
		}
		b, _ := json.Marshal(v)
		return openaitest.Reply{Content: string(b), PromptTokens: 100, CompletionTokens: 50}
	}
}

// wireRun runs one assessment through the OpenAI provider against the wire
// fake, its replies changed by flaws, and returns the result and the
// requests the server got, by schema name ("" for the analyst's text).
func wireRun(t *testing.T, cfg Config, flaws map[string][]openaitest.Flaw, analyst func(n int) string, p Params) (*Result, map[string]int, error) {
	t.Helper()
	srv := openaitest.NewServer(t, openaitest.Imperfect(wireReply(analyst), flaws))
	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test", HTTPClient: srv.Client()})
	pipe, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := assessOver(t, &engine.Engine{Store: newDB(t), Client: client}, pipe, p)
	return res, callsBySchema(srv), err
}

// assessOver runs one assessment with e.
func assessOver(t *testing.T, e *engine.Engine, pipe *Pipeline, p Params) (*Result, error) {
	t.Helper()
	ctx := context.Background()
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "assess", Mode: "live", Params: p.Job()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(ctx, r, p)
	if ferr := r.Finish(ctx, res, err); ferr != nil {
		t.Fatal(ferr)
	}
	return res, err
}

func callsBySchema(srv *openaitest.Server) map[string]int {
	calls := map[string]int{}
	for _, req := range srv.Requests() {
		name := ""
		if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
			name = req.ResponseFormat.JSONSchema.Name
		}
		calls[name]++
	}
	return calls
}

// TestAgentsRepairImperfectReplies drives every agent of the pipeline
// through the OpenAI wire with each kind of imperfect but usable reply it
// can get, and checks the repair recorded, the value kept and the calls
// made: a deterministic repair costs no second call, a problem only the
// model can fix costs one.
func TestAgentsRepairImperfectReplies(t *testing.T) {
	const (
		plan     = "assess_research_plan"
		review   = "assess_reviewer_feedback"
		facts    = "assess_fact_check"
		judgeRep = "assess_judgement"
	)
	whole := func(int) string { return wireAnalysis(140, "", "") }
	for _, tc := range []struct {
		name    string
		web     bool
		mod     func(*Params)
		analyst func(n int) string
		flaws   map[string][]openaitest.Flaw
		// agent, rule and a piece of the action of the repair expected;
		// agent "" for none at all.
		agent, rule, action string
		calls               map[string]int
		check               func(t *testing.T, res *Result)
	}{{
		name:    "analysis below the word target is kept and marked",
		analyst: func(int) string { return wireAnalysis(80, "", "") },
		agent:   agentAnalyst, rule: "length", action: "below the 100-word target: kept",
		calls: map[string]int{"": 1},
		check: func(t *testing.T, res *Result) {
			if !res.Final().Short || res.Final().Words >= 100 {
				t.Errorf("short %v, %d words", res.Final().Short, res.Final().Words)
			}
		},
	}, {
		name:    "a missing section is asked for once, then kept",
		analyst: func(int) string { return wireAnalysis(140, "Milestones", "") },
		agent:   agentAnalyst, rule: "count", action: "kept without the sections Milestones",
		calls: map[string]int{"": 2},
	}, {
		name: "a missing section asked for and sent",
		analyst: func(n int) string {
			if n == 1 {
				return wireAnalysis(140, "Why Now", "")
			}
			return wireAnalysis(140, "", "")
		},
		calls: map[string]int{"": 2},
		check: func(t *testing.T, res *Result) {
			if m := MissingSections(res.Final().Analysis); len(m) != 0 {
				t.Errorf("missing %v", m)
			}
		},
	}, {
		name: "a URL without web research is removed",
		analyst: func(int) string {
			return wireAnalysis(140, "", "\n- Market report, [IBISWorld](https://made.up/report)\n")
		},
		agent: agentAnalyst, rule: "reference", action: "https://made.up/report",
		calls: map[string]int{"": 1},
		check: func(t *testing.T, res *Result) {
			if a := res.Final().Analysis; strings.Contains(a, "made.up") || !strings.Contains(a, "Market report, IBISWorld") {
				t.Errorf("analysis ends %q", a[len(a)-60:])
			}
		},
	}, {
		name:    "a URL no search returned is removed",
		web:     true,
		analyst: func(int) string { return wireAnalysis(140, "", "\nSee https://made.up/x.\n") },
		agent:   agentAnalyst, rule: "reference", action: "https://made.up/x",
		calls: map[string]int{"": 1, plan: 1},
	}, {
		name:  "more queries than allowed are cut",
		web:   true,
		mod:   func(p *Params) { p.MaxWebsearches = 1 },
		agent: agentAnalyst, rule: "budget", action: "2 queries → the first 1",
		calls: map[string]int{"": 1, plan: 1},
		check: func(t *testing.T, res *Result) {
			if len(res.Queries) != 1 {
				t.Errorf("queries %v", res.Queries)
			}
		},
	}, {
		name:  "a repeated query is dropped",
		web:   true,
		flaws: map[string][]openaitest.Flaw{plan: {openaitest.Set("queries/1/query", "Refurbished lab equipment market size")}},
		agent: agentAnalyst, rule: "count", action: "1 repeated query dropped",
		calls: map[string]int{"": 1, plan: 1},
		check: func(t *testing.T, res *Result) {
			if len(res.Queries) != 1 {
				t.Errorf("queries %v", res.Queries)
			}
		},
	}, {
		name:  "an empty plan is asked again, then kept",
		web:   true,
		flaws: map[string][]openaitest.Flaw{plan: {openaitest.Keep("queries", 0), openaitest.Always}},
		agent: agentAnalyst, rule: "count", action: "kept as sent",
		calls: map[string]int{"": 1, plan: 2},
		check: func(t *testing.T, res *Result) {
			if len(res.Queries) != 0 || res.WebTools {
				t.Errorf("queries %v", res.Queries)
			}
		},
	}, {
		name:  "the reviewer's accept is approve",
		mod:   func(p *Params) { p.Mode = AnalyzeAndReview },
		flaws: map[string][]openaitest.Flaw{review: {openaitest.Set("iteration_recommendation", "Accept")}},
		agent: agentReviewer, rule: "enum", action: `"Accept" → "approve"`,
		calls: map[string]int{"": 1, review: 1},
		check: func(t *testing.T, res *Result) {
			if !res.Approved {
				t.Error("not approved")
			}
		},
	}, {
		name:  "a reject without issues takes its reason as the improvement",
		mod:   func(p *Params) { p.Mode, p.MaxIterations = AnalyzeAndReview, 1 },
		flaws: map[string][]openaitest.Flaw{review: {openaitest.Set("iteration_recommendation", "revise")}},
		agent: agentReviewer, rule: "consistency", action: "its reason taken as the improvement",
		calls: map[string]int{"": 1, review: 1},
		check: func(t *testing.T, res *Result) {
			fb := res.Final().Feedback
			if res.Approved || fb.IterationRecommendation != Reject || len(fb.Improvements) != 1 || fb.Improvements[0].Suggestion != "The market section needs real figures." {
				t.Errorf("feedback %+v", fb)
			}
		},
	}, {
		name:  "a reviewer's required text left out is asked for once",
		mod:   func(p *Params) { p.Mode = AnalyzeAndReview },
		flaws: map[string][]openaitest.Flaw{review: {openaitest.Delete("overall_assessment")}},
		calls: map[string]int{"": 1, review: 2},
	}, {
		name:  "a reviewer's optional list left out stays out",
		mod:   func(p *Params) { p.Mode = AnalyzeAndReview },
		flaws: map[string][]openaitest.Flaw{review: {openaitest.Delete("minor_suggestions")}},
		calls: map[string]int{"": 1, review: 1},
	}, {
		name:  "the fact checker's approve follows the evidence",
		mod:   func(p *Params) { p.Mode, p.FactCheck, p.MaxIterations = AnalyzeAndReview, true, 1 },
		flaws: map[string][]openaitest.Flaw{facts: {openaitest.Set("claims/0/status", "unsupported")}},
		agent: agentFactChecker, rule: "consistency", action: "verdict approve → reject",
		calls: map[string]int{"": 1, review: 1, facts: 1},
		check: func(t *testing.T, res *Result) {
			if fc := res.Final().FactCheck; fc.Verdict != Reject || res.Approved || len(fc.Problems()) != 1 {
				t.Errorf("fact check %+v", fc)
			}
		},
	}, {
		name:  "a claim's source no search returned is removed",
		mod:   func(p *Params) { p.Mode, p.FactCheck = AnalyzeAndReview, true },
		flaws: map[string][]openaitest.Flaw{facts: {openaitest.Set("claims/0/source", "https://made.up/s")}},
		agent: agentFactChecker, rule: "reference", action: "source https://made.up/s",
		calls: map[string]int{"": 1, review: 1, facts: 1},
		check: func(t *testing.T, res *Result) {
			if c := res.Final().FactCheck.Claims[0]; c.Source != "" {
				t.Errorf("claim %+v", c)
			}
		},
	}, {
		name:  "the fact checker's verdict in other words",
		mod:   func(p *Params) { p.Mode, p.FactCheck = AnalyzeAndReview, true },
		flaws: map[string][]openaitest.Flaw{facts: {openaitest.Set("verdict", "Approved")}},
		agent: agentFactChecker, rule: "enum", action: `"Approved" → "approve"`,
		calls: map[string]int{"": 1, review: 1, facts: 1},
	}, {
		name:  "no claims is asked again, then kept",
		mod:   func(p *Params) { p.Mode, p.FactCheck = AnalyzeAndReview, true },
		flaws: map[string][]openaitest.Flaw{facts: {openaitest.Keep("claims", 0), openaitest.Always}},
		agent: agentFactChecker, rule: "count", action: "kept as sent",
		calls: map[string]int{"": 1, review: 1, facts: 2},
	}, {
		name:  "the judge's grades and recommendation in other words",
		mod:   func(p *Params) { p.Mode = AnalyzeReviewAndJudge },
		flaws: map[string][]openaitest.Flaw{judgeRep: {openaitest.Set("grades/market_potential/grade", "a-"), openaitest.Set("recommendation", "Proceed")}},
		agent: agentJudge, rule: "enum", action: `"Proceed" → "pursue"`,
		calls: map[string]int{"": 1, review: 1, judgeRep: 1},
		check: func(t *testing.T, res *Result) {
			if ev := res.Evaluation; ev.Grades.MarketPotential.Grade != "A" || ev.Recommendation != Pursue || ev.WeightedScore != 8 {
				t.Errorf("evaluation %+v", ev)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			if tc.web {
				cfg.Searcher = newTavily(t, "").provider()
			}
			p := params(t.TempDir(), func(p *Params) { p.MinWords = 100 })
			if tc.mod != nil {
				tc.mod(&p)
			}
			analyst := tc.analyst
			if analyst == nil {
				analyst = whole
			}
			res, calls, err := wireRun(t, cfg, tc.flaws, analyst, p)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(calls) != fmt.Sprint(tc.calls) {
				t.Errorf("calls %v, want %v", calls, tc.calls)
			}
			switch {
			case tc.agent == "" && len(res.Repairs) != 0:
				t.Errorf("repairs %+v, want none", res.Repairs)
			case tc.agent != "" && !hasRepair(res.Repairs, tc.agent, tc.rule, tc.action):
				t.Errorf("repairs %+v, want %s %s %q", res.Repairs, tc.agent, tc.rule, tc.action)
			}
			for _, r := range res.Repairs {
				if r.Step == "" {
					t.Errorf("repair without its step: %+v", r)
				}
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// TestSynthesisRepairsTheTop: a synthesizer that lists unknown slugs, or
// the top out of order or short, is repaired to the computed top in one
// call; the reason for an idea it left out is its judge's summary.
func TestSynthesisRepairsTheTop(t *testing.T) {
	dir := t.TempDir()
	for _, idea := range []string{"A subscription service for refurbished lab equipment", "A marketplace for used pianos"} {
		p := params(dir, func(p *Params) { p.Idea, p.MinWords, p.Mode = idea, 100, AnalyzeReviewAndJudge })
		if _, _, err := wireRun(t, Config{}, nil, func(int) string { return wireAnalysis(140, "", "") }, p); err != nil {
			t.Fatal(err)
		}
	}
	ranked, _, err := LoadEvaluations(dir)
	if err != nil || len(ranked) != 2 {
		t.Fatalf("%d ranked: %v", len(ranked), err)
	}
	for _, tc := range []struct {
		name string
		top  []any
	}{
		{"unknown slug", []any{map[string]any{"slug": "made-up", "why": "x"}, map[string]any{"slug": ranked[0].Slug, "why": "first"}}},
		{"out of order", []any{map[string]any{"slug": ranked[1].Slug, "why": "second"}, map[string]any{"slug": ranked[0].Slug, "why": "first"}}},
		{"one left out", []any{map[string]any{"slug": ranked[0].Slug, "why": "first"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Imperfect(wireReply(nil), map[string][]openaitest.Flaw{"assess_synthesis": {openaitest.Set("top", tc.top)}}))
			client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test", HTTPClient: srv.Client()})
			pipe, _ := New(Config{})
			eng := &engine.Engine{Store: newDB(t), Client: client}
			r, err := eng.Start(context.Background(), runInfo(), nil)
			if err != nil {
				t.Fatal(err)
			}
			s, err := pipe.Synthesize(context.Background(), r, SynthesisParams{OutputDir: dir, Top: 2})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d calls", n)
			}
			if len(s.Narrative.Top) != 2 || s.Narrative.Top[0].Slug != ranked[0].Slug || s.Narrative.Top[0].Why != "first" || s.Narrative.Top[1].Slug != ranked[1].Slug {
				t.Errorf("top %+v", s.Narrative.Top)
			}
			if w := s.Narrative.Top[1].Why; w != "second" && !strings.Contains(w, ranked[1].Summary) {
				t.Errorf("why of the second: %q", w)
			}
			if !hasRepair(s.Repairs, agentSynthesizer, "reference", "→ "+ranked[0].Slug+", "+ranked[1].Slug) {
				t.Errorf("repairs %+v", s.Repairs)
			}
			if !strings.Contains(s.Report(), "Repairs: 1 to the synthesizer's reply") {
				t.Errorf("report:\n%s", s.Report())
			}
		})
	}
}

// TestMockRunsHaveNoRepairs: the mock provider's replies are well formed,
// so a mock run repairs nothing, in every mode.
func TestMockRunsHaveNoRepairs(t *testing.T) {
	for _, mode := range []Mode{Analyze, AnalyzeAndReview, AnalyzeReviewAndJudge} {
		h := newHarness(t, Config{Mock: true}, nil)
		res, r, err := h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.Mode, p.FactCheck = mode, mode.Reviews() }))
		if err != nil {
			t.Fatal(err)
		}
		if res.Repairs == nil || len(res.Repairs) != 0 || len(r.Repairs()) != 0 {
			t.Errorf("%s: repairs %#v", mode, res.Repairs)
		}
		b, _ := json.Marshal(res)
		if !strings.Contains(string(b), `"repairs":[]`) {
			t.Errorf("%s: the result's JSON has no empty repairs list", mode)
		}
	}
}
