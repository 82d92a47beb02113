package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Error is a failed call to a provider. Providers translate their SDK's errors
// into *Error so that decorators can decide on retries without knowing the SDK.
//
// Message must never contain credentials.
type Error struct {
	// Provider is the provider's name, such as "openai".
	Provider string
	// Status is the HTTP status code, or 0 when the call failed before a
	// response (connection refused, broken stream, ...).
	Status int
	// Message is a one-line description from the provider.
	Message string
	// Retryable reports whether the same request may succeed if sent again:
	// true for 429, 5xx, timeouts and broken connections or streams.
	Retryable bool
	// RetryAfter is the delay the provider asked for (Retry-After), or 0.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
	// Invalid reports that the provider answered but with no usable
	// reply (empty, refused): ErrorType calls it "invalid_reply".
	Invalid bool
	// Usage is what the failed request cost when the provider counted
	// tokens for it (a reply that came back unusable); zero otherwise.
	Usage Usage
	// Param names the request's field the provider cannot take, such as
	// "tools" for a provider that cannot send tools: the request, not the
	// provider, is at fault, and sending it again cannot help.
	Param string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	prefix := ""
	if e.Provider != "" {
		prefix = e.Provider + ": "
	}
	if e.Status != 0 {
		return fmt.Sprintf("%sHTTP %d: %s", prefix, e.Status, msg)
	}
	return prefix + msg
}

func (e *Error) Unwrap() error { return e.Err }

// RetryableStatus reports whether an HTTP status code is worth retrying:
// 408, 409 (lock timeout), 429 and any 5xx.
func RetryableStatus(status int) bool {
	return status == 408 || status == 409 || status == 429 || status >= 500
}

// IsRetryable reports whether err is a transient failure: an *Error marked
// Retryable, a network timeout, a broken connection or stream, or a per-call
// deadline. A cancelled context is never retryable.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// RetryAfterOf returns the delay a provider asked for in err, or 0.
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
