package spark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
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

func newStore(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "madspark.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// runSpark runs the pipeline over client and returns the result, the run
// and the error.
func runSpark(t *testing.T, db madspark.RunStore, client llm.Client, p Params) (*Result, *engine.Run, error) {
	t.Helper()
	pipe, err := New()
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: client}
	run, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "spark", Mode: "mock", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(context.Background(), run, p)
	if ferr := run.Finish(context.Background(), res, err); ferr != nil {
		t.Fatal(ferr)
	}
	return res, run, err
}

func params(topic string, mod func(*Params)) Params {
	p := DefaultParams()
	p.Topic, p.Context = topic, "low-cost, scalable solutions"
	if mod != nil {
		mod(&p)
	}
	return p
}

func TestCallsPerRunAreConstant(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*Params)
		calls int
	}{
		{"standard N=5 K=3", nil, 6},
		{"N=12 K=5", func(p *Params) { p.NumCandidates, p.NumTopCandidates = 12, 5 }, 6},
		{"N=1 K=1", func(p *Params) { p.NumCandidates, p.NumTopCandidates = 1, 1 }, 6},
		{"enhanced", func(p *Params) { p.EnhancedReasoning = true }, 8},
		{"logical", func(p *Params) { p.LogicalInference = true }, 7},
		{"both", func(p *Params) { p.EnhancedReasoning, p.LogicalInference = true, true }, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &mock.Recorder{Next: mock.New(MockResponders())}
			p := params("sustainable urban farming", tt.mod)
			res, run, err := runSpark(t, newStore(t), rec, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(rec.Requests()); got != tt.calls {
				t.Fatalf("LLM calls = %d, want %d", got, tt.calls)
			}
			if u := run.Usage(); u.LLMCalls != tt.calls || u.InputTokens == 0 || u.OutputTokens == 0 {
				t.Fatalf("usage = %+v", u)
			}
			if len(res.Candidates) != p.NumTopCandidates {
				t.Fatalf("%d candidates, want %d", len(res.Candidates), p.NumTopCandidates)
			}
			for i, c := range res.Candidates {
				if c.Idea == "" || c.ImprovedIdea == "" || c.Advocacy == "" || c.Skepticism == "" || c.InitialCritique == "" || c.ImprovedCritique == "" {
					t.Fatalf("candidate %d incomplete: %+v", i, c)
				}
				if c.ScoreDelta != round2(c.ImprovedScore-c.InitialScore) {
					t.Fatalf("delta %v != %v - %v", c.ScoreDelta, c.ImprovedScore, c.InitialScore)
				}
				if i > 0 && c.InitialScore > res.Candidates[i-1].InitialScore {
					t.Fatalf("candidates not ordered by initial score")
				}
				if (c.MultiDimensionalEvaluation != nil) != p.EnhancedReasoning || (c.ImprovedMultiDimensionalEvaluation != nil) != p.EnhancedReasoning {
					t.Fatalf("multi-dimensional evaluation presence wrong: %+v", c)
				}
				if (c.LogicalInference != nil) != p.LogicalInference {
					t.Fatalf("logical inference presence wrong")
				}
				if c.Fallback {
					t.Fatalf("unexpected fallback: %+v", c.Fallbacks)
				}
			}
		})
	}
}

func TestRoleTemperatures(t *testing.T) {
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	if _, _, err := runSpark(t, newStore(t), rec, params("AI in education", nil)); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{agentGenerate: 0.9, agentEvaluate: 0.3, agentAdvocate: 0.5, agentSkeptic: 0.5, agentImprove: 0.9}
	for _, q := range rec.Requests() {
		if q.Temperature != want[q.Agent] {
			t.Errorf("%s temperature = %v, want %v", q.Agent, q.Temperature, want[q.Agent])
		}
		if q.Schema == nil || !strings.Contains(q.Prompt(), "AI in education") || !strings.Contains(q.Prompt(), "low-cost, scalable") {
			t.Errorf("%s: request lacks schema, topic or context", q.Agent)
		}
	}
}

// TestStagesRunConcurrently proves advocate ∥ skeptic ∥ inference and
// critic ∥ multi-dimensional evaluation: each of those calls blocks until
// its partners have started, which only a concurrent pipeline satisfies.
func TestStagesRunConcurrently(t *testing.T) {
	groups := [][]string{{agentEvaluate, agentMultiDim}, {agentAdvocate, agentSkeptic, agentInfer}}
	var mu sync.Mutex
	started := map[string]bool{}
	base := mock.New(MockResponders())
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		mu.Lock()
		started[req.Agent] = true
		mu.Unlock()
		for _, g := range groups {
			for _, a := range g {
				if a != req.Agent {
					continue
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					mu.Lock()
					all := true
					for _, b := range g {
						all = all && started[b]
					}
					mu.Unlock()
					if all {
						break
					}
					if time.Now().After(deadline) {
						return nil, fmt.Errorf("%s ran alone: its partners %v never started", req.Agent, g)
					}
					time.Sleep(time.Millisecond)
				}
			}
		}
		return base.Generate(ctx, req)
	})
	_, _, err := runSpark(t, newStore(t), client, params("urban farming", func(p *Params) {
		p.EnhancedReasoning, p.LogicalInference = true, true
	}))
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchReplyIsRepaired: a batched reply that misses an index is sent back
// once with the problem, and the corrected reply is used.
func TestBatchReplyIsRepaired(t *testing.T) {
	base := mock.New(MockResponders())
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		resp, err := base.Generate(ctx, req)
		if err == nil && req.Agent == agentSkeptic && len(req.Messages) == 1 {
			resp.Text = "Here you go:\n```json\n" + strings.Replace(resp.Text, `"index":2`, `"index":0`, 1) + "\n```"
		}
		return resp, err
	})
	rec := &mock.Recorder{Next: client}
	if _, _, err := runSpark(t, newStore(t), rec, params("urban farming", nil)); err != nil {
		t.Fatal(err)
	}
	if len(rec.Of(agentSkeptic)) != 2 {
		t.Fatalf("skeptic calls = %d, want 2 (one repair)", len(rec.Of(agentSkeptic)))
	}
	var repair *llm.Request
	for _, q := range rec.Requests() {
		if q.Agent == agentSkeptic && len(q.Messages) == 3 {
			repair = &q
		}
	}
	if repair == nil || !strings.Contains(repair.Messages[2].Content, "index 2 is missing") {
		t.Fatalf("repair request does not name the problem: %+v", repair)
	}
}

func failing(agent string, base llm.Client) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agent {
			return nil, &llm.Error{Provider: "openai", Status: 503, Message: "overloaded", Retryable: true}
		}
		return base.Generate(ctx, req)
	})
}

func TestFailingStageFailsRun(t *testing.T) {
	db := newStore(t)
	_, run, err := runSpark(t, db, failing(agentAdvocate, mock.New(MockResponders())), params("urban farming", nil))
	var se *StageError
	if !errors.As(err, &se) || se.Stage != "advocate" || !strings.Contains(err.Error(), "openai: HTTP 503") {
		t.Fatalf("err = %v", err)
	}
	rec, err := db.Run(context.Background(), run.ID())
	if err != nil || rec.Status != madspark.RunFailed || !strings.Contains(rec.Error, "advocate") {
		t.Fatalf("stored run = %+v, %v", rec, err)
	}
	steps, _ := db.Steps(context.Background(), run.ID())
	keys := map[string]madspark.StepStatus{}
	for _, s := range steps {
		keys[s.Key] = s.Status
	}
	if keys["generate"] != madspark.StepDone || keys["evaluate"] != madspark.StepDone || keys["advocate"] != madspark.StepFailed {
		t.Fatalf("journal = %v", keys)
	}
}

func TestFallbacksAreMarked(t *testing.T) {
	client := failing(agentImprove, failing(agentEvaluate, mock.New(MockResponders())))
	res, _, err := runSpark(t, newStore(t), client, params("urban farming", func(p *Params) { p.AllowFallbacks = true }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Candidates {
		if !c.Fallback || len(c.Fallbacks) != 3 || c.InitialScore != fallbackScore || c.ImprovedScore != fallbackScore {
			t.Fatalf("candidate not marked: %+v", c)
		}
		if c.ImprovedIdea != c.Idea {
			t.Fatalf("improvement fallback should keep the original idea: %q vs %q", c.ImprovedIdea, c.Idea)
		}
	}
	var stages []string
	for _, f := range res.Candidates[0].Fallbacks {
		stages = append(stages, f.Stage)
	}
	if strings.Join(stages, ",") != "evaluate,improve,re_evaluate" || !strings.Contains(res.Candidates[0].Fallbacks[0].Reason, "503") {
		t.Fatalf("fallbacks = %+v", res.Candidates[0].Fallbacks)
	}
}

// TestResumeReplaysFinishedSteps: a run that failed at "improve" is resumed;
// the steps that finished are replayed from the journal and only improve and
// re-evaluate call the model.
func TestResumeReplaysFinishedSteps(t *testing.T) {
	db := newStore(t)
	p := params("urban farming", func(p *Params) { p.EnhancedReasoning = true })
	first, run, err := runSpark(t, db, failing(agentImprove, mock.New(MockResponders())), p)
	if err == nil || first != nil {
		t.Fatalf("first run should fail, got %v", err)
	}
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	e := &engine.Engine{Store: db, Client: rec}
	resumed, err := e.Resume(context.Background(), run.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pipe, _ := New()
	res, err := pipe.Run(context.Background(), resumed, p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, q := range rec.Requests() {
		got[q.Agent]++
	}
	want := map[string]int{agentImprove: 1, agentEvaluate: 1, agentMultiDim: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls after resume = %v, want %v", got, want)
	}
	if len(res.Candidates) != 3 || resumed.Usage().LLMCalls != 8 {
		t.Fatalf("resumed result %d candidates, usage %+v", len(res.Candidates), resumed.Usage())
	}
}

func TestMockIsDeterministicAndTopical(t *testing.T) {
	a, _, err := runSpark(t, newStore(t), mock.New(MockResponders()), params("sustainable urban farming", nil))
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := runSpark(t, newStore(t), mock.New(MockResponders()), params("sustainable urban farming", nil))
	ja, _ := json.Marshal(a.Candidates)
	jb, _ := json.Marshal(b.Candidates)
	if string(ja) != string(jb) {
		t.Fatal("mock runs differ")
	}
	if !strings.Contains(a.Candidates[0].Idea, "Sustainable Urban Farming") {
		t.Fatalf("mock idea not topical: %q", a.Candidates[0].Idea)
	}
	c, _, _ := runSpark(t, newStore(t), mock.New(MockResponders()), params("ocean plastic cleanup", nil))
	if c.Candidates[0].Idea == a.Candidates[0].Idea {
		t.Fatal("mock ideas do not depend on the topic")
	}
}

func TestParamsValidate(t *testing.T) {
	long := strings.Repeat("x", MaxTopicLen+1)
	tests := []struct {
		mod  func(*Params)
		want string
	}{
		{func(p *Params) { p.Topic = "  \t" }, "topic must not be empty"},
		{func(p *Params) { p.Topic = long }, "limit is 2000"},
		{func(p *Params) { p.Context = strings.Repeat("y", MaxContextLen+1) }, "limit is 5000"},
		{func(p *Params) { p.Topic = "bad \xff" }, "UTF-8"},
		{func(p *Params) { p.NumTopCandidates = 6 }, "num_top_candidates must be 1..5"},
		{func(p *Params) { p.NumCandidates, p.NumTopCandidates = 2, 3 }, "must not exceed num_candidates"},
		{func(p *Params) { p.NumCandidates = 0 }, "num_candidates must be"},
		{func(p *Params) { p.NoveltyThreshold = 1.5 }, "novelty_threshold"},
		{func(p *Params) { p.Temperatures.Evaluate = 3 }, "temperature"},
	}
	for _, tt := range tests {
		p := params("ok", tt.mod)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate() = %v, want %q", err, tt.want)
		}
	}
	if p := params("ok", nil); p.Validate() != nil {
		t.Errorf("defaults invalid: %v", p.Validate())
	}
}

func TestDropNearDuplicates(t *testing.T) {
	ideas := []Idea{
		{"Rooftop gardens", "Grow vegetables on the roofs of city apartment buildings."},
		{"Rooftop Gardens!", "Grow vegetables on the roofs of apartment buildings in the city."},
		{"Vertical farms", "Stack hydroponic trays inside disused warehouses."},
	}
	got, dupOf := dropNearDuplicates(ideas, 0.8)
	if len(got) != 2 || got[1].Title != "Vertical farms" {
		t.Fatalf("kept %v", got)
	}
	if want := []int{-1, 0, -1}; !slices.Equal(dupOf, want) {
		t.Fatalf("duplicates %v, want %v", dupOf, want)
	}
	if kept, _ := dropNearDuplicates(ideas, 0.99); len(kept) != 3 {
		t.Fatalf("a reworded idea is not identical: threshold 0.99 should keep all three")
	}
}

func TestPresetsAndBase(t *testing.T) {
	if _, err := Preset("spicy"); err == nil || !strings.Contains(err.Error(), "balanced") {
		t.Fatalf("unknown preset error = %v", err)
	}
	w, _ := Preset("wild")
	c, _ := Preset("conservative")
	if w.Generate <= c.Generate {
		t.Fatal("wild should be hotter than conservative")
	}
	if FromBase(0.9) != DefaultTemperatures() {
		t.Fatalf("FromBase(0.9) = %+v", FromBase(0.9))
	}
	if b := FromBase(1.8); math.Abs(b.Evaluate-0.6) > 1e-9 || math.Abs(b.Generate-1.8) > 1e-9 {
		t.Fatalf("FromBase(1.8) = %+v", b)
	}
}
