package llm

import (
	"context"
	"time"
)

// Retry is a retry of a call: an attempt failed with an error that may
// pass, and the call is sent again after a pause.
type Retry struct {
	// Attempt is the attempt that failed, from 1.
	Attempt int
	// MaxAttempts is the most attempts the call makes.
	MaxAttempts int
	// Delay is the pause before the next attempt.
	Delay time.Duration
	// Err is the failed attempt's error.
	Err error
}

// RetryObserver is told of each retry of a call made under a context (see
// WithRetryObserver). It is called from the calling goroutine, before the
// pause.
type RetryObserver func(r Retry)

type retryObserverKey struct{}

// WithRetryObserver returns a context under which f is told of every retry
// of a call made with it (by middleware.Retry), after the observers
// already in ctx are: observers nest, and each is told.
func WithRetryObserver(ctx context.Context, f RetryObserver) context.Context {
	parent, _ := ctx.Value(retryObserverKey{}).([]RetryObserver)
	list := make([]RetryObserver, 0, len(parent)+1)
	return context.WithValue(ctx, retryObserverKey{}, append(append(list, parent...), f))
}

// ObserveRetry tells the retry observers of ctx of r.
func ObserveRetry(ctx context.Context, r Retry) {
	list, _ := ctx.Value(retryObserverKey{}).([]RetryObserver)
	for _, f := range list {
		f(r)
	}
}
