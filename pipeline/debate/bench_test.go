package debate

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/store/sqlite"
)

var (
	benchLatency = flag.Duration("debate.latency", 100*time.Millisecond, "simulated provider latency L for BenchmarkDebateComplex")
	benchRate    = flag.Float64("debate.rate", 400, "simulated generation rate R in tokens per second")
	benchCall    = flag.Duration("debate.call", time.Second, "latency L of every simulated call and of the search for BenchmarkDebateSearchHidden")
)

// BenchmarkDebateComplex runs the complex path against a simulated provider
// that answers after latency L and generates at R tokens per second, through
// the production client stack and a real SQLite journal. The bound is the
// critical path: L + (longest proposer's output tokens)/R + L + (aggregator's
// output tokens)/R, taken from the run's own journal. It reports wall time
// over that bound.
//
//	go test -run '^$' -bench BenchmarkDebateComplex -benchtime 5x ./pipeline/debate
func BenchmarkDebateComplex(b *testing.B) {
	ctx := context.Background()
	L, R := *benchLatency, *benchRate
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	stack := llm.Chain(mock.New(MockResponders(), mock.WithLatency(L), mock.WithTokenRate(R)),
		middleware.Meter(middleware.DefaultPrices()),
		middleware.Retry(middleware.RetryConfig{}),
		middleware.Breaker(middleware.BreakerConfig{}),
		middleware.Timeout(0))
	pipe, err := New(counter, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: stack}
	var wall, bound time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := query("Explain step by step how to implement async iterators", nil)
		r, err := e.Start(ctx, engine.RunInfo{Pipeline: "debate", Params: p}, nil)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := pipe.Run(ctx, r, p, func(string) {}); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		b.StopTimer()
		steps, _ := db.Steps(ctx, r.ID())
		maxProposer, agg := 0, 0
		for _, s := range steps {
			switch {
			case strings.HasPrefix(s.Key, "r1/"):
				maxProposer = max(maxProposer, s.Usage.OutputTokens)
			case s.Key == "aggregate":
				agg = s.Usage.OutputTokens
			}
		}
		tok := func(n int) time.Duration { return time.Duration(float64(n) / R * float64(time.Second)) }
		bound += 2*L + tok(maxProposer) + tok(agg)
		b.StartTimer()
	}
	b.ReportMetric(float64(wall)/float64(bound), "wall/critical-path")
	b.ReportMetric(float64(bound.Milliseconds())/float64(b.N), "bound-ms")
}

// slowSearch is a web search that answers after latency, honouring ctx.
type slowSearch struct{ latency time.Duration }

func (s slowSearch) Name() string { return "slow" }

func (s slowSearch) Search(ctx context.Context, q string, max int) ([]search.Result, error) {
	t := time.NewTimer(s.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var out []search.Result
	for i := 0; i < max; i++ {
		out = append(out, search.Result{Title: fmt.Sprintf("Result %d", i), URL: fmt.Sprintf("https://example.org/%d", i), Snippet: "about " + q})
	}
	return out, nil
}

// BenchmarkDebateSearchHidden runs the one-round complex path with web
// search on, against a simulated provider whose every call takes latency L
// (-debate.call, 1s by default; no generation time) and a search that also takes L, through the
// production client stack and a real SQLite journal. The critical path is
// the proposers (L) then the aggregator (L): the search starts with the
// proposers and none of them waits for it. It reports wall time over 2L.
//
//	go test -run '^$' -bench BenchmarkDebateSearchHidden -benchtime 5x ./pipeline/debate
func BenchmarkDebateSearchHidden(b *testing.B) {
	ctx := context.Background()
	L := *benchCall
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	stack := llm.Chain(mock.New(MockResponders(), mock.WithLatency(L)),
		middleware.Meter(middleware.DefaultPrices()),
		middleware.Retry(middleware.RetryConfig{}),
		middleware.Breaker(middleware.BreakerConfig{}),
		middleware.Timeout(0))
	pipe, err := New(counter, slowSearch{latency: L}, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: stack}
	var wall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := query("Explain step by step how to implement async iterators", func(p *Params) { p.Mode = "complex" })
		b.StopTimer()
		r, err := e.Start(ctx, engine.RunInfo{Pipeline: "debate", Params: p}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		res, err := pipe.Run(ctx, r, p, func(string) {})
		wall += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Sources) != MaxSearchResults {
			b.Fatalf("sources %d, note %q", len(res.Sources), res.SearchNote)
		}
	}
	b.ReportMetric(float64(wall)/float64(time.Duration(b.N)*2*L), "wall/2L")
}
