package middleware

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/madspark/madspark/llm"
)

// ErrBusy is wrapped by the error of a call that Limit refused because its
// provider had as many calls in flight as allowed and as many waiting as
// its queue holds. The error is an *llm.Error with Status 429 and a
// RetryAfter hint.
var ErrBusy = errors.New("provider concurrency limit reached")

// LimitConfig configures Limit.
type LimitConfig struct {
	// DefaultProvider names the provider of requests that name none.
	DefaultProvider string
	// Limit returns how many calls may be in flight at once to provider;
	// nil or a result below 1 means 4.
	Limit func(provider string) int
	// Queue is how many calls to a provider may wait for a slot before a
	// call made with RefuseWhenBusy is refused with ErrBusy; 0 means four
	// times the provider's limit. Calls made without RefuseWhenBusy always
	// wait, until their context is done.
	Queue int
}

// DefaultLimit is the calls in flight per provider when LimitConfig.Limit
// does not say.
const DefaultLimit = 4

type refuseKey struct{}

// RefuseWhenBusy returns a context whose calls through Limit do not wait
// in a full queue: they fail at once with ErrBusy. Interactive callers,
// such as HTTP handlers that answer 429, use it; runs in the background
// wait for their turn.
func RefuseWhenBusy(ctx context.Context) context.Context {
	return context.WithValue(ctx, refuseKey{}, true)
}

// Limit returns a Middleware that bounds the calls in flight to each
// provider: one limit per provider, whichever path the call comes from, in
// one process. A call beyond it waits for a slot until its context is
// done; a call made with RefuseWhenBusy
// fails with ErrBusy instead when Queue calls are waiting already.
//
// Limit belongs outside Retry, so that a call keeps its slot between
// attempts (the provider sees at most the limit at once) and a refused
// call is not retried; and inside Cache, so that cache hits take no slot.
func Limit(cfg LimitConfig) llm.Middleware { return NewLimiter(cfg).Middleware() }

// Limiter is Limit's state, for a caller that also admits requests before
// they make their calls (Admit). It is safe for concurrent use.
type Limiter struct {
	cfg       LimitConfig
	mu        sync.Mutex
	providers map[string]*slots
}

// NewLimiter returns a Limiter of cfg.
func NewLimiter(cfg LimitConfig) *Limiter {
	return &Limiter{cfg: cfg, providers: map[string]*slots{}}
}

// Middleware returns the Middleware that bounds the calls in flight, as
// Limit does. Every Client it wraps shares the Limiter's limits.
func (l *Limiter) Middleware() llm.Middleware {
	return func(next llm.Client) llm.Client {
		return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			name := req.Provider
			if name == "" {
				name = l.cfg.DefaultProvider
			}
			if t, ok := ctx.Value(admitKey{}).(*ticket); ok {
				t.use()
			}
			s := l.slotsOf(name)
			refuse, _ := ctx.Value(refuseKey{}).(bool)
			release, err := s.acquire(ctx, refuse)
			if err != nil {
				if errors.Is(err, ErrBusy) {
					return nil, s.busy(name)
				}
				return nil, err
			}
			start := time.Now()
			defer func() { release(time.Since(start)) }()
			return next.Generate(ctx, req)
		})
	}
}

type admitKey struct{}

// ticket is an admitted request that has made no call yet: it holds a
// place in its provider's queue until its first call takes one of its own.
type ticket struct {
	s    *slots
	once sync.Once
}

func (t *ticket) use() {
	t.once.Do(func() {
		t.s.mu.Lock()
		t.s.pending--
		t.s.mu.Unlock()
	})
}

// Admit decides whether a request may start making calls to the default
// provider, before it makes any: an interactive request (ctx marked with
// RefuseWhenBusy) is refused with ErrBusy (an *llm.Error with Status 429
// and a RetryAfter hint) when the provider has as many calls in flight and
// waiting as its limit and queue allow, counting the requests admitted
// that have not made their first call yet. An admitted request's calls
// wait for their turn rather than being refused, so that it is not stopped
// half-way: the returned context says so, and the returned function, to
// be called when the request ends, gives back its place if it made no
// call. A request whose ctx is not marked is always admitted.
func (l *Limiter) Admit(ctx context.Context) (context.Context, func(), error) {
	if refuse, _ := ctx.Value(refuseKey{}).(bool); !refuse {
		return ctx, func() {}, nil
	}
	name := l.cfg.DefaultProvider
	s := l.slotsOf(name)
	s.mu.Lock()
	if len(s.sem)+s.waiting+s.pending >= s.limit+s.queue {
		s.mu.Unlock()
		return nil, nil, s.busy(name)
	}
	s.pending++
	s.mu.Unlock()
	t := &ticket{s: s}
	ctx = context.WithValue(context.WithValue(ctx, refuseKey{}, false), admitKey{}, t)
	return ctx, t.use, nil
}

func (l *Limiter) slotsOf(name string) *slots {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.providers[name]
	if s == nil {
		n := 0
		if l.cfg.Limit != nil {
			n = l.cfg.Limit(name)
		}
		if n < 1 {
			n = DefaultLimit
		}
		q := l.cfg.Queue
		if q <= 0 {
			q = 4 * n
		}
		s = &slots{limit: n, queue: q, sem: make(chan struct{}, n)}
		l.providers[name] = s
	}
	return s
}

// slots is one provider's semaphore, with the count of calls waiting and
// a moving average of how long a call holds its slot.
type slots struct {
	limit, queue int
	sem          chan struct{}

	mu      sync.Mutex
	waiting int
	// pending are the requests Admit let in that have made no call yet.
	pending int
	avg     time.Duration
}

// busy is the error of a call or request refused for provider name.
func (s *slots) busy(name string) error {
	return &llm.Error{Provider: name, Status: 429, Retryable: true, RetryAfter: s.retryAfter(), Err: ErrBusy,
		Message: fmt.Sprintf("%d calls in flight and %d waiting, the most allowed; try again shortly", s.limit, s.queue)}
}

func (s *slots) acquire(ctx context.Context, refuse bool) (func(time.Duration), error) {
	release := func(d time.Duration) {
		<-s.sem
		s.mu.Lock()
		if s.avg == 0 {
			s.avg = d
		} else {
			s.avg = (s.avg*7 + d) / 8
		}
		s.mu.Unlock()
	}
	select {
	case s.sem <- struct{}{}:
		return release, nil
	default:
	}
	s.mu.Lock()
	if refuse && s.waiting >= s.queue {
		s.mu.Unlock()
		return nil, ErrBusy
	}
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	select {
	case s.sem <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// retryAfter estimates when a slot will be free for a refused call: the
// time the waiting calls take to go through, at least a second.
func (s *slots) retryAfter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.avg * time.Duration(s.waiting/s.limit+1)
	return max(time.Second, d.Round(time.Second))
}
