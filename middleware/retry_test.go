package middleware

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

func newRetry(t *testing.T, cfg RetryConfig, fn func(context.Context, int, *llm.Request) (*llm.Response, error)) (llm.Client, *fakeClient, *fakeSleeper) {
	t.Helper()
	s := &fakeSleeper{}
	if cfg.Sleep == nil {
		cfg.Sleep = s.Sleep
	}
	next := &fakeClient{fn: fn}
	return Retry(cfg)(next), next, s
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	e := status(429)
	e.RetryAfter = 3 * time.Second
	var logs logBuffer
	c, next, s := newRetry(t, RetryConfig{Logger: newLogger(&logs)}, results(okResp("hi"), e))
	resp, err := c.Generate(context.Background(), request("secret prompt"))
	if err != nil || resp.Text != "hi" {
		t.Fatalf("Generate = %v, %v", resp, err)
	}
	if got := s.Delays(); !slices.Equal(got, []time.Duration{3 * time.Second}) {
		t.Errorf("delays = %v, want [3s]", got)
	}
	if next.Calls() != 2 {
		t.Errorf("calls = %d, want 2", next.Calls())
	}
	out := logs.String()
	for _, want := range []string{"agent=spark.evaluate", "provider=openai", "attempt=1", "delay=3s", "HTTP 429"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "secret prompt") || strings.Contains(out, "SECRET-SYSTEM") {
		t.Errorf("log leaks the prompt: %q", out)
	}
}

func TestRetryBackoffAndExhaustion(t *testing.T) {
	errs := []error{status(503), status(502), status(500), status(504)}
	c, next, s := newRetry(t, RetryConfig{}, results(okResp("never"), errs...))
	_, err := c.Generate(context.Background(), request("p"))
	if err == nil {
		t.Fatal("want an error")
	}
	if got := s.Delays(); !slices.Equal(got, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}) {
		t.Errorf("delays = %v, want [1s 2s 4s]", got)
	}
	if next.Calls() != 4 {
		t.Errorf("calls = %d, want 4", next.Calls())
	}
	var le *llm.Error
	if !errors.As(err, &le) || le != errs[3] {
		t.Errorf("error %v does not wrap the last *llm.Error", err)
	}
	if !strings.Contains(err.Error(), "4 attempts") || strings.Contains(err.Error(), "spark.evaluate") {
		t.Errorf("error %q does not give the attempts, or names the agent its caller names", err)
	}
}

func TestRetryBackoffCap(t *testing.T) {
	always := func(context.Context, int, *llm.Request) (*llm.Response, error) { return nil, status(503) }
	c, _, s := newRetry(t, RetryConfig{MaxRetries: 7}, always)
	if _, err := c.Generate(context.Background(), request("p")); err == nil {
		t.Fatal("want an error")
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if got := s.Delays(); !slices.Equal(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}

	// Retry-After beyond Max is capped too.
	e := status(429)
	e.RetryAfter = 2 * time.Minute
	c, _, s = newRetry(t, RetryConfig{}, results(okResp("ok"), e))
	if _, err := c.Generate(context.Background(), request("p")); err != nil {
		t.Fatal(err)
	}
	if got := s.Delays(); !slices.Equal(got, []time.Duration{30 * time.Second}) {
		t.Errorf("delays = %v, want [30s]", got)
	}

	// Custom base and max.
	c, _, s = newRetry(t, RetryConfig{MaxRetries: 4, Base: 100 * time.Millisecond, Max: 500 * time.Millisecond}, always)
	c.Generate(context.Background(), request("p"))
	want = []time.Duration{100, 200, 400, 500}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if got := s.Delays(); !slices.Equal(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
}

func TestRetryNotRetried(t *testing.T) {
	bad := status(400)
	c, next, s := newRetry(t, RetryConfig{}, results(okResp("x"), bad))
	_, err := c.Generate(context.Background(), request("p"))
	if err != bad {
		t.Errorf("err = %v, want the 400 unchanged", err)
	}
	if next.Calls() != 1 || len(s.Delays()) != 0 {
		t.Errorf("calls = %d, delays = %v; want 1 call, no delay", next.Calls(), s.Delays())
	}

	// Negative MaxRetries disables retries.
	c, next, _ = newRetry(t, RetryConfig{MaxRetries: -1}, results(okResp("x"), status(503)))
	if _, err := c.Generate(context.Background(), request("p")); err == nil || next.Calls() != 1 {
		t.Errorf("err = %v, calls = %d; want an error after 1 call", err, next.Calls())
	}
}

func TestRetryCallerCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func(ctx context.Context) error
	}{
		{"context error", func(ctx context.Context) error { return ctx.Err() }},
		{"retryable error", func(context.Context) error { return status(503) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c, next, s := newRetry(t, RetryConfig{}, func(ctx context.Context, _ int, _ *llm.Request) (*llm.Response, error) {
				cancel()
				return nil, tc.err(ctx)
			})
			if _, err := c.Generate(ctx, request("p")); err == nil {
				t.Fatal("want an error")
			}
			if next.Calls() != 1 || len(s.Delays()) != 0 {
				t.Errorf("calls = %d, delays = %v; want 1 call, no delay", next.Calls(), s.Delays())
			}
		})
	}
}

func TestRetryCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := RetryConfig{Sleep: func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}}
	c, next, _ := newRetry(t, cfg, results(okResp("x"), status(503)))
	_, err := c.Generate(ctx, request("p"))
	if !errors.Is(err, context.Canceled) || next.Calls() != 1 {
		t.Errorf("err = %v, calls = %d; want context.Canceled after 1 call", err, next.Calls())
	}
}

func TestRetryStreaming(t *testing.T) {
	broken := &llm.Error{Provider: "openai", Message: "stream broken", Retryable: true, Err: io.ErrUnexpectedEOF}

	// A delta was shown: no retry.
	var shown []string
	req := request("p")
	req.OnDelta = func(d string) { shown = append(shown, d) }
	c, next, _ := newRetry(t, RetryConfig{}, func(_ context.Context, n int, r *llm.Request) (*llm.Response, error) {
		r.OnDelta("Hel")
		return nil, broken
	})
	if _, err := c.Generate(context.Background(), req); err != broken {
		t.Errorf("err = %v, want the stream error unchanged", err)
	}
	if next.Calls() != 1 || !slices.Equal(shown, []string{"Hel"}) {
		t.Errorf("calls = %d, shown = %q; want 1 call, [Hel]", next.Calls(), shown)
	}

	// Nothing was shown yet: retried.
	shown = nil
	c, next, _ = newRetry(t, RetryConfig{}, func(_ context.Context, n int, r *llm.Request) (*llm.Response, error) {
		if n == 1 {
			r.OnDelta("")
			return nil, broken
		}
		r.OnDelta("Hello")
		return okResp("Hello"), nil
	})
	resp, err := c.Generate(context.Background(), req)
	if err != nil || resp.Text != "Hello" || next.Calls() != 2 || !slices.Equal(shown, []string{"", "Hello"}) {
		t.Errorf("resp = %v, err = %v, calls = %d, shown = %q", resp, err, next.Calls(), shown)
	}
	if req.OnDelta == nil || next.reqs[0].OnDelta == nil {
		t.Error("OnDelta lost")
	}
}

func TestDefaultSleep(t *testing.T) {
	if err := sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleep = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Error("sleep ignored its context")
	}
}
