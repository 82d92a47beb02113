package spark

import (
	"context"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/sqlite"
)

var benchLatency = flag.Duration("spark.latency", 200*time.Millisecond, "simulated provider latency per call for BenchmarkSpark")

// BenchmarkSpark runs the spark pipeline against a simulated provider with a
// fixed latency L per call, through the production client stack (meter,
// retry, breaker, timeout) and a real SQLite journal. It reports wall time
// over the critical-path bound of 5·L (the five sequential round trips), the
// calls and tokens per run, and the calls a cached identical re-run makes.
//
//	go test -run '^$' -bench BenchmarkSpark -benchtime 5x ./pipeline/spark
func BenchmarkSpark(b *testing.B) {
	for _, bc := range []struct {
		name     string
		enhanced bool
	}{{"standard", false}, {"enhanced+logical", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			L := *benchLatency
			db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			sim := mock.New(MockResponders(), mock.WithLatency(L))
			stack := llm.Chain(sim,
				middleware.Meter(middleware.DefaultPrices()),
				middleware.Retry(middleware.RetryConfig{}),
				middleware.Breaker(middleware.BreakerConfig{}),
				middleware.Timeout(0))
			pipe, err := New()
			if err != nil {
				b.Fatal(err)
			}
			p := params("sustainable urban farming", func(p *Params) {
				p.NumCandidates, p.NumTopCandidates = 10, 5
				p.EnhancedReasoning, p.LogicalInference = bc.enhanced, bc.enhanced
			})
			e := &engine.Engine{Store: db, Client: stack}
			var usage llm.Usage
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				run, err := e.Start(ctx, engine.RunInfo{Pipeline: "spark", Params: p}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := pipe.Run(ctx, run, p); err != nil {
					b.Fatal(err)
				}
				usage = run.Usage()
			}
			wall := time.Since(start) / time.Duration(b.N)
			b.StopTimer()
			b.ReportMetric(float64(wall)/float64(5*L), "wall/critical-path")
			b.ReportMetric(float64(usage.LLMCalls), "calls/run")
			b.ReportMetric(float64(usage.InputTokens+usage.OutputTokens), "tokens/run")

			// Two runs, each through a fresh cache tier over the same durable
			// store, as two processes would have: the second is answered from
			// the store alone.
			for range 2 {
				cached := &engine.Engine{Store: db, Client: llm.Chain(stack,
					middleware.Cache(middleware.CacheConfig{Provider: mock.Name, DefaultModel: mock.Model, Store: db}))}
				run, err := cached.Start(ctx, engine.RunInfo{Pipeline: "spark", Params: p}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := pipe.Run(ctx, run, p); err != nil {
					b.Fatal(err)
				}
				usage = run.Usage()
			}
			b.ReportMetric(float64(usage.LLMCalls), "cached-rerun-calls")
		})
	}
}
