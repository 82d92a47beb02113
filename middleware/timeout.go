package middleware

import (
	"context"
	"fmt"
	"time"

	"github.com/madspark/madspark/llm"
)

// Timeout returns a Middleware that bounds each call with a context deadline:
// req.Timeout when it is positive, otherwise def when def is positive. A call
// with neither is passed through unchanged.
//
// When that deadline expires before the wrapped Client returns, and the
// caller's own context is not done, the call fails with an *llm.Error that is
// Retryable, wraps context.DeadlineExceeded, carries the request's agent as
// its Provider (the provider behind the Client is not known here) and reads
// like "spark.evaluate: no reply within 30s". If the caller's context is done
// first, its error is returned as the wrapped Client reported it.
//
// The wrapped Client must honour its context; Timeout does not abandon a call
// that ignores it.
func Timeout(def time.Duration) llm.Middleware {
	return func(next llm.Client) llm.Client {
		return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			d := req.Timeout
			if d <= 0 {
				d = def
			}
			if d <= 0 {
				return next.Generate(ctx, req)
			}
			cctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			resp, err := next.Generate(cctx, req)
			if err != nil && cctx.Err() != nil && ctx.Err() == nil {
				return nil, &llm.Error{
					Message:   fmt.Sprintf("no reply within %s", d),
					Retryable: true,
					Err:       context.DeadlineExceeded,
				}
			}
			return resp, err
		})
	}
}
