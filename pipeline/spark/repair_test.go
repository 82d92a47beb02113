package spark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/structured"
)

var (
	wireIdeas = regexp.MustCompile(`Generate (\d+) innovative ideas`)
	wireItem  = regexp.MustCompile(`(?m)^\[(\d+)\] `)
)

// firstUser is the first user message of a request: the agent's prompt,
// also when the request is a re-ask.
func firstUser(req *openaitest.ChatRequest) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// wireStep names the step a wire request belongs to, from its schema and
// prompt: the re-evaluations are of the improved ideas ("Better idea k").
func wireStep(req *openaitest.ChatRequest) string {
	if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
		return ""
	}
	re := strings.Contains(firstUser(req), "Better idea")
	switch name := req.ResponseFormat.JSONSchema.Name; name {
	case "spark_ideas":
		return "generate"
	case "spark_evaluations":
		if re {
			return "re_evaluate"
		}
		return "evaluate"
	case "spark_multidimensional":
		if re {
			return "re_multidim"
		}
		return "multidim"
	default:
		return strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(name, "spark_"), "s"), "")
	}
}

// wireReply answers every spark agent well, from what the wire request
// says. Idea i of the generation scores 4+i; improved idea k scores 6+k.
func wireReply(req *openaitest.ChatRequest) openaitest.Reply {
	prompt := firstUser(req)
	n := len(wireItem.FindAllString(prompt, -1))
	items := func(f func(i int) map[string]any) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = f(i)
			out[i]["index"] = i
		}
		return out
	}
	point := []string{"a point"}
	var v any
	switch wireStep(req) {
	case "generate":
		var k int
		fmt.Sscan(wireIdeas.FindStringSubmatch(prompt)[1], &k)
		ideas := make([]map[string]any, k)
		for i := range ideas {
			ideas[i] = map[string]any{"title": fmt.Sprintf("Idea %d", i), "description": fmt.Sprintf("Approach %c works through mechanism %d.", 'A'+i, i)}
		}
		v = map[string]any{"ideas": ideas}
	case "evaluate":
		v = map[string]any{"evaluations": items(func(i int) map[string]any {
			return map[string]any{"score": 4 + i, "critique": fmt.Sprintf("Critique %d.", i), "strengths": point, "weaknesses": point, "suggestions": point}
		})}
	case "re_evaluate":
		v = map[string]any{"evaluations": items(func(i int) map[string]any {
			return map[string]any{"score": 6 + i, "critique": fmt.Sprintf("Better critique %d.", i), "strengths": point, "weaknesses": point, "suggestions": point}
		})}
	case "multidim", "re_multidim":
		v = map[string]any{"evaluations": items(func(i int) map[string]any {
			return map[string]any{"scores": map[string]any{"feasibility": 6, "innovation": 6, "impact": 6, "cost_effectiveness": 6, "scalability": 6, "risk_assessment": 6, "sustainability": 6}, "rationale": "Balanced."}
		})}
	case "advocacy":
		v = map[string]any{"advocacies": items(func(i int) map[string]any {
			return map[string]any{"strengths": []string{fmt.Sprintf("strength %d", i)}, "opportunities": point, "addressing_concerns": point}
		})}
	case "skepticism":
		v = map[string]any{"skepticisms": items(func(i int) map[string]any {
			return map[string]any{"critical_flaws": point, "risks_and_challenges": []string{fmt.Sprintf("risk %d", i)}, "questionable_assumptions": point, "missing_considerations": point}
		})}
	case "inference":
		v = map[string]any{"inferences": items(func(i int) map[string]any {
			return map[string]any{"inference_chain": []string{"a", "b"}, "conclusion": fmt.Sprintf("Conclusion %d.", i), "confidence": 0.7, "contradictions": point, "improvements": point}
		})}
	case "improvement":
		v = map[string]any{"improvements": items(func(i int) map[string]any {
			return map[string]any{"title": fmt.Sprintf("Better idea %d", i), "description": "Improved.", "key_improvements": point}
		})}
	default:
		return openaitest.Reply{Content: "unexpected request"}
	}
	b, _ := json.Marshal(v)
	return openaitest.Reply{Content: string(b), PromptTokens: 10, CompletionTokens: 5}
}

// reFlaws applies flaws to the first re-evaluation request only (or to
// every one with always), which shares its schema with the evaluation.
func reFlaws(base func(*openaitest.ChatRequest) openaitest.Reply, always bool, flaws []openaitest.Flaw) func(*openaitest.ChatRequest) openaitest.Reply {
	var mu sync.Mutex
	seen := 0
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		reply := base(req)
		if wireStep(req) != "re_evaluate" {
			return reply
		}
		mu.Lock()
		n := seen
		seen++
		mu.Unlock()
		if n == 0 || always {
			reply.Content = openaitest.Apply(reply.Content, flaws...)
		}
		return reply
	}
}

// appendItem adds item to the list it is applied to.
func appendItem(item map[string]any) func(any) any {
	return func(v any) any {
		list, _ := v.([]any)
		return append(list, item)
	}
}

// wireParams are the parameters of the repair tests: every agent on, the
// novelty filter off so that the ideas are exactly the wire's.
func wireParams(mod func(*Params)) Params {
	return params("urban farming", func(p *Params) {
		p.EnhancedReasoning, p.LogicalInference, p.NoveltyFilter = true, true, false
		if mod != nil {
			mod(p)
		}
	})
}

// TestAgentsRepairImperfectReplies runs the pipeline through the OpenAI
// provider against the wire fake, each case with one class of imperfect
// reply from one agent, and checks the repair recorded (agent, rule, what
// was done), the value produced, and the calls made: a deterministic
// repair costs no re-ask; a missing item costs one.
func TestAgentsRepairImperfectReplies(t *testing.T) {
	type tc struct {
		name   string
		schema string // the schema whose first reply is flawed
		re     bool   // the re-evaluation's reply is flawed instead
		flaws  []openaitest.Flaw
		mod    func(*Params)
		// calls are the calls of a step, where not 1.
		calls map[string]int
		// repairs are "agent rule: action" of every repair, sorted; action
		// is matched as a substring.
		repairs []string
		err     string
		check   func(t *testing.T, res *Result)
	}
	always := openaitest.Always
	best := func(idea string, score float64) func(*testing.T, *Result) {
		return func(t *testing.T, res *Result) {
			if c := res.Candidates[0]; !strings.HasPrefix(c.Idea, idea) || c.InitialScore != score {
				t.Fatalf("best candidate %q scored %v, want %s with %v", c.Idea, c.InitialScore, idea, score)
			}
		}
	}
	tests := []tc{
		// IdeaGenerator.
		{name: "generate/fewer, then all", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Keep("ideas", 4)},
			calls: map[string]int{"generate": 2},
			check: func(t *testing.T, res *Result) {
				if res.Generated != 5 {
					t.Fatalf("generated %d", res.Generated)
				}
			}},
		{name: "generate/fewer", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Keep("ideas", 4), always},
			calls:   map[string]int{"generate": 2},
			repairs: []string{"spark.generate count: 4 ideas kept of 5 asked"},
			check: func(t *testing.T, res *Result) {
				if res.Generated != 4 || len(res.Candidates) != 3 {
					t.Fatalf("generated %d, %d candidates", res.Generated, len(res.Candidates))
				}
			}},
		{name: "generate/fewer than the top", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Keep("ideas", 2), always},
			calls:   map[string]int{"generate": 2},
			repairs: []string{"spark.generate count: 2 ideas kept of 5 asked", "spark.rank count: 3 top candidates asked, 2 ideas to rank"},
			check: func(t *testing.T, res *Result) {
				if res.Generated != 2 || len(res.Candidates) != 2 {
					t.Fatalf("generated %d, %d candidates", res.Generated, len(res.Candidates))
				}
			}},
		{name: "generate/more", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Map("ideas", appendItem(map[string]any{"title": "Extra", "description": "One too many."}))},
			repairs: []string{"spark.generate count: 6 ideas cut to the 5 asked"},
			check: func(t *testing.T, res *Result) {
				if res.Generated != 5 {
					t.Fatalf("generated %d", res.Generated)
				}
			}},
		{name: "generate/none", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Set("ideas", []any{}), always},
			calls: map[string]int{"generate": 2}, err: "want 5 ideas, got none"},
		{name: "generate/blank idea", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Set("ideas/1/title", ""), openaitest.Set("ideas/1/description", " "), always},
			calls:   map[string]int{"generate": 2},
			repairs: []string{"spark.generate count: 4 ideas kept of 5 asked", "spark.generate missing: an empty item dropped"},
			check: func(t *testing.T, res *Result) {
				if res.Generated != 4 || strings.HasPrefix(res.Candidates[2].Idea, "Idea 1") {
					t.Fatalf("generated %d, candidates %+v", res.Generated, res.Candidates)
				}
			}},
		{name: "generate/prose", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Prose("Here are five ideas: rooftop gardens, and more.")},
			calls: map[string]int{"generate": 2}},
		{name: "generate/fenced", schema: "spark_ideas", flaws: []openaitest.Flaw{openaitest.Fence()},
			repairs: []string{"spark.generate syntax: code fence", "spark.generate syntax: text around the JSON"}},

		// Critic.
		{name: "evaluate/one-based", schema: "spark_evaluations", flaws: []openaitest.Flaw{openaitest.Add("evaluations/*/index", 1)},
			repairs: []string{"spark.evaluate index: indices counted from 1 renumbered: 1..5 → 0..4"},
			check:   best("Idea 4", 8)},
		{name: "evaluate/missing, then sent", schema: "spark_evaluations", flaws: []openaitest.Flaw{openaitest.Drop("evaluations", 4)},
			calls: map[string]int{"evaluate": 2}, check: best("Idea 4", 8)},
		{name: "evaluate/missing", schema: "spark_evaluations", flaws: []openaitest.Flaw{openaitest.Drop("evaluations", 4), always},
			calls:   map[string]int{"evaluate": 2},
			repairs: []string{"spark.evaluate index: no item for index 4: idea 4 left out of the ranking"},
			check: func(t *testing.T, res *Result) {
				var got []string
				for _, c := range res.Candidates {
					got = append(got, fmt.Sprintf("%s=%v", c.Idea[:6], c.InitialScore))
				}
				if strings.Join(got, ",") != "Idea 3=7,Idea 2=6,Idea 1=5" {
					t.Fatalf("candidates %v", got)
				}
			}},
		{name: "evaluate/repeated", schema: "spark_evaluations",
			flaws:   []openaitest.Flaw{openaitest.Map("evaluations", appendItem(map[string]any{"index": 0, "score": 10, "critique": "Again.", "strengths": []any{}, "weaknesses": []any{}, "suggestions": []any{}}))},
			repairs: []string{"spark.evaluate index: second item for index 0 dropped"},
			check:   best("Idea 4", 8)},
		{name: "evaluate/out of range", schema: "spark_evaluations",
			flaws:   []openaitest.Flaw{openaitest.Map("evaluations", appendItem(map[string]any{"index": 9, "score": 10, "critique": "Stray.", "strengths": []any{}, "weaknesses": []any{}, "suggestions": []any{}}))},
			repairs: []string{"spark.evaluate index: item with index 9 dropped (out of range 0..4)"},
			check:   best("Idea 4", 8)},
		{name: "evaluate/nothing usable", schema: "spark_evaluations", flaws: []openaitest.Flaw{openaitest.Add("evaluations/*/index", 10), always},
			calls: map[string]int{"evaluate": 2}, err: "stage evaluate"},
		{name: "evaluate/score as text", schema: "spark_evaluations", flaws: []openaitest.Flaw{openaitest.AsText("evaluations/4/score")},
			repairs: []string{"spark.evaluate type: "},
			check:   best("Idea 4", 8)},
		{name: "evaluate/score above maximum", schema: "spark_evaluations", flaws: []openaitest.Flaw{openaitest.Set("evaluations/4/score", 10.5)},
			repairs: []string{"spark.evaluate range: 10.5 → 10"},
			check:   best("Idea 4", 10)},
		{name: "re_evaluate/missing", re: true, flaws: []openaitest.Flaw{openaitest.Drop("evaluations", 0), always},
			calls:   map[string]int{"re_evaluate": 2},
			repairs: []string{"spark.evaluate index: no item for index 0: improved idea 0 keeps its initial score"},
			check: func(t *testing.T, res *Result) {
				c := res.Candidates[0]
				if c.ImprovedScore != c.InitialScore || c.ScoreDelta != 0 || res.Candidates[1].ImprovedScore != 7 {
					t.Fatalf("candidates %+v", res.Candidates)
				}
			}},
		{name: "re_evaluate/one-based", re: true, flaws: []openaitest.Flaw{openaitest.Add("evaluations/*/index", 1)},
			repairs: []string{"spark.evaluate index: 1..3 → 0..2"},
			check: func(t *testing.T, res *Result) {
				if res.Candidates[0].ImprovedScore != 6 || res.Candidates[2].ImprovedScore != 8 {
					t.Fatalf("candidates %+v", res.Candidates)
				}
			}},

		// Multi-dimensional evaluation.
		{name: "multidim/missing", schema: "spark_multidimensional", flaws: []openaitest.Flaw{openaitest.Drop("evaluations", 4), always},
			calls:   map[string]int{"multidim": 2},
			repairs: []string{"spark.multidim index: idea 4 has no multi-dimensional evaluation"},
			check: func(t *testing.T, res *Result) {
				if res.Candidates[0].MultiDimensionalEvaluation != nil || res.Candidates[1].MultiDimensionalEvaluation == nil || res.Candidates[0].ImprovedMultiDimensionalEvaluation == nil {
					t.Fatalf("multi-dimensional evaluations wrong")
				}
			}},
		{name: "multidim/one-based", schema: "spark_multidimensional", flaws: []openaitest.Flaw{openaitest.Add("evaluations/*/index", 1)},
			repairs: []string{"spark.multidim index: 1..5 → 0..4"}},
		{name: "multidim/score out of range", schema: "spark_multidimensional", flaws: []openaitest.Flaw{openaitest.Set("evaluations/4/scores/feasibility", 11)},
			repairs: []string{"spark.multidim range: 11 → 10"},
			check: func(t *testing.T, res *Result) {
				if m := res.Candidates[0].MultiDimensionalEvaluation; m.Dimensions.Feasibility != 10 {
					t.Fatalf("dimensions %+v", m.Dimensions)
				}
			}},

		// Advocate.
		{name: "advocate/missing", schema: "spark_advocacy", flaws: []openaitest.Flaw{openaitest.Drop("advocacies", 1), always},
			calls:   map[string]int{"advocacy": 2},
			repairs: []string{"spark.advocate index: candidate 1 kept without advocacy"},
			check: func(t *testing.T, res *Result) {
				c := res.Candidates[1]
				if c.Advocacy != "" || c.Details.Advocacy != nil || c.ImprovedIdea == "" || res.Candidates[0].Details.Advocacy == nil {
					t.Fatalf("candidate %+v", c)
				}
			}},
		{name: "advocate/one-based", schema: "spark_advocacy", flaws: []openaitest.Flaw{openaitest.Add("advocacies/*/index", 1)},
			repairs: []string{"spark.advocate index: 1..3 → 0..2"},
			check: func(t *testing.T, res *Result) {
				if !strings.Contains(res.Candidates[2].Advocacy, "strength 2") {
					t.Fatalf("advocacy %q", res.Candidates[2].Advocacy)
				}
			}},
		{name: "advocate/index as text", schema: "spark_advocacy", flaws: []openaitest.Flaw{openaitest.AsText("advocacies/*/index")},
			repairs: []string{"spark.advocate type: ", "spark.advocate type: ", "spark.advocate type: "}},

		// Skeptic.
		{name: "skeptic/missing", schema: "spark_skepticism", flaws: []openaitest.Flaw{openaitest.Drop("skepticisms", 2), always},
			calls:   map[string]int{"skepticism": 2},
			repairs: []string{"spark.skeptic index: candidate 2 kept without skepticism"},
			check: func(t *testing.T, res *Result) {
				if c := res.Candidates[2]; c.Skepticism != "" || c.Details.Skepticism != nil {
					t.Fatalf("candidate %+v", c)
				}
			}},
		{name: "skeptic/repeated", schema: "spark_skepticism",
			flaws:   []openaitest.Flaw{openaitest.Map("skepticisms", appendItem(map[string]any{"index": 1, "critical_flaws": []any{}, "risks_and_challenges": []any{"again"}, "questionable_assumptions": []any{}, "missing_considerations": []any{}}))},
			repairs: []string{"spark.skeptic index: second item for index 1 dropped"},
			check: func(t *testing.T, res *Result) {
				if !strings.Contains(res.Candidates[1].Skepticism, "risk 1") {
					t.Fatalf("skepticism %q", res.Candidates[1].Skepticism)
				}
			}},

		// Logical inference.
		{name: "infer/missing", schema: "spark_inference", flaws: []openaitest.Flaw{openaitest.Drop("inferences", 0), always},
			calls:   map[string]int{"inference": 2},
			repairs: []string{"spark.infer index: candidate 0 kept without logical inference"},
			check: func(t *testing.T, res *Result) {
				if res.Candidates[0].LogicalInference != nil || res.Candidates[1].LogicalInference == nil {
					t.Fatalf("inferences wrong")
				}
			}},
		{name: "infer/confidence above maximum", schema: "spark_inference", flaws: []openaitest.Flaw{openaitest.Set("inferences/1/confidence", 1.5)},
			repairs: []string{"spark.infer range: 1.5 → 1"},
			check: func(t *testing.T, res *Result) {
				if res.Candidates[1].LogicalInference.Confidence != 1 {
					t.Fatalf("confidence %v", res.Candidates[1].LogicalInference.Confidence)
				}
			}},
		{name: "infer/out of range", schema: "spark_inference", flaws: []openaitest.Flaw{openaitest.Set("inferences/2/index", -1), always},
			calls:   map[string]int{"inference": 2},
			repairs: []string{"spark.infer index: no item for index 2: candidate 2 kept without logical inference", "spark.infer index: item with index -1 dropped (out of range 0..2)"}},

		// IdeaGenerator improving.
		{name: "improve/missing", schema: "spark_improvements", flaws: []openaitest.Flaw{openaitest.Drop("improvements", 0), always},
			calls:   map[string]int{"improvement": 2},
			repairs: []string{"spark.improve index: no item for index 0: candidate 0's original idea kept as its improvement"},
			check: func(t *testing.T, res *Result) {
				c := res.Candidates[0]
				if c.ImprovedIdea != c.Idea || !strings.HasPrefix(res.Candidates[1].ImprovedIdea, "Better idea 1") {
					t.Fatalf("candidates %+v", res.Candidates)
				}
			}},
		{name: "improve/one-based", schema: "spark_improvements", flaws: []openaitest.Flaw{openaitest.Add("improvements/*/index", 1)},
			repairs: []string{"spark.improve index: 1..3 → 0..2"},
			check: func(t *testing.T, res *Result) {
				if !strings.HasPrefix(res.Candidates[2].ImprovedIdea, "Better idea 2") {
					t.Fatalf("improved %q", res.Candidates[2].ImprovedIdea)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := wireReply
			flaws := map[string][]openaitest.Flaw{tt.schema: tt.flaws}
			if tt.re {
				alw := false
				for _, f := range tt.flaws {
					alw = alw || f == nil
				}
				base = reFlaws(wireReply, alw, tt.flaws)
				flaws = nil
			}
			srv := openaitest.NewServer(t, openaitest.Imperfect(base, flaws))
			client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "m"})
			res, run, err := runSpark(t, newStore(t), client, wireParams(tt.mod))
			calls := map[string]int{}
			for _, q := range srv.Requests() {
				calls[wireStep(q)]++
			}
			for step, n := range calls {
				if want, ok := tt.calls[step]; (ok && n != want) || (!ok && n != 1) {
					t.Errorf("%s: %d calls, want %d (all calls %v)", step, n, max(want, 1), calls)
				}
			}
			if tt.err != "" {
				var se *StageError
				if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want a stage error with %q", err, tt.err)
				}
				var re *structured.ReplyError
				if !errors.As(err, &re) {
					t.Fatalf("err = %v, want a reply error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := res.Repairs
			if len(got) != len(run.Repairs()) {
				t.Fatalf("result repairs %v, run repairs %v", got, run.Repairs())
			}
			lines := make([]string, len(got))
			for i, r := range got {
				lines[i] = r.Agent + " " + r.Rule + ": " + r.Action
			}
			sort.Strings(lines)
			want := append([]string(nil), tt.repairs...)
			sort.Strings(want)
			ok := len(lines) == len(want)
			for i := 0; ok && i < len(want); i++ {
				agentRule, action, _ := strings.Cut(want[i], ": ")
				ok = strings.HasPrefix(lines[i], agentRule+": ") && strings.Contains(lines[i], action)
			}
			if !ok {
				t.Fatalf("repairs:\n  %s\nwant:\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

// TestByIndex checks the index rule on its own, through a Spec as replies
// are read: renumbering, drops, what is asked, and what is hard.
func TestByIndex(t *testing.T) {
	missing := func(int) string { return "left out" }
	spec, err := structured.NewSpec[advocacies]("spark_advocacy")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		indices []int
		want    []int
		calls   int
		hard    bool
	}{
		{"in order", []int{0, 1, 2}, []int{0, 1, 2}, 1, false},
		{"shuffled", []int{2, 0, 1}, []int{2, 0, 1}, 1, false},
		{"one-based", []int{1, 2, 3}, []int{0, 1, 2}, 1, false},
		// Without 3, the reply may as well count from 0 with 0 missing:
		// kept as it is, and 0 is asked for.
		{"one-based or missing 0", []int{1, 2}, []int{1, 2}, 2, false},
		{"one-based with a gap", []int{1, 3}, []int{0, 2}, 2, false},
		{"repeated", []int{0, 0, 1, 2}, []int{0, 1, 2}, 1, false},
		{"out of range", []int{0, 1, 2, 5, -1}, []int{0, 1, 2}, 1, false},
		{"missing", []int{0, 2}, []int{0, 2}, 2, false},
		{"nothing usable", []int{7, 8}, nil, 2, true},
		{"empty", nil, nil, 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reply, _ := json.Marshal(advocacies{Advocacies: itemsWithStrength(tt.indices)})
			calls := 0
			client := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) {
				calls++
				return &llm.Response{Text: string(reply)}, nil
			})
			v, _, err := spec.Generate(context.Background(), client, llm.Request{Agent: agentAdvocate}, func(w *advocacies, p *structured.Problems) {
				byIndex(&w.Advocacies, 3, missing, p)
			})
			if calls != tt.calls {
				t.Fatalf("%d calls, want %d", calls, tt.calls)
			}
			if tt.hard {
				if err == nil {
					t.Fatalf("want a hard error, got %+v", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, a := range v.Advocacies {
				got = append(got, a.Index)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("indices %v, want %v", got, tt.want)
			}
			for i, it := range place(v.Advocacies, 3) {
				if it != nil && it.Index != i {
					t.Fatalf("item %d placed at %d", it.Index, i)
				}
			}
		})
	}
}

func itemsWithStrength(indices []int) []Advocacy {
	out := make([]Advocacy, len(indices))
	for k, i := range indices {
		out[k] = Advocacy{Index: i, Strengths: []string{"s"}, Opportunities: []string{}, AddressingConcerns: []string{}}
	}
	return out
}

// TestMockRunsHaveNoRepairs: mock mode answers every rule exactly, so its
// runs record no repair, and the result says so with an empty list.
func TestMockRunsHaveNoRepairs(t *testing.T) {
	res, run, err := runSpark(t, newStore(t), mock.New(MockResponders()), params("urban farming", func(p *Params) {
		p.EnhancedReasoning, p.LogicalInference = true, true
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Repairs == nil || len(res.Repairs) != 0 || len(run.Repairs()) != 0 {
		t.Fatalf("repairs %v", res.Repairs)
	}
	b, _ := json.Marshal(NewReport(res, run.ID(), "mock", "mock", "mock", run.Usage(), 0))
	if !strings.Contains(string(b), `"repairs":[]`) {
		t.Fatalf("report JSON lacks an empty repairs list: %s", b)
	}
}

// TestReportsShowRepairs: every text format mentions the repairs on its
// summary line, detailed and markdown also list them, and JSON carries the
// list.
func TestReportsShowRepairs(t *testing.T) {
	res := &Result{Topic: "urban farming", Candidates: []Candidate{{Idea: "A", ImprovedIdea: "B"}}, Repairs: []llm.Repair{
		{Step: "generate", Agent: agentGenerate, Rule: "count", Action: "4 ideas kept of 5 asked"},
		{Step: "evaluate", Agent: agentEvaluate, Rule: "index", Action: "indices counted from 1 renumbered: 1..4 → 0..3"},
	}}
	rep := NewReport(res, "run-1", "live", "openai", "m", llm.Usage{LLMCalls: 7}, 0)
	for _, format := range Formats {
		var b strings.Builder
		if err := rep.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		switch format {
		case "json":
			if !strings.Contains(out, `"rule": "count"`) || !strings.Contains(out, `"action": "4 ideas kept of 5 asked"`) {
				t.Errorf("json lacks the repairs:\n%s", out)
			}
			continue
		case "detailed", "markdown":
			if !strings.Contains(out, "spark.evaluate: index: indices counted from 1 renumbered") {
				t.Errorf("%s does not list the repairs:\n%s", format, out)
			}
		}
		if !strings.Contains(lastLineOf(out), "; 2 repairs") {
			t.Errorf("%s summary line %q lacks the count", format, lastLineOf(out))
		}
	}
	old := NewReport(&Result{Topic: "t"}, "run-2", "live", "openai", "m", llm.Usage{}, 0)
	if b, _ := json.Marshal(old); !strings.Contains(string(b), `"repairs":[]`) {
		t.Errorf("a result stored without repairs reports %s", b)
	}
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
