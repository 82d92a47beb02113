package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"
)

// RoleSystem is the role of the system prompt in Wire.Messages. Requests
// carry the system prompt in Request.System, never as a Message.
const RoleSystem Role = "system"

// Wire is a request as a provider put it on the wire: the messages it sent,
// the system prompt first with role "system" (after the provider added what
// it adds, such as a schema's description), and the structured-output
// settings it sent, if any, as JSON (OpenAI's response_format, Gemini's
// response schema settings, Anthropic's forced tool).
type Wire struct {
	Messages       []Message       `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
}

// WireOf is the Wire of a provider that sends req's system prompt and
// messages as they are, with no structured-output settings.
func WireOf(req *Request) Wire {
	msgs := make([]Message, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: req.System})
	}
	return Wire{Messages: append(msgs, req.Messages...)}
}

// wireSlot receives the Wire a provider reports for one request.
type wireSlot struct {
	mu   sync.Mutex
	wire *Wire
}

type wireKey struct{}

// WithWireSlot returns a context under which the provider's SendingWire is
// kept; Sent reads it back. middleware.Meter installs one around each
// request it passes to the provider.
func WithWireSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, wireKey{}, &wireSlot{})
}

// SendingWire tells the caller, through ctx, what a provider is about to
// send. A provider calls it right before each request goes out, so that
// what is recorded is what the server receives, byte for byte in each
// message's content.
func SendingWire(ctx context.Context, w Wire) {
	if s, ok := ctx.Value(wireKey{}).(*wireSlot); ok {
		s.mu.Lock()
		s.wire = &w
		s.mu.Unlock()
	}
}

// Sent returns the Wire reported with SendingWire under ctx (made by
// WithWireSlot), and whether the provider reported one.
func Sent(ctx context.Context) (Wire, bool) {
	s, ok := ctx.Value(wireKey{}).(*wireSlot)
	if !ok {
		return Wire{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wire == nil {
		return Wire{}, false
	}
	return *s.wire, true
}

// Attempt is one request sent to a provider, and its outcome: a call that
// was retried is several attempts, a call the response cache answered is
// none.
type Attempt struct {
	// Agent is the request's agent.
	Agent string
	// Provider and Model name what answered, or what was asked when the
	// attempt failed.
	Provider, Model string
	// RequestModel is the model the request named; empty for the
	// provider's default.
	RequestModel string
	// Wire is what was sent.
	Wire Wire
	// Response is the reply, nil when Err is set.
	Response *Response
	Err      error
	// Usage is what the attempt cost: one LLM call, the tokens the
	// provider counted (a failed attempt may have some) and their price.
	Usage Usage
	// Start is when the request went out; Duration how long it took.
	Start    time.Time
	Duration time.Duration
}

// AttemptObserver is told of the requests sent for calls made under a
// context (see WithAttemptObserver).
type AttemptObserver interface {
	// Sending is called before each request is sent.
	Sending(ctx context.Context)
	// Attempted is called with the outcome of each request sent.
	Attempted(ctx context.Context, a *Attempt)
}

type observerKey struct{}

// WithAttemptObserver returns a context under which o is told of every
// request that a call made with it sends to a provider, after the
// observers already in ctx are: observers nest, and each is told.
func WithAttemptObserver(ctx context.Context, o AttemptObserver) context.Context {
	parent, _ := ctx.Value(observerKey{}).([]AttemptObserver)
	list := make([]AttemptObserver, 0, len(parent)+1)
	return context.WithValue(ctx, observerKey{}, append(append(list, parent...), o))
}

// ObserveSending tells the observers of ctx that a request is about to be
// sent.
func ObserveSending(ctx context.Context) {
	list, _ := ctx.Value(observerKey{}).([]AttemptObserver)
	for _, o := range list {
		o.Sending(ctx)
	}
}

// ObserveAttempt tells the observers of ctx of a's outcome, the innermost
// (the most recently added) first.
func ObserveAttempt(ctx context.Context, a *Attempt) {
	list, _ := ctx.Value(observerKey{}).([]AttemptObserver)
	for i := len(list) - 1; i >= 0; i-- {
		list[i].Attempted(ctx, a)
	}
}

// Error types (ErrorType) that are not an HTTP status code.
const (
	ErrorTimeout      = "timeout"
	ErrorRateLimited  = "rate_limited"
	ErrorInvalidReply = "invalid_reply"
	ErrorOther        = "_OTHER"
)

// ErrorType classifies err in a few low-cardinality words, for the
// error.type attribute of traces and metrics: "" for nil; "timeout" for a
// deadline or a network timeout; "rate_limited" for HTTP 429; the HTTP
// status code ("500") for any other status a provider answered; what the
// error's own ErrorType method says, if it has one (such as
// "invalid_reply" for a reply that could not be used); "_OTHER" for the
// rest.
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	var typed interface{ ErrorType() string }
	if errors.As(err, &typed) {
		if t := typed.ErrorType(); t != "" {
			return t
		}
	}
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Status == 429:
			return ErrorRateLimited
		case e.Status != 0:
			return strconv.Itoa(e.Status)
		case e.Invalid:
			return ErrorInvalidReply
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrorTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrorTimeout
	}
	return ErrorOther
}
