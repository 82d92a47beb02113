package proposal

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
)

var benchLatency = flag.Duration("proposal.latency", 200*time.Millisecond, "simulated latency per LLM call and per literature search for BenchmarkProposal")

// slowSource is a literature source that takes d per search.
type slowSource struct {
	search.Provider
	d time.Duration
}

func (s slowSource) Search(ctx context.Context, q string, max int) ([]search.Result, error) {
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return s.Provider.Search(ctx, q, max)
}

// BenchmarkProposal runs whole proposals against a simulated provider with
// a fixed latency L per call, through the production client stack and a
// real SQLite journal, with two literature sources that also take L per
// search. The stages depend on each other, so the critical path is every
// LLM call in turn plus one search (the searches of a round run side by
// side): 6·L + L without refinement; with one refinement from the
// methodology, 3·L more. It reports wall time over that bound and the LLM
// calls per run.
//
//	go test -run '^$' -bench BenchmarkProposal -benchtime 5x ./pipeline/proposal
func BenchmarkProposal(b *testing.B) {
	for _, bc := range []struct {
		name        string
		hours       int
		calls       int
		refinements int
	}{
		{"passes", 10, 6, 0},
		{"one-refinement", 4, 9, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			L := *benchLatency
			db := newDB(b)
			stack := llm.Chain(mock.New(MockResponders(), mock.WithLatency(L)),
				middleware.Meter(middleware.DefaultPrices()),
				middleware.Retry(middleware.RetryConfig{}),
				middleware.Breaker(middleware.BreakerConfig{}),
				middleware.Timeout(0))
			sources := []search.Provider{slowSource{scholar.NewOffline(), L}, slowSource{scholar.NewOffline(), L}}
			pipe, err := New(sources, nil)
			if err != nil {
				b.Fatal(err)
			}
			e := &engine.Engine{Store: db, Client: stack}
			p := params(bc.hours, nil)
			var usage llm.Usage
			var res *Result
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				r, err := e.Start(ctx, engine.RunInfo{Pipeline: "proposal", Params: p}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if res, err = pipe.Run(ctx, r, p); err != nil {
					b.Fatal(err)
				}
				usage = r.Usage()
			}
			wall := time.Since(start) / time.Duration(b.N)
			b.StopTimer()
			if usage.LLMCalls != bc.calls || res.Refinements != bc.refinements {
				b.Fatalf("%d calls, %d refinements; want %d, %d", usage.LLMCalls, res.Refinements, bc.calls, bc.refinements)
			}
			bound := time.Duration(bc.calls+1) * L
			b.ReportMetric(float64(wall)/float64(bound), "wall/critical-path")
			b.ReportMetric(float64(usage.LLMCalls), "calls/run")
		})
	}
}
