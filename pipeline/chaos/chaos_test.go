package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/sqlite"
)

func newDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func runChaos(t *testing.T, db *sqlite.DB, client llm.Client, p Params, done IterationFunc) (*Result, *engine.Run, error) {
	t.Helper()
	pipe, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: client}
	r, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "chaos", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(context.Background(), r, p, done)
	if ferr := r.Finish(context.Background(), res, err); ferr != nil {
		t.Fatal(ferr)
	}
	return res, r, err
}

func params(mod func(*Params)) Params {
	p := DefaultParams()
	p.Prompt, p.Seed, p.MemoryFile = "new ways to reduce food waste in cities", 42, "/tmp/ideas.json"
	if mod != nil {
		mod(&p)
	}
	return p
}

func TestMemoryGrowsAndFeedsBack(t *testing.T) {
	db := newDB(t)
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	var sizes []int
	res, _, err := runChaos(t, db, rec, params(func(p *Params) { p.Iterations = 2 }), func(it Iteration, m []madspark.RememberedIdea) error {
		sizes = append(sizes, len(m))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"chaos": 2, "creative": 4, "refine": 4, "judge": 2}
	if got := rec.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls = %v, want %v (per iteration: chaos 1, creative 2, refinement 2, judge 1)", got, want)
	}
	if res.Repairs == nil || len(res.Repairs) != 0 {
		t.Fatalf("mock replies need no repair: %v", res.Repairs)
	}
	if len(sizes) != 2 || sizes[0] == 0 || sizes[1] <= sizes[0] {
		t.Fatalf("memory sizes after each iteration = %v, want growing", sizes)
	}
	// Iteration 2's creative prompts list what iteration 1 accepted.
	first := res.Iterations[0].Judgement.AcceptedIdeas
	for _, q := range rec.Requests() {
		if q.Agent == agentCreative && q.Input.(creativeInput).Iteration == 2 {
			for _, a := range first {
				if !strings.Contains(q.Prompt(), a.IdeaName) {
					t.Fatalf("iteration 2 creative prompt lacks accepted idea %q", a.IdeaName)
				}
			}
		}
	}
	// Track B repeated a remembered idea; the memory rejected it as such.
	it2 := res.Iterations[1]
	if it2.Duplicates != 1 {
		t.Fatalf("duplicates in iteration 2 = %d, want 1", it2.Duplicates)
	}
	found := false
	for _, r := range it2.Judgement.RejectedIdeas {
		if strings.HasSuffix(r.IdeaName, " Revisited") && strings.Contains(r.RejectionReason, "near-duplicate of remembered idea") {
			found = true
		}
	}
	if !found {
		t.Fatalf("the repeated idea was not rejected as a near-duplicate: %+v", it2.Judgement.RejectedIdeas)
	}
	for _, k := range []string{"judge_results_iteration_1", "judge_results_iteration_2", "total_accepted_ideas", "ideas_memory_file"} {
		if _, ok := res.SharedState[k]; !ok {
			t.Fatalf("shared state lacks %s: %v", k, res.SharedState)
		}
	}
	if res.SharedState["total_accepted_ideas"] != sizes[1] {
		t.Fatalf("total_accepted_ideas = %v, memory has %d", res.SharedState["total_accepted_ideas"], sizes[1])
	}

	// A second run starts from the memory the first left.
	rec2 := &mock.Recorder{Next: mock.New(MockResponders())}
	res2, _, err := runChaos(t, db, rec2, params(func(p *Params) { p.Seed = 7 }), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec2.Requests()[1].Prompt(), first[0].IdeaName) || res2.Iterations[0].Duplicates != 1 {
		t.Fatalf("second run does not build on the memory")
	}
	all, _ := db.RememberedIdeas(context.Background(), params(nil).MemoryName())
	export, err := ExportMemory("m", all)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Ideas      []map[string]any `json:"ideas"`
		Statistics struct {
			Total   int            `json:"total_accepted"`
			ByIter  map[string]int `json:"accepted_by_iteration"`
			Runs    int            `json:"runs"`
			Quality float64        `json:"average_quality_score"`
		} `json:"statistics"`
	}
	if err := json.Unmarshal(export, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Statistics.Total != len(all) || doc.Statistics.Runs != 2 || doc.Statistics.ByIter["2"] == 0 || doc.Statistics.Quality < 6 || doc.Ideas[0]["discovered_iteration"] != 1.0 {
		t.Fatalf("ideas.json = %s", export)
	}
}

// judgeWith answers the judge with replies in order (then the last one
// again) and every other agent with the mock.
func judgeWith(replies ...string) (*mock.Recorder, llm.Client) {
	base := mock.New(MockResponders())
	var mu sync.Mutex
	n := 0
	c := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent != agentJudge {
			return base.Generate(ctx, req)
		}
		mu.Lock()
		i := min(n, len(replies)-1)
		n++
		mu.Unlock()
		return &llm.Response{Text: replies[i], Usage: llm.Usage{LLMCalls: 1}}, nil
	})
	rec := &mock.Recorder{Next: c}
	return rec, rec
}

func TestJudgeValidation(t *testing.T) {
	valid := `{"accepted_ideas":[{"idea_name":"Fridge Relay","quality_score":7.5,"feasibility_score":7,"impact_score":8,"originality_score":6,"key_points":["k"],"implementation_path":"p","required_resources":["r"],"success_metrics":["m"],"next_steps":["n"]}],"rejected_ideas":[{"idea_name":"Vague","rejection_reason":"vague","quality_score":3,"fatal_flaw":"too vague to build"}],"synthesis":"s","top_recommendations":["t"],"strategic_insights":["i"],"unresolved_questions":["q"]}`
	tests := []struct {
		name     string
		replies  []string
		ok       bool
		repair   string // what the repair request must mention
		judgeReq int
	}{
		{"valid", []string{valid}, true, "", 1},
		{"fenced and wrapped in prose is tolerated", []string{"Here is my verdict:\n```json\n" + valid + "\n```"}, true, "", 1},
		{"score as a string is repaired", []string{strings.Replace(valid, `"quality_score":7.5`, `"quality_score":"7.5"`, 1), valid}, true, "", 1},
		{"below threshold is moved to rejected", []string{strings.Replace(valid, `"quality_score":7.5`, `"quality_score":5.5`, 1), valid}, true, "", 1},
		{"missing field is repaired", []string{strings.Replace(valid, `"synthesis":"s",`, ``, 1), valid}, true, "synthesis", 2},
		{"unknown field is repaired", []string{strings.Replace(valid, `"synthesis":"s"`, `"synthesis":"s","verdict":"ok"`, 1), valid}, true, "", 1},
		{"score out of range is repaired", []string{strings.Replace(valid, `"impact_score":8`, `"impact_score":80`, 1), valid}, true, "", 1},
		{"nothing judged is repaired", []string{`{"accepted_ideas":[],"rejected_ideas":[],"synthesis":"s","top_recommendations":[],"strategic_insights":[],"unresolved_questions":[]}`, valid}, true, "no idea was judged", 2},
		{"truncated twice fails loudly", []string{valid[:120], valid[:200]}, false, "truncated", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newDB(t)
			rec, c := judgeWith(tt.replies...)
			res, run, err := runChaos(t, db, c, params(nil), nil)
			judges := rec.Calls()["judge"]
			if judges != tt.judgeReq {
				t.Fatalf("judge calls = %d, want %d", judges, tt.judgeReq)
			}
			if tt.repair != "" {
				last := rec.Requests()[len(rec.Requests())-1]
				if len(last.Messages) != 3 || !strings.Contains(last.Messages[2].Content, tt.repair) {
					t.Fatalf("repair request does not mention %q: %+v", tt.repair, last.Messages[len(last.Messages)-1])
				}
			}
			if tt.ok {
				if err != nil {
					t.Fatalf("res %+v, err %v", res, err)
				}
				j := res.Iterations[0].Judgement
				if strings.HasPrefix(tt.name, "below threshold") {
					// Moved, not re-asked: the rejection reason says why.
					last := j.RejectedIdeas[len(j.RejectedIdeas)-1]
					if len(j.AcceptedIdeas) != 0 || last.IdeaName != "Fridge Relay" || !strings.Contains(last.RejectionReason, "below the acceptance threshold 6") {
						t.Fatalf("judgement %+v", j)
					}
					if len(res.Repairs) != 1 || res.Repairs[0].Rule != "consistency" || res.Repairs[0].Agent != agentJudge || res.Repairs[0].Step != "i1/judge" {
						t.Fatalf("repairs %+v", res.Repairs)
					}
					if ideas, _ := db.RememberedIdeas(context.Background(), params(nil).MemoryName()); len(ideas) != 0 {
						t.Fatalf("a rejected idea was remembered: %v", ideas)
					}
					return
				}
				if j.AcceptedIdeas[0].IdeaName != "Fridge Relay" {
					t.Fatalf("judgement %+v", j)
				}
				return
			}
			if err == nil || res != nil || !strings.Contains(err.Error(), "iteration 1") || !strings.Contains(err.Error(), "chaos.judge") {
				t.Fatalf("want a loud failure naming the iteration and the judge, got %v", err)
			}
			steps, _ := db.Steps(context.Background(), run.ID())
			last := steps[len(steps)-1]
			if last.Key != "i1/judge" || last.Status != madspark.StepFailed || !strings.Contains(string(last.Output), "raw_reply") {
				t.Fatalf("raw reply not kept in the run record: %+v", last)
			}
			if ideas, _ := db.RememberedIdeas(context.Background(), params(nil).MemoryName()); len(ideas) != 0 {
				t.Fatalf("a failed judgement added ideas to memory: %v", ideas)
			}
		})
	}
}

func TestTracksRunConcurrently(t *testing.T) {
	base := mock.New(MockResponders())
	var mu sync.Mutex
	started := map[string]bool{}
	c := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agentCreative {
			track := req.Input.(creativeInput).Track
			mu.Lock()
			started[track] = true
			mu.Unlock()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				mu.Lock()
				both := started["a"] && started["b"]
				mu.Unlock()
				if both {
					break
				}
				if time.Now().After(deadline) {
					return nil, errors.New("creative track ran alone")
				}
			}
		}
		return base.Generate(ctx, req)
	})
	if _, _, err := runChaos(t, newDB(t), c, params(nil), nil); err != nil {
		t.Fatal(err)
	}
}

func TestTournamentAndEvolve(t *testing.T) {
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	res, _, err := runChaos(t, newDB(t), rec, params(func(p *Params) { p.Iterations, p.Tournament, p.Evolve = 2, true, true }), nil)
	if err != nil {
		t.Fatal(err)
	}
	last := res.Iterations[len(res.Iterations)-1]
	if len(res.Iterations) != 3 || !last.Evolved || !strings.Contains(last.CreativeA, "Hybrid") {
		t.Fatalf("no evolved pass: %+v", last)
	}
	calls := rec.Calls()
	if calls["evolve"] != 1 || calls["refine"] != 5 || calls["judge"] != 3 {
		t.Fatalf("calls = %v", calls)
	}
	if res.Repairs == nil || len(res.Repairs) != 0 || res.FailedStep != "" {
		t.Fatalf("mock replies need no repair: %v", res.Repairs)
	}
	tr := res.Tournament
	n := len(res.Accepted)
	rounds := int(math.Ceil(math.Log2(float64(n))))
	if tr == nil || len(tr.Ratings) != n || tr.Rounds != rounds || calls["compare"] != rounds {
		t.Fatalf("tournament %+v over %d ideas, %d compare calls", tr, n, calls["compare"])
	}
	if tr.Comparisons < (n/2)*rounds || tr.Comparisons > n*rounds {
		t.Fatalf("%d comparisons for %d ideas in %d rounds", tr.Comparisons, n, rounds)
	}
	var sum float64
	games := 0
	for i, r := range tr.Ratings {
		sum += r.Elo
		games += r.Wins + r.Losses
		if i > 0 && r.Elo > tr.Ratings[i-1].Elo {
			t.Fatal("ratings not sorted")
		}
	}
	if math.Abs(sum-1000*float64(n)) > 0.1*float64(n) || games != 2*tr.Comparisons {
		t.Fatalf("Elo not conserved: sum %v, games %d", sum, games)
	}
	report := res.Report()
	for _, s := range []string{"ACCEPTED IDEAS", "REJECTED IDEAS", "SYNTHESIS", "TOP RECOMMENDATIONS", "STRATEGIC INSIGHTS", "UNRESOLVED QUESTIONS", "TOURNAMENT RANKING", "evolved"} {
		if !strings.Contains(report, s) {
			t.Fatalf("report lacks %q", s)
		}
	}
}

func TestSwissPairsAvoidRematches(t *testing.T) {
	played := map[[2]int]bool{}
	order := []int{0, 1, 2, 3, 4}
	first := swissPairs(order, played)
	second := swissPairs(order, played)
	if len(first) != 2 || len(second) != 2 {
		t.Fatalf("pairs %v %v", first, second)
	}
	for _, p := range second {
		for _, q := range first {
			if key(p[0], p[1]) == key(q[0], q[1]) {
				t.Fatalf("rematch %v in round 2", p)
			}
		}
	}
}

func TestSeedsAreReproducible(t *testing.T) {
	a, b := sampleSeeds(1, 1, 10), sampleSeeds(1, 1, 10)
	if strings.Join(a, ",") != strings.Join(b, ",") || len(a) != 10 {
		t.Fatal("same seed, different concepts")
	}
	if strings.Join(a, ",") == strings.Join(sampleSeeds(1, 2, 10), ",") || strings.Join(a, ",") == strings.Join(sampleSeeds(2, 1, 10), ",") {
		t.Fatal("iteration or seed does not change the concepts")
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tt := range []struct {
		mod  func(*Params)
		want string
	}{
		{func(p *Params) { p.Prompt = " " }, "prompt must not be empty"},
		{func(p *Params) { p.Iterations = 11 }, "iterations must be 1..10"},
		{func(p *Params) { p.ChaosSeeds = 0 }, "chaos_seeds"},
		{func(p *Params) { p.AcceptThreshold = 11 }, "accept_threshold"},
		{func(p *Params) { p.IdeasPerTrack = 30 }, "ideas_per_track"},
		{func(p *Params) { p.TempA = -1 }, "temperatures"},
	} {
		p := params(tt.mod)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate() = %v, want %q", err, tt.want)
		}
	}
}

// TestResumeReplaysWithTheSameMemory resumes a run that had already
// remembered the ideas of its first iteration: the replay must see the
// memory as it was before the run, or the creative prompts would change
// (and be paid for again) and the run's own ideas would be rejected as
// repeats of themselves.
func TestResumeReplaysWithTheSameMemory(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	p := params(func(p *Params) { p.Iterations = 2 })
	first, r, err := runChaos(t, db, rec, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := len(rec.Requests())
	// Make the run resumable as if it had failed at the end.
	failed := r.Record()
	failed.Status, failed.Result, failed.Error = madspark.RunFailed, nil, "crashed"
	if err := db.FinishRun(ctx, &failed); err != nil {
		t.Fatal(err)
	}
	pipe, _ := New(db)
	e := &engine.Engine{Store: db, Client: rec}
	r2, err := e.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := pipe.Run(ctx, r2, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Requests()) != calls {
		t.Fatalf("the resumed run made %d calls, want 0: %v", len(rec.Requests())-calls, rec.Calls())
	}
	a, _ := json.Marshal(first.Accepted)
	b, _ := json.Marshal(again.Accepted)
	if len(first.Accepted) == 0 || string(a) != string(b) {
		t.Fatalf("accepted ideas differ after resume:\n%s\n%s", a, b)
	}
}

// TestCancelKeepsFinishedIterations: a run cancelled during its third
// iteration keeps the two it finished, recorded with the cancelled run.
func TestCancelKeepsFinishedIterations(t *testing.T) {
	db := newDB(t)
	pipe, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var chaosCalls int
	var mu sync.Mutex
	next := mock.New(MockResponders())
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		mu.Lock()
		if req.Agent == agentChaos {
			chaosCalls++
			if chaosCalls == 3 {
				cancel() // Cancel, as the third iteration starts
			}
		}
		mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return next.Generate(ctx, req)
	})
	e := &engine.Engine{Store: db, Client: client}
	p := params(func(p *Params) { p.Iterations = 3 })
	r, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "chaos", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(ctx, r, p, nil)
	if err == nil || res == nil || len(res.Iterations) != 2 || res.Iterations[1].Number != 2 {
		t.Fatalf("cancelled in iteration 3: %v, %+v", err, res)
	}
	if err := r.Finish(context.Background(), res, fmt.Errorf("%w by request", madspark.ErrCancelled)); err != nil {
		t.Fatal(err)
	}
	rec, _ := db.Run(context.Background(), r.ID())
	kept, _, err := resultOf(rec)
	if rec.Status != madspark.RunCancelled || err != nil || len(kept.Iterations) != 2 {
		t.Fatalf("the cancelled record: %s, %v, %s", rec.Status, err, rec.Result)
	}
	// A run cancelled before any iteration finished keeps nothing.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	r2, _ := e.Start(context.Background(), engine.RunInfo{Pipeline: "chaos", Params: p}, nil)
	if res, err := pipe.Run(ctx2, r2, p, nil); err == nil || res != nil {
		t.Fatalf("cancelled at once: %+v, %v", res, err)
	}
}
