package middleware

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

// switchable answers with the error in err, or with a reply when it is nil.
type switchable struct {
	calls atomic.Int32
	err   atomic.Pointer[error]
}

func (s *switchable) set(err error) { s.err.Store(&err) }

func (s *switchable) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	s.calls.Add(1)
	if p := s.err.Load(); p != nil && *p != nil {
		return nil, *p
	}
	return okResp("ok"), nil
}

func newBreaker(cfg BreakerConfig) (llm.Client, *switchable, *fakeClock) {
	clock := newFakeClock()
	cfg.Now = clock.Now
	next := &switchable{}
	return Breaker(cfg)(next), next, clock
}

func call(c llm.Client) error {
	_, err := c.Generate(context.Background(), request("p"))
	return err
}

func TestBreakerOpensAndRecovers(t *testing.T) {
	var logs logBuffer
	c, next, clock := newBreaker(BreakerConfig{Logger: newLogger(&logs)})
	next.set(status(503))
	for i := range 5 {
		if err := call(c); errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("call %d: circuit open too early", i+1)
		}
	}

	// Open: fail fast without calling next.
	err := call(c)
	if !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("err = %v, want ErrCircuitOpen", err)
	}
	if llm.IsRetryable(err) {
		t.Error("ErrCircuitOpen must not be retryable")
	}
	if next.calls.Load() != 5 {
		t.Errorf("calls = %d, want 5", next.calls.Load())
	}
	when := clock.Now().Add(time.Minute).Format(time.RFC3339)
	if msg := err.Error(); !strings.Contains(msg, when) || !strings.Contains(msg, "in 1m0s") || strings.Contains(msg, "spark.evaluate") {
		t.Errorf("error %q does not say when it retries", msg)
	}
	clock.Advance(59 * time.Second)
	if err := call(c); !errors.Is(err, ErrCircuitOpen) || next.calls.Load() != 5 {
		t.Fatalf("before cooldown: err = %v, calls = %d", err, next.calls.Load())
	}

	// Half-open: the trial fails and the circuit re-opens.
	clock.Advance(time.Second)
	if err := call(c); errors.Is(err, ErrCircuitOpen) || next.calls.Load() != 6 {
		t.Fatalf("trial: err = %v, calls = %d", err, next.calls.Load())
	}
	if err := call(c); !errors.Is(err, ErrCircuitOpen) || next.calls.Load() != 6 {
		t.Fatalf("after failed trial: err = %v, calls = %d", err, next.calls.Load())
	}

	// Half-open again: the trial succeeds and the circuit closes.
	clock.Advance(time.Minute)
	next.set(nil)
	if err := call(c); err != nil {
		t.Fatalf("trial: %v", err)
	}
	for range 3 {
		if err := call(c); err != nil {
			t.Fatalf("closed: %v", err)
		}
	}
	if next.calls.Load() != 10 {
		t.Errorf("calls = %d, want 10", next.calls.Load())
	}
	// Closed again means the count restarted.
	next.set(status(500))
	for range 4 {
		call(c)
	}
	if err := call(c); errors.Is(err, ErrCircuitOpen) {
		t.Error("opened before 5 new failures")
	}
	if err := call(c); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("err = %v, want ErrCircuitOpen", err)
	}
	out := logs.String()
	for _, want := range []string{"circuit opened", "circuit half-open", "circuit closed", "provider=openai"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q: %s", want, out)
		}
	}
}

func TestBreakerSuccessResetsCount(t *testing.T) {
	c, next, _ := newBreaker(BreakerConfig{Threshold: 3})
	for range 3 {
		next.set(status(503))
		call(c)
		call(c)
		next.set(nil)
		if err := call(c); err != nil {
			t.Fatalf("circuit opened without 3 consecutive failures: %v", err)
		}
	}
	// Permanent errors show the provider is up: they reset too.
	next.set(status(503))
	call(c)
	call(c)
	next.set(status(400))
	call(c)
	next.set(status(503))
	call(c)
	call(c)
	if err := call(c); errors.Is(err, ErrCircuitOpen) {
		t.Error("a 400 did not reset the count")
	}
	if err := call(c); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("err = %v, want ErrCircuitOpen", err)
	}
}

func TestBreakerIgnoresCancellation(t *testing.T) {
	c, next, _ := newBreaker(BreakerConfig{Threshold: 2})
	next.set(status(503))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 10 {
		if _, err := c.Generate(ctx, request("p")); errors.Is(err, ErrCircuitOpen) {
			t.Fatal("cancelled calls opened the circuit")
		}
	}
	next.set(context.Canceled)
	for range 10 {
		if err := call(c); errors.Is(err, ErrCircuitOpen) {
			t.Fatal("cancellation errors opened the circuit")
		}
	}
	if next.calls.Load() != 20 {
		t.Errorf("calls = %d, want 20", next.calls.Load())
	}
}

func TestBreakerSingleTrial(t *testing.T) {
	clock := newFakeClock()
	fail := atomic.Bool{}
	fail.Store(true)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var calls atomic.Int32
	next := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		calls.Add(1)
		if fail.Load() {
			return nil, status(503)
		}
		entered <- struct{}{}
		select {
		case <-release:
			return okResp("ok"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	c := Breaker(BreakerConfig{Threshold: 1, Cooldown: time.Second, Now: clock.Now})(next)
	call(c)
	clock.Advance(time.Second)
	fail.Store(false)

	// A cancelled trial decides nothing: the next call is a trial again.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := c.Generate(ctx, request("p")); done <- err }()
	<-entered
	if err := call(c); !errors.Is(err, ErrCircuitOpen) || !strings.Contains(err.Error(), "trial call is in progress") {
		t.Errorf("concurrent call during trial: err = %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("trial err = %v", err)
	}

	go func() { done <- call(c) }()
	<-entered
	if err := call(c); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("concurrent call during trial: err = %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("trial: %v", err)
	}
	if calls.Load() != 3 {
		t.Errorf("calls = %d, want 3", calls.Load())
	}
	go func() { <-entered }()
	if err := call(c); err != nil {
		t.Errorf("after trial: %v", err)
	}
}

func TestBreakerConcurrent(t *testing.T) {
	c, next, clock := newBreaker(BreakerConfig{Threshold: 3, Cooldown: time.Second})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				next.set(status(503))
			} else {
				next.set(nil)
			}
			clock.Advance(100 * time.Millisecond)
			call(c)
		}()
	}
	wg.Wait()
}

func TestBreakerPerClient(t *testing.T) {
	mw := Breaker(BreakerConfig{Threshold: 1})
	a, b := &switchable{}, &switchable{}
	a.set(status(503))
	ca, cb := mw(a), mw(b)
	call(ca)
	if err := call(ca); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("a: err = %v, want ErrCircuitOpen", err)
	}
	if err := call(cb); err != nil {
		t.Errorf("b shares a's circuit: %v", err)
	}
}

// TestBreakerCheck: one circuit shared by the clients it wraps; Check
// says, changing nothing, whether a call would be refused now, with the
// time left until the trial call as the error's RetryAfter, as the
// refused call's error has.
func TestBreakerCheck(t *testing.T) {
	clock := newFakeClock()
	cb := NewBreaker(BreakerConfig{Now: clock.Now, Threshold: 2, Cooldown: time.Minute})
	a, b := &switchable{}, &switchable{}
	ca, cbc := cb.Wrap(a), cb.Middleware()(b)
	a.set(status(503))
	if cb.Check() != nil {
		t.Fatal("a closed circuit refuses")
	}
	_, _ = call(ca), call(ca)
	err := cb.Check()
	if !errors.Is(err, ErrCircuitOpen) || llm.RetryAfterOf(err) != time.Minute || !strings.Contains(err.Error(), "next trial call at") {
		t.Fatalf("Check = %v (retry after %v)", err, llm.RetryAfterOf(err))
	}
	clock.Advance(20 * time.Second)
	err = call(cbc) // the other client shares the circuit
	if !errors.Is(err, ErrCircuitOpen) || llm.RetryAfterOf(err) != 40*time.Second || b.calls.Load() != 0 {
		t.Fatalf("call = %v (retry after %v), %d calls", err, llm.RetryAfterOf(err), b.calls.Load())
	}
	clock.Advance(40 * time.Second)
	if err := cb.Check(); err != nil {
		t.Fatalf("Check after the cooldown = %v", err)
	}
	if err := call(cbc); err != nil {
		t.Fatalf("the trial call: %v", err)
	}
	if cb.Check() != nil {
		t.Error("the circuit did not close")
	}
}

// TestBreakerWatch: the watch follows the circuit: closed with the
// failures counted, open with when it lets a trial through and the last
// error, half-open once that time has passed, closed again after a trial
// that succeeds.
func TestBreakerWatch(t *testing.T) {
	var w BreakerWatch
	if st := w.Status(); st.State != CircuitClosed || st.Failures != 0 {
		t.Fatalf("a fresh watch: %+v", st)
	}
	c, next, clock := newBreaker(BreakerConfig{Watch: &w, Cooldown: 30 * time.Second})
	next.set(status(503))
	for range 2 {
		call(c)
	}
	if st := w.Status(); st.State != CircuitClosed || st.Failures != 2 || !st.RetryAt.IsZero() || st.LastError != "" {
		t.Errorf("after 2 failures: %+v", st)
	}
	for range 3 {
		call(c)
	}
	st := w.Status()
	if st.State != CircuitOpen || st.Failures != 5 || !st.RetryAt.Equal(clock.Now().Add(30*time.Second)) || !strings.Contains(st.LastError, "503") {
		t.Errorf("open: %+v", st)
	}
	clock.Advance(30 * time.Second)
	if st := w.Status(); st.State != CircuitHalfOpen {
		t.Errorf("after the cooldown: %+v", st)
	}
	next.set(nil)
	if err := call(c); err != nil {
		t.Fatal(err)
	}
	if st := w.Status(); st.State != CircuitClosed || st.Failures != 0 || st.LastError != "" {
		t.Errorf("after a good trial: %+v", st)
	}
}
