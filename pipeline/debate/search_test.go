package debate

import (
	"context"
	"errors"
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

// gatedSearch answers only once release is closed.
type gatedSearch struct {
	fakeSearch
	release chan struct{}
}

func (g *gatedSearch) Search(ctx context.Context, q string, max int) ([]search.Result, error) {
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.fakeSearch.Search(ctx, q, max)
}

// TestSearchHiddenBehindProposers holds the search back until all three
// round-1 proposers have sent their requests: a proposer waiting for the
// search would never send its own, and the run would hang. Round 2 and
// the aggregator get the results from the blackboard.
func TestSearchHiddenBehindProposers(t *testing.T) {
	s := &gatedSearch{release: make(chan struct{})}
	var mu sync.Mutex
	round1 := 0
	gate := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if in, ok := req.Input.(proposeInput); ok && in.Round == 1 {
			mu.Lock()
			if round1++; round1 == len(Proposers) {
				close(s.release)
			}
			mu.Unlock()
		}
		return mock.New(MockResponders()).Generate(ctx, req)
	})
	rec := &mock.Recorder{Next: gate}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := runDebateCtx(t, ctx, rec, s, query("Design a distributed cache architecture", func(p *Params) { p.Rounds = 2 }))
	if err != nil {
		t.Fatalf("a round-1 proposer waited for the search: %v", err)
	}
	if s.calls != 1 || len(res.Sources) != MaxSearchResults || res.SearchNote != "" {
		t.Fatalf("search calls %d, sources %d, note %q", s.calls, len(res.Sources), res.SearchNote)
	}
	for _, q := range rec.Requests() {
		has := strings.Contains(q.Prompt(), "https://example.org/2")
		switch in := q.Input.(type) {
		case proposeInput:
			if has != (in.Round > 1) {
				t.Errorf("round %d %s: sources in the prompt = %v", in.Round, in.Role, has)
			}
		case aggregateInput:
			if !has {
				t.Error("the aggregator did not get the search results")
			}
		}
	}
}

// TestResumeReplaysSearch fails a debate at the aggregator, then resumes
// it: the journaled search results are used again without searching.
func TestResumeReplaysSearch(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &fakeSearch{}
	pipe, err := New(counter, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	down := true
	var aggregatePrompts []string
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agentAggregate {
			mu.Lock()
			d := down
			aggregatePrompts = append(aggregatePrompts, req.Prompt())
			mu.Unlock()
			if d {
				return nil, errors.New("aggregator unavailable")
			}
		}
		return mock.New(MockResponders()).Generate(ctx, req)
	})
	p := query("Explain step by step how to implement async iterators", nil)
	e := &engine.Engine{Store: db, Client: client}
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "debate", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(ctx, r, p, nil)
	if err == nil {
		t.Fatal("the run succeeded with the aggregator down")
	}
	if err := r.Finish(ctx, res, err); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	r2, err := e.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = pipe.Run(ctx, r2, p, nil)
	if err != nil || res.Answer == "" {
		t.Fatalf("resumed: %v", err)
	}
	if s.calls != 1 || len(res.Sources) != MaxSearchResults {
		t.Fatalf("search calls %d, sources %d: the resumed run searched again or lost the results", s.calls, len(res.Sources))
	}
	if n := len(aggregatePrompts); n < 2 || aggregatePrompts[n-1] != aggregatePrompts[0] || !strings.Contains(aggregatePrompts[n-1], "https://example.org/0") {
		t.Fatalf("the resumed aggregator did not get the same search results (%d prompts)", n)
	}
}
