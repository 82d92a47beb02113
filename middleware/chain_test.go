package middleware

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

// chain composes the decorators in the documented order.
func chain(provider llm.Client, threshold int, s *fakeSleeper, clock *fakeClock, store *memStore) llm.Client {
	return llm.Chain(provider,
		Cache(CacheConfig{Provider: "openai", DefaultModel: "gpt-4o-mini", Store: store, Now: clock.Now}),
		Meter(DefaultPrices()),
		Retry(RetryConfig{Sleep: s.Sleep}),
		Breaker(BreakerConfig{Threshold: threshold, Now: clock.Now}),
		Timeout(5*time.Millisecond),
	)
}

func TestChain(t *testing.T) {
	s, clock, store := &fakeSleeper{}, newFakeClock(), newMemStore()
	provider := &fakeClient{fn: func(ctx context.Context, n int, req *llm.Request) (*llm.Response, error) {
		switch n {
		case 1: // too slow: the timeout turns it into a retryable error
			<-ctx.Done()
			return nil, ctx.Err()
		case 2:
			return nil, status(429)
		}
		r := okResp("answer")
		r.Usage.InputTokens, r.Usage.OutputTokens = 1_000_000, 1_000_000
		return r, nil
	}}
	c := chain(provider, 0, s, clock, store)

	resp, err := c.Generate(context.Background(), request("p"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "answer" || resp.Cached || !near(resp.Usage.CostUSD, 0.75) {
		t.Errorf("first = %+v, want priced reply", resp)
	}
	if got := s.Delays(); !slices.Equal(got, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("delays = %v", got)
	}

	resp, err = c.Generate(context.Background(), request("p"))
	if err != nil || !resp.Cached || resp.Usage != (llm.Usage{CachedCalls: 1, CachedInputTokens: 1_000_000, CachedOutputTokens: 1_000_000}) {
		t.Errorf("second = %+v, %v; want a free cache hit", resp, err)
	}
	if provider.Calls() != 3 {
		t.Errorf("provider calls = %d, want 3", provider.Calls())
	}
}

func TestChainBreakerStopsRetries(t *testing.T) {
	s, clock := &fakeSleeper{}, newFakeClock()
	provider := &fakeClient{fn: func(context.Context, int, *llm.Request) (*llm.Response, error) {
		return nil, status(503)
	}}
	_, err := chain(provider, 2, s, clock, newMemStore()).Generate(context.Background(), request("p"))
	if !errors.Is(err, ErrCircuitOpen) || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("err = %v, want ErrCircuitOpen after 3 attempts", err)
	}
	if provider.Calls() != 2 {
		t.Errorf("provider calls = %d, want 2 (then the circuit opened)", provider.Calls())
	}
}
