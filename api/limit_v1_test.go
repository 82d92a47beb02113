package api_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// counting counts the provider calls in flight and the most it saw.
type counting struct {
	next      llm.Client
	now, peak atomic.Int64
}

func (c *counting) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for old := c.peak.Load(); n > old && !c.peak.CompareAndSwap(old, n); old = c.peak.Load() {
	}
	return c.next.Generate(ctx, req)
}

// TestProviderLimitUnderParallelRequests: 50 chat completions and 20
// synchronous runs at once never put more calls in flight at the provider
// than its limit; those beyond the limit and its queue are answered 429
// with Retry-After, the others succeed.
func TestProviderLimitUnderParallelRequests(t *testing.T) {
	const limit = 3
	var prov *counting
	hs := newHarness(t, options{latency: 20 * time.Millisecond, client: func(c llm.Client) llm.Client {
		prov = &counting{next: c}
		return llm.Chain(prov, middleware.Limit(middleware.LimitConfig{DefaultProvider: "mock", Limit: func(string) int { return limit }, Queue: 4}))
	}})
	var ok, busy atomic.Int64
	var wg sync.WaitGroup
	check := func(what string, r resp) {
		switch {
		case r.status == http.StatusOK || r.status == http.StatusAccepted:
			ok.Add(1)
		case r.status == http.StatusTooManyRequests && r.header.Get("Retry-After") != "":
			busy.Add(1)
		default:
			t.Errorf("%s: %d %s", what, r.status, r.body)
		}
	}
	for range 50 {
		wg.Go(func() {
			check("chat completion", hs.do("POST", "/v1/chat/completions", map[string]any{"model": "madspark-spark",
				"messages": []map[string]string{{"role": "user", "content": "urban farming"}}}))
		})
	}
	for range 20 {
		wg.Go(func() {
			check("generate-ideas", hs.do("POST", "/api/generate-ideas", map[string]any{"topic": "urban farming"}))
		})
	}
	wg.Wait()
	if p := prov.peak.Load(); p > limit || p < 1 {
		t.Errorf("peak calls in flight %d, limit %d", p, limit)
	}
	if ok.Load() == 0 || busy.Load() == 0 {
		t.Errorf("%d succeeded and %d were refused as busy; want some of each", ok.Load(), busy.Load())
	}
}

// TestV1RateLimited: /v1 has the same per-client rate limit as /api.
func TestV1RateLimited(t *testing.T) {
	hs := newHarness(t, options{config: func(c *api.Config) { c.RateLimit, c.RateBurst = 0.01, 2 }})
	var last resp
	for range 3 {
		last = hs.do("GET", "/v1/models", nil)
	}
	if last.status != 429 || last.header.Get("Retry-After") == "" {
		t.Fatalf("third request in a burst of 2: %d %s", last.status, last.body)
	}
}
