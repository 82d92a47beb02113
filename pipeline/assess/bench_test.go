package assess

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/search"
)

var (
	benchLatency = flag.Duration("assess.latency", 200*time.Millisecond, "simulated provider latency per call for the assess benchmarks")
	benchSearch  = flag.Duration("assess.search", 150*time.Millisecond, "simulated latency per web search for BenchmarkAssessWebResearch")
)

// slowSearch is a simulated search provider: every search takes d and
// returns two pages named after the query.
type slowSearch struct{ d time.Duration }

func (s slowSearch) Name() string { return "simulated" }

func (s slowSearch) Search(ctx context.Context, q string, max int) ([]search.Result, error) {
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	h := mockHash(q)
	return []search.Result{
		{Title: q + " (1)", URL: fmt.Sprintf("https://sim.example/%08x/1", h), Snippet: "about " + q, Score: 1},
		{Title: q + " (2)", URL: fmt.Sprintf("https://sim.example/%08x/2", h), Snippet: "about " + q, Score: 0.5},
	}, nil
}

// benchRun runs b.N assessments with p through the production client stack
// (meter, retry, breaker, timeout) around the mock with latency L and a
// real SQLite journal, writing every file, and returns the wall time per
// run and the usage of the last.
func benchRun(b *testing.B, cfg Config, p Params) (time.Duration, llm.Usage) {
	ctx := context.Background()
	db := newDB(b)
	stack := llm.Chain(mock.New(MockResponders(), mock.WithLatency(*benchLatency)),
		middleware.Meter(middleware.DefaultPrices()),
		middleware.Retry(middleware.RetryConfig{}),
		middleware.Breaker(middleware.BreakerConfig{}),
		middleware.Timeout(0))
	cfg.Mock = true
	pipe, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: stack}
	var usage llm.Usage
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		p.OutputDir = filepath.Join(b.TempDir(), fmt.Sprint(i))
		r, err := e.Start(ctx, engine.RunInfo{Pipeline: "assess", Params: p}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pipe.Run(ctx, r, p); err != nil {
			b.Fatal(err)
		}
		usage = r.Usage()
	}
	wall := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	return wall, usage
}

// BenchmarkAssessFactCheck runs the review-and-fact-check mode: the mock
// reviewer (normal strictness) and fact checker reject the first draft, so
// there are two iterations of analyst → (reviewer ∥ fact checker): 6 calls
// whose critical path is 4 round trips, 4·L. It reports wall time over that
// bound, and over the 6·L a sequential loop would take.
//
//	go test -run '^$' -bench BenchmarkAssess -benchtime 5x ./pipeline/assess
func BenchmarkAssessFactCheck(b *testing.B) {
	p := DefaultParams()
	p.Idea, p.Mode, p.FactCheck = idea, AnalyzeAndReview, true
	wall, usage := benchRun(b, Config{}, p)
	L := *benchLatency
	b.ReportMetric(float64(wall)/float64(4*L), "wall/critical-path")
	b.ReportMetric(float64(wall)/float64(time.Duration(usage.LLMCalls)*L), "wall/sequential")
	b.ReportMetric(float64(usage.LLMCalls), "calls/run")
}

// BenchmarkAssessWebResearch adds web research and the judge: the plan (L),
// four searches side by side (S), two iterations of analyst → (reviewer ∥
// fact checker) (4·L) and the judge (L); the bound is 6·L + S.
func BenchmarkAssessWebResearch(b *testing.B) {
	p := DefaultParams()
	p.Idea, p.Mode, p.FactCheck = idea, AnalyzeReviewAndJudge, true
	wall, usage := benchRun(b, Config{Searcher: slowSearch{*benchSearch}}, p)
	L, S := *benchLatency, *benchSearch
	b.ReportMetric(float64(wall)/float64(6*L+S), "wall/critical-path")
	b.ReportMetric(float64(usage.LLMCalls), "calls/run")
}
