package chaos

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/provider/mock"
)

var benchLatency = flag.Duration("chaos.latency", 200*time.Millisecond, "simulated provider latency per call for BenchmarkChaos")

// BenchmarkChaos runs two iterations against a simulated provider with a
// fixed latency L per call, through the production client stack and a real
// SQLite journal and memory. Each iteration's critical path is 4 round trips
// (chaos → creative → refinement → judge; the tracks run side by side), so
// the bound is 8·L. It reports wall time over that bound and the LLM calls
// per iteration.
//
//	go test -run '^$' -bench BenchmarkChaos -benchtime 3x ./pipeline/chaos
func BenchmarkChaos(b *testing.B) {
	ctx := context.Background()
	L := *benchLatency
	db := newDB(b)
	stack := llm.Chain(mock.New(MockResponders(), mock.WithLatency(L)),
		middleware.Meter(middleware.DefaultPrices()),
		middleware.Retry(middleware.RetryConfig{}),
		middleware.Breaker(middleware.BreakerConfig{}),
		middleware.Timeout(0))
	pipe, err := New(db)
	if err != nil {
		b.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: stack}
	var usage llm.Usage
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		p := params(func(p *Params) { p.Iterations, p.Seed = 2, uint64(i) })
		r, err := e.Start(ctx, engine.RunInfo{Pipeline: "chaos", Params: p}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pipe.Run(ctx, r, p, nil); err != nil {
			b.Fatal(err)
		}
		usage = r.Usage()
	}
	wall := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	b.ReportMetric(float64(wall)/float64(8*L), "wall/critical-path")
	b.ReportMetric(float64(usage.LLMCalls)/2, "calls/iteration")
}
