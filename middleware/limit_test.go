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
	l := NewLimiter(LimitConfig{DefaultProvider: "p", Limit: func(string) int { return 2 }, Queue: 1})
	c := llm.Chain(p, l.Middleware())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 3)
	for range 3 { // 2 in flight, 1 waiting
		go func() { _, err := c.Generate(ctx, &llm.Request{}); done <- err }()
	}
	waitFor(t, l.slotsOf("p"), "two calls in flight and the third waiting", func() bool {
		return p.now.Load() == 2 && l.slotsOf("p").waiting == 1
	})
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

// waitFor polls cond, under s's lock, until it holds.
func waitFor(t *testing.T, s *slots, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		ok := cond()
		s.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAdmit: requests are admitted while the calls in flight, those
// waiting and the requests admitted that made no call yet fit the limit
// and the queue, and refused beyond with the 429 of a refused call; an
// admission given back frees its place; an admitted request's calls wait
// rather than being refused; a request not marked RefuseWhenBusy is
// always admitted.
func TestAdmit(t *testing.T) {
	gate := make(chan struct{})
	p := llm.ClientFunc(func(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
		select {
		case <-gate:
			return &llm.Response{Text: "ok"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	l := NewLimiter(LimitConfig{DefaultProvider: "p", Limit: func(string) int { return 1 }, Queue: 1})
	c := llm.Chain(p, l.Middleware())
	busy := RefuseWhenBusy(context.Background())

	// Two places: one slot, one in line.
	a, endA, err := l.Admit(busy)
	if err != nil {
		t.Fatal(err)
	}
	_, endB, err := l.Admit(busy)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = l.Admit(busy)
	le, ok := errors.AsType[*llm.Error](err)
	if !errors.Is(err, ErrBusy) || !ok || le.Status != 429 || le.RetryAfter < time.Second {
		t.Fatalf("a third request: %v", err)
	}
	if _, _, err := l.Admit(context.Background()); err != nil {
		t.Fatalf("a background request: %v", err)
	}
	endB() // gave up before its first call
	endB()
	s := l.slotsOf("p")
	waitFor(t, s, "B's place is free", func() bool { return s.pending == 1 })

	// A calls and holds the slot; a background call waits in line: the
	// queue is full, so a call made with RefuseWhenBusy is refused, but
	// not one of a request admitted before.
	doneA := make(chan error, 1)
	go func() { _, err := c.Generate(a, &llm.Request{}); doneA <- err }()
	waitFor(t, s, "A holds the slot", func() bool { return len(s.sem) == 1 && s.pending == 0 })
	d, endD, err := l.Admit(busy)
	if err != nil {
		t.Fatalf("D: %v", err)
	}
	defer endD()
	doneC := make(chan error, 1)
	go func() { _, err := c.Generate(context.Background(), &llm.Request{}); doneC <- err }()
	waitFor(t, s, "C waits", func() bool { return s.waiting == 1 })
	if _, err := c.Generate(busy, &llm.Request{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a refusable call with the queue full: %v", err)
	}
	doneD := make(chan error, 1)
	go func() { _, err := c.Generate(d, &llm.Request{}); doneD <- err }()
	waitFor(t, s, "D waits", func() bool { return s.waiting == 2 })
	close(gate)
	for name, ch := range map[string]chan error{"A": doneA, "C": doneC, "D": doneD} {
		if err := <-ch; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	endA()
	waitFor(t, s, "every place is free", func() bool { return s.pending == 0 && s.waiting == 0 && len(s.sem) == 0 })
}
