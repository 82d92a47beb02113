package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/madspark/madspark/llm"
)

// ErrCircuitOpen is wrapped by the error a Breaker returns while its circuit
// is open and calls are not sent to the provider. It is not retryable.
var ErrCircuitOpen = errors.New("circuit breaker open")

// BreakerConfig configures Breaker. The zero value is ready to use.
type BreakerConfig struct {
	// Threshold is the number of consecutive failures that opens the
	// circuit. Zero means 5.
	Threshold int
	// Cooldown is how long the circuit stays open before a trial call is
	// let through. Zero means 60s.
	Cooldown time.Duration
	// Now returns the current time. Nil means time.Now; tests inject a
	// fake clock.
	Now func() time.Time
	// Logger receives a message whenever the circuit changes state. Nil
	// discards.
	Logger *slog.Logger
	// Watch, when not nil, is told where the circuit stands whenever that
	// changes, for those who show it (the API's provider status).
	Watch *BreakerWatch
}

// The states of a circuit, as BreakerStatus names them.
const (
	CircuitClosed   = "closed"
	CircuitOpen     = "open"
	CircuitHalfOpen = "half_open"
)

// BreakerStatus is where a Breaker's circuit stands.
type BreakerStatus struct {
	// State is CircuitClosed (calls go through), CircuitOpen (calls fail
	// at once until RetryAt) or CircuitHalfOpen (the next call is a trial
	// that decides).
	State string
	// Failures counts the consecutive failures that counted.
	Failures int
	// RetryAt is when an open circuit lets a trial call through; zero
	// when closed.
	RetryAt time.Time
	// LastError is the failure that last counted, in one line; empty when
	// closed.
	LastError string
}

// BreakerWatch holds the status of the circuit of a Breaker configured
// with it (BreakerConfig.Watch). The zero value is ready to use and safe
// for concurrent use; it reports a closed circuit until told otherwise.
type BreakerWatch struct {
	mu  sync.Mutex
	st  BreakerStatus
	now func() time.Time
}

// Status returns where the circuit stands: an open circuit whose cooldown
// has passed is half-open, its next call a trial.
func (w *BreakerWatch) Status() BreakerStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.st
	if st.State == "" {
		st.State = CircuitClosed
	}
	if st.State == CircuitOpen && w.now != nil && !w.now().Before(st.RetryAt) {
		st.State = CircuitHalfOpen
	}
	return st
}

func (w *BreakerWatch) set(st BreakerStatus, now func() time.Time) {
	w.mu.Lock()
	w.st, w.now = st, now
	w.mu.Unlock()
}

// Breaker returns a Middleware that stops calling a provider that keeps
// failing. Each Client it wraps gets its own circuit, which is safe for
// concurrent use.
//
// The circuit starts closed: calls go through. After Threshold consecutive
// failures it opens: calls fail at once, without reaching the wrapped Client,
// with an error that wraps ErrCircuitOpen and says when the next call will be
// let through. Once Cooldown has passed the circuit is half-open: one trial
// call goes through while concurrent calls still fail at once. If the trial
// succeeds the circuit closes; if it fails the circuit opens for another
// Cooldown.
//
// Only failures that suggest the provider is unhealthy count: errors for
// which llm.IsRetryable reports true (429, 5xx, timeouts, broken connections
// and streams). An error the provider answered with deliberately, such as 400
// or 401, shows that it is up and resets the count like a success. A call
// whose context (the caller's) is done neither counts nor resets.
//
// The error of a call refused while the circuit is open is an *llm.Error,
// not retryable, whose RetryAfter is the time left until the trial call.
func Breaker(cfg BreakerConfig) llm.Middleware {
	return func(next llm.Client) llm.Client {
		return NewBreaker(cfg).Wrap(next)
	}
}

// CircuitBreaker is one circuit, which the clients it wraps share; Check
// tells a caller, before it starts anything, whether the circuit would
// refuse a call now.
type CircuitBreaker struct {
	b *breaker
}

// NewBreaker returns one circuit, configured as Breaker's.
func NewBreaker(cfg BreakerConfig) *CircuitBreaker {
	if cfg.Threshold <= 0 {
		cfg.Threshold = 5
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = logger(cfg.Logger)
	return &CircuitBreaker{b: &breaker{cfg: cfg}}
}

// Middleware returns the Middleware that puts the circuit in front of a
// client.
func (cb *CircuitBreaker) Middleware() llm.Middleware { return cb.Wrap }

// Wrap puts the circuit in front of next.
func (cb *CircuitBreaker) Wrap(next llm.Client) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return cb.b.generate(ctx, next, req)
	})
}

// Check returns the error a call would fail with now because the circuit
// is open (wrapping ErrCircuitOpen, with the time left until the trial
// call as its RetryAfter), or nil. It changes nothing.
func (cb *CircuitBreaker) Check() error {
	b := cb.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != stateOpen {
		return nil
	}
	now := b.cfg.Now()
	if until := b.openedAt.Add(b.cfg.Cooldown); now.Before(until) {
		return b.openError(now, until)
	}
	return nil
}

type circuitState int

const (
	stateClosed circuitState = iota
	stateOpen
	stateHalfOpen
)

type breaker struct {
	cfg BreakerConfig

	mu       sync.Mutex
	state    circuitState
	failures int       // consecutive failures while closed
	openedAt time.Time // when the circuit last opened
	trial    bool      // a half-open trial call is in flight
	lastErr  error     // the failure that last counted
}

func (b *breaker) generate(ctx context.Context, next llm.Client, req *llm.Request) (*llm.Response, error) {
	trial, err := b.admit(req)
	if err != nil {
		return nil, err
	}
	resp, err := next.Generate(ctx, req)
	b.record(ctx, req, trial, err)
	return resp, err
}

// admit decides whether a call may go through, and whether it is the
// half-open trial.
func (b *breaker) admit(req *llm.Request) (trial bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case stateClosed:
		return false, nil
	case stateOpen:
		now := b.cfg.Now()
		until := b.openedAt.Add(b.cfg.Cooldown)
		if now.Before(until) {
			return false, b.openError(now, until)
		}
		b.state = stateHalfOpen
		b.report()
		b.cfg.Logger.Info("circuit half-open, sending trial call", callAttrs(req, b.lastErr)...)
	}
	// Half-open.
	if b.trial {
		return false, &llm.Error{Message: fmt.Sprintf("%v (last: %v); a trial call is in progress", ErrCircuitOpen, b.lastErr),
			RetryAfter: time.Second, Err: ErrCircuitOpen}
	}
	b.trial = true
	return true, nil
}

// record updates the circuit with the outcome of a call admitted by admit.
func (b *breaker) record(ctx context.Context, req *llm.Request, trial bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if trial {
		b.trial = false
	}
	if ctx.Err() != nil {
		// The caller gave up; that says nothing about the provider.
		return
	}
	failed := err != nil && llm.IsRetryable(err)
	switch {
	case trial && failed:
		b.failures++
		b.lastErr = err
		b.open(req, err)
	case trial:
		b.close(req)
	case b.state != stateClosed:
		// A call admitted before the circuit opened; the trial decides.
	case failed:
		b.failures++
		b.lastErr = err
		if b.failures >= b.cfg.Threshold {
			b.open(req, err)
		}
	default:
		b.failures = 0
	}
	b.report()
}

// report tells the watch, if any, where the circuit stands; b.mu is held.
func (b *breaker) report() {
	if b.cfg.Watch == nil {
		return
	}
	st := BreakerStatus{State: CircuitClosed, Failures: b.failures}
	switch b.state {
	case stateOpen:
		st.State, st.RetryAt = CircuitOpen, b.openedAt.Add(b.cfg.Cooldown)
	case stateHalfOpen:
		st.State = CircuitHalfOpen
	}
	if b.state != stateClosed && b.lastErr != nil {
		st.LastError = strings.Join(strings.Fields(b.lastErr.Error()), " ")
	}
	b.cfg.Watch.set(st, b.cfg.Now)
}

// openError is the error of a call refused at now while the circuit is
// open until until. b.mu is held.
func (b *breaker) openError(now, until time.Time) error {
	left := until.Sub(now)
	return &llm.Error{
		Message: fmt.Sprintf("%v after %s (last: %v); next trial call at %s (in %s)",
			ErrCircuitOpen, plural(b.failures, "consecutive failure"), b.lastErr, until.Format(time.RFC3339), left.Round(time.Second)),
		RetryAfter: left,
		Err:        ErrCircuitOpen,
	}
}

func (b *breaker) open(req *llm.Request, err error) {
	b.state = stateOpen
	b.openedAt = b.cfg.Now()
	b.cfg.Logger.Warn("circuit opened",
		append(callAttrs(req, err), "failures", b.failures, "cooldown", b.cfg.Cooldown, "error", err)...)
}

func (b *breaker) close(req *llm.Request) {
	b.state = stateClosed
	b.failures = 0
	b.lastErr = nil
	b.cfg.Logger.Info("circuit closed", callAttrs(req, nil)...)
}
