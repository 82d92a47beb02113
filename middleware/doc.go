// Package middleware holds the cross-cutting behaviour of every model call as
// decorators around an llm.Client: response caching, cost metering, retries
// with backoff, a circuit breaker and per-call timeouts. Each decorator is an
// llm.Middleware and knows nothing about the provider it wraps.
//
// The decorators are composed once, at start-up, in this order (outermost
// first):
//
//	client := llm.Chain(provider,
//		middleware.Cache(middleware.CacheConfig{Provider: name, DefaultModel: model, Store: store}),
//		middleware.Limit(middleware.LimitConfig{DefaultProvider: name}),
//		middleware.Retry(middleware.RetryConfig{}),
//		middleware.Breaker(middleware.BreakerConfig{}),
//		middleware.Timeout(30*time.Second),
//		middleware.Meter(prices),
//	)
//
// The order matters:
//
//   - Cache is outermost so that a hit short-circuits everything else: it
//     costs nothing, is never retried, is answered even while the circuit is
//     open and is not subject to a timeout. Only the final, successful reply
//     of a miss reaches it and is stored.
//   - Limit sits inside Cache, so that hits take no slot, and
//     outside Retry, so that a call keeps its slot between attempts (the
//     provider never sees more than the limit) and a call refused as busy
//     is not retried.
//   - Retry sits outside Breaker so that every attempt is seen, and counted,
//     by the breaker, and so that once the circuit opens the next attempt
//     fails at once with ErrCircuitOpen, which is not retryable: Retry stops
//     instead of hammering a provider that is down.
//   - Breaker sits outside Timeout so that a call that timed out counts as a
//     provider failure, while a caller's own cancellation, visible on the
//     breaker's context, does not.
//   - Timeout sits next to the provider, so that its deadline bounds each
//     attempt separately rather than the whole sequence of retries, and so
//     that a timed-out attempt becomes a retryable *llm.Error that Retry
//     and Breaker understand.
//   - Meter is innermost, so that it sees every request sent to the
//     provider, each attempt of a retried call with what it was sent and
//     what it cost (a failed one too), and tells them to the caller's
//     observers (llm.WithAttemptObserver) and the process's metrics. Cache
//     hits never reach it; Cache reports them at zero cost itself.
//
// None of the decorators keeps global state. Clocks, sleepers and loggers are
// injected through their configuration; zero values select real time and a
// logger that discards everything. Logs name the agent, provider, model,
// attempt, delay and error of a call, never its prompt.
package middleware

import (
	"errors"
	"log/slog"

	"github.com/madspark/madspark/llm"
)

// logger returns l, or a logger that discards everything when l is nil.
func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// callAttrs are the log attributes of a call: its agent, and the provider
// named by err and the model when they are known.
func callAttrs(req *llm.Request, err error) []any {
	attrs := []any{"agent", req.Agent}
	if p := providerOf(err); p != "" {
		attrs = append(attrs, "provider", p)
	}
	if req.Model != "" {
		attrs = append(attrs, "model", req.Model)
	}
	return attrs
}

// providerOf returns the provider named by the *llm.Error in err's chain, or
// "".
func providerOf(err error) string {
	var e *llm.Error
	if errors.As(err, &e) {
		return e.Provider
	}
	return ""
}
