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
func Limit(cfg LimitConfig) llm.Middleware {
	l := &limits{cfg: cfg, providers: map[string]*slots{}}
	return func(next llm.Client) llm.Client {
		return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			name := req.Provider
			if name == "" {
				name = cfg.DefaultProvider
			}
			s := l.slotsOf(name)
			release, err := s.acquire(ctx, ctx.Value(refuseKey{}) != nil)
			if err != nil {
				if errors.Is(err, ErrBusy) {
					return nil, &llm.Error{Provider: name, Status: 429, Retryable: true, RetryAfter: s.retryAfter(), Err: err,
						Message: fmt.Sprintf("%d calls in flight and %d waiting, the most allowed; try again shortly", s.limit, s.queue)}
				}
				return nil, err
			}
			start := time.Now()
			defer func() { release(time.Since(start)) }()
			return next.Generate(ctx, req)
		})
	}
}

type limits struct {
	cfg       LimitConfig
	mu        sync.Mutex
	providers map[string]*slots
}

func (l *limits) slotsOf(name string) *slots {
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
	avg     time.Duration
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
