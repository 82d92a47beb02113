package middleware

import (
	"context"
	"time"
)

// retryObserverKey is the context key of a RetryObserver.
type retryObserverKey struct{}

// RetryObserver is told of each retry Retry makes for a call: the attempt
// that failed (from 1), the delay before the next one, and the error.
type RetryObserver func(attempt int, delay time.Duration, err error)

// WithRetryObserver returns a context under which Retry tells f of every
// retry of a call made with it. f is called from the calling goroutine.
func WithRetryObserver(ctx context.Context, f RetryObserver) context.Context {
	return context.WithValue(ctx, retryObserverKey{}, f)
}

// observeRetry tells the context's RetryObserver, if any, of a retry.
func observeRetry(ctx context.Context, attempt int, delay time.Duration, err error) {
	if f, ok := ctx.Value(retryObserverKey{}).(RetryObserver); ok {
		f(attempt, delay, err)
	}
}
