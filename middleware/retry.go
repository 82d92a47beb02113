package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/madspark/madspark/llm"
)

// RetryConfig configures Retry. The zero value is ready to use.
type RetryConfig struct {
	// MaxRetries is the number of times a failed call is sent again, so a
	// call makes at most MaxRetries+1 attempts. Zero means 3; a negative
	// value disables retries.
	MaxRetries int
	// Base is the delay before the first retry; each further retry doubles
	// it. Zero means 1s.
	Base time.Duration
	// Max caps every delay, including one a provider asked for with
	// Retry-After. Zero means 30s.
	Max time.Duration
	// Logger receives a warning for every retry. Nil discards.
	Logger *slog.Logger
	// Sleep waits for d or until ctx is done, whichever comes first, and
	// returns ctx.Err() in the latter case. Nil means a timer that honours
	// ctx; tests inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Retry returns a Middleware that sends a failed call again when the failure
// is transient, as reported by llm.IsRetryable: HTTP 429 and 5xx, timeouts,
// broken connections and streams.
//
// The n-th retry waits Base·2ⁿ⁻¹ (1s, 2s, 4s, ... by default), or the delay
// the provider asked for with Retry-After (llm.RetryAfterOf) when that is
// longer, and never more than Max.
//
// A call is not retried when the caller's context is done, when the error is
// not retryable, or when the request streams (OnDelta is not nil) and a
// non-empty delta has already been delivered, because the caller has already
// shown that text. When the retries are exhausted, or a later attempt fails
// for good, the error wraps the last attempt's error and says how many
// attempts were made; an error from a single attempt is returned unchanged.
// If the caller's context is done while waiting, the error wraps the
// context's error. Each retry is told, before its pause, to the observers
// of the call's context (llm.WithRetryObserver).
func Retry(cfg RetryConfig) llm.Middleware {
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.Base <= 0 {
		cfg.Base = time.Second
	}
	if cfg.Max <= 0 {
		cfg.Max = 30 * time.Second
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	cfg.Logger = logger(cfg.Logger)
	return func(next llm.Client) llm.Client {
		return &retrier{cfg: cfg, next: next}
	}
}

type retrier struct {
	cfg  RetryConfig
	next llm.Client
}

func (r *retrier) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	call := req
	var delivered atomic.Bool
	if req.OnDelta != nil {
		c := *req
		onDelta := req.OnDelta
		c.OnDelta = func(delta string) {
			if delta != "" {
				delivered.Store(true)
			}
			onDelta(delta)
		}
		call = &c
	}
	for attempt := 1; ; attempt++ {
		resp, err := r.next.Generate(ctx, call)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil || !llm.IsRetryable(err) || delivered.Load() || attempt > r.cfg.MaxRetries {
			return nil, attemptsError(req, attempt, err)
		}
		d := r.delay(attempt, err)
		llm.ObserveRetry(ctx, llm.Retry{Attempt: attempt, MaxAttempts: r.cfg.MaxRetries + 1, Delay: d, Err: err})
		r.cfg.Logger.Warn("llm call failed, retrying",
			append(callAttrs(req, err), "attempt", attempt, "delay", d, "error", err)...)
		if serr := r.cfg.Sleep(ctx, d); serr != nil {
			return nil, fmt.Errorf("retry abandoned after %s: %w (last error: %v)",
				plural(attempt, "attempt"), serr, err)
		}
	}
}

// delay returns how long to wait after the given failed attempt (1-based).
func (r *retrier) delay(attempt int, err error) time.Duration {
	d := r.cfg.Base
	for i := 1; i < attempt && d < r.cfg.Max; i++ {
		if d > r.cfg.Max/2 {
			d = r.cfg.Max
			break
		}
		d *= 2
	}
	d = max(d, llm.RetryAfterOf(err))
	return min(d, r.cfg.Max)
}

// attemptsError returns err unchanged after a single attempt, and otherwise
// wraps it with the number of attempts made. The agent's name is left to
// the caller, which names the agent in its own errors.
func attemptsError(req *llm.Request, attempts int, err error) error {
	if attempts == 1 {
		return err
	}
	return fmt.Errorf("gave up after %s: %w", plural(attempts, "attempt"), err)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
