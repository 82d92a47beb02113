package middleware

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

// inflight is a provider that counts its calls in flight and remembers
// the most it saw; each call lasts hold.
type inflight struct {
	hold      time.Duration
	now, peak atomic.Int64
	calls     atomic.Int64
}

func (p *inflight) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	n := p.now.Add(1)
	defer p.now.Add(-1)
	p.calls.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	select {
	case <-time.After(p.hold):
		return &llm.Response{Text: "ok"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestLimitHoldsPerProvider: 50 calls at once to each of two providers
// never have more in flight than each one's limit, and every one is
// answered (background calls wait).
func TestLimitHoldsPerProvider(t *testing.T) {
	a, b := &inflight{hold: 5 * time.Millisecond}, &inflight{hold: 5 * time.Millisecond}
	router := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Provider == "b" {
			return b.Generate(ctx, req)
		}
		return a.Generate(ctx, req)
	})
	c := llm.Chain(router, Limit(LimitConfig{DefaultProvider: "a", Limit: func(p string) int { return map[string]int{"a": 3, "b": 5}[p] }}))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			req := &llm.Request{Agent: "x"}
			if i%2 == 1 {
				req.Provider = "b"
			}
			if _, err := c.Generate(context.Background(), req); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a background call failed: %v", err)
	}
	if a.peak.Load() != 3 || b.peak.Load() != 5 || a.calls.Load() != 50 || b.calls.Load() != 50 {
		t.Errorf("peaks %d and %d (limits 3 and 5), calls %d and %d", a.peak.Load(), b.peak.Load(), a.calls.Load(), b.calls.Load())
	}
}

// TestLimitRefusesWhenQueueFull: calls made with RefuseWhenBusy beyond the
// limit and the queue fail at once with a 429 *llm.Error wrapping ErrBusy,
// with a Retry-After hint, that Retry does not retry; a waiting call whose
// context ends stops waiting.
func TestLimitRefusesWhenQueueFull(t *testing.T) {
	p := &inflight{hold: time.Hour}
	c := llm.Chain(p, Limit(LimitConfig{DefaultProvider: "p", Limit: func(string) int { return 2 }, Queue: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 3)
	for range 3 { // 2 in flight, 1 waiting
		go func() { _, err := c.Generate(ctx, &llm.Request{}); done <- err }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.now.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the third is waiting
	_, err := c.Generate(RefuseWhenBusy(context.Background()), &llm.Request{})
	le, ok := errors.AsType[*llm.Error](err)
	if !errors.Is(err, ErrBusy) || !ok || le.Status != 429 || le.RetryAfter < time.Second || le.Provider != "p" {
		t.Fatalf("refused call: %v", err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer wcancel()
	if _, err := c.Generate(wctx, &llm.Request{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiting call whose context ended: %v", err)
	}
	cancel()
	for range 3 {
		<-done
	}
	if p.peak.Load() != 2 {
		t.Errorf("peak %d, limit 2", p.peak.Load())
	}
}
