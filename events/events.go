// Package events delivers the progress events of runs. A Hub stores each
// event it is given (madspark.EventStore assigns its sequence number), hands
// it at once to the subscribers of its run in this process, and notices the
// events that other processes store: through the store's notifications when
// it has them (PostgreSQL's LISTEN/NOTIFY, see Listener), else by polling.
//
// A subscription first replays the events stored after a given sequence
// number, then delivers new ones as they come, then ends after the run's
// final (result or error) event. A client that reconnects passes the last
// sequence number it saw and misses nothing.
//
// The engine publishes through a Hub (engine.Engine.Events), so the runs of
// commands, of the job queue's workers and of the server all have their
// events stored, wherever they run.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/madspark/madspark"
)

// Store is what a Hub needs: the events, and the runs (to tell a missing run
// and to end a subscription to a finished run).
type Store interface {
	madspark.EventStore
	Run(ctx context.Context, id string) (*madspark.Run, error)
}

// Listener is implemented by stores that tell every process, promptly, that
// a run has new events (store/postgres). ListenEvents calls ready once it
// listens, then notify with a run ID for each event stored, until ctx is
// done or the connection breaks.
type Listener interface {
	ListenEvents(ctx context.Context, ready func(), notify func(runID string)) error
}

// Defaults of Options.
const (
	// DefaultPollInterval is how often a subscriber looks for events that
	// other processes stored, when the store cannot notify: a SQLite file
	// is only shared by the processes of one machine, and a read of it
	// costs tens of microseconds.
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultFallbackPoll is how often a subscriber polls when the store
	// notifies: only to catch notifications lost while the listening
	// connection was re-established.
	DefaultFallbackPoll = 5 * time.Second
)

// Options configure a Hub.
type Options struct {
	// PollInterval is how often subscribers poll a store that is not a
	// Listener; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// FallbackPoll is how often subscribers poll a store that is a
	// Listener; 0 means DefaultFallbackPoll.
	FallbackPoll time.Duration
	// Logger receives problems with the listening connection; nil
	// discards.
	Logger *slog.Logger
}

// pageSize is how many events a subscriber reads from the store at once.
const pageSize = 500

// maxPending bounds the events held for a subscriber that reads slowly;
// beyond it, they are read again from the store.
const maxPending = 1024

// Hub stores events and delivers them to subscribers. It is safe for
// concurrent use. Create one with New and release it with Close.
type Hub struct {
	store    Store
	listener Listener
	poll     time.Duration
	logger   *slog.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	// locks serialise, per run, storing an event and handing it to local
	// subscribers, so that they see the events of a run in sequence.
	seed  maphash.Seed
	locks [64]sync.Mutex

	mu     sync.Mutex
	subs   map[string]map[*subscription]struct{}
	listen sync.Once
	wg     sync.WaitGroup
}

// New returns a Hub over store. If store is a Listener, subscribers are
// woken by its notifications; otherwise they poll.
func New(store Store, opts Options) *Hub {
	h := &Hub{store: store, logger: opts.Logger, seed: maphash.MakeSeed(), subs: map[string]map[*subscription]struct{}{}}
	if h.logger == nil {
		h.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if l, ok := store.(Listener); ok {
		h.listener = l
		h.poll = opts.FallbackPoll
		if h.poll <= 0 {
			h.poll = DefaultFallbackPoll
		}
	} else {
		h.poll = opts.PollInterval
		if h.poll <= 0 {
			h.poll = DefaultPollInterval
		}
	}
	return h
}

// Close ends every subscription and stops listening. Publish still works.
func (h *Hub) Close() error {
	h.cancel()
	h.wg.Wait()
	return nil
}

// Publish stores e as the next event of run e.RunID (setting e.Seq, and
// e.Time when zero) and hands it to the run's subscribers in this process.
// Subscribers in other processes get it from the store.
func (h *Hub) Publish(ctx context.Context, e *madspark.Event) error {
	if e == nil || e.RunID == "" {
		return errors.New("events: publish: no run ID")
	}
	err := h.Relay(ctx, []*madspark.Event{e}, func() error { return h.store.AppendEvent(ctx, e) })
	if err != nil {
		return fmt.Errorf("events: publish: %w", err)
	}
	return nil
}

// Relay is Publish of evs, events of one run in order, with the storing
// done by store, which writes them to the Hub's store (setting their Seq)
// together with other writes of its own, in one transaction: the engine
// records a run's outcome, its final event and the events it held so
// (madspark.RunRecorder's EndRun). store's error is returned as it is.
func (h *Hub) Relay(ctx context.Context, evs []*madspark.Event, store func() error) error {
	if len(evs) == 0 {
		return store()
	}
	run := evs[0].RunID
	for _, e := range evs {
		if e == nil || e.RunID == "" || e.RunID != run {
			return errors.New("events: relay: no run ID, or events of more than one run")
		}
	}
	lock := &h.locks[maphash.String(h.seed, run)%uint64(len(h.locks))]
	lock.Lock()
	defer lock.Unlock()
	if err := store(); err != nil {
		return err
	}
	h.mu.Lock()
	for s := range h.subs[run] {
		for _, e := range evs {
			s.push(*e)
		}
	}
	h.mu.Unlock()
	return nil
}

// Subscribe returns the events of run runID with a sequence number above
// afterSeq: first those already stored, then new ones as they are stored,
// by this process or any other that shares the store. The channel is closed
// after the run's final event, or when ctx is done or the Hub is closed.
//
// A run that is already finished but has no final event stored (it finished
// before its events were kept) gets one made up from its record, with Seq 0,
// so that every subscription to a finished run ends. Subscribe returns an
// error wrapping madspark.ErrNotFound if the run does not exist.
func (h *Hub) Subscribe(ctx context.Context, runID string, afterSeq int64) (<-chan madspark.Event, error) {
	if _, err := h.store.Run(ctx, runID); err != nil {
		return nil, fmt.Errorf("events: subscribe: %w", err)
	}
	h.listen.Do(h.startListener)
	s := &subscription{runID: runID, last: afterSeq, wake: make(chan struct{}, 1), out: make(chan madspark.Event, 16)}
	h.mu.Lock()
	if h.subs[runID] == nil {
		h.subs[runID] = map[*subscription]struct{}{}
	}
	h.subs[runID][s] = struct{}{}
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer func() {
			h.mu.Lock()
			delete(h.subs[runID], s)
			if len(h.subs[runID]) == 0 {
				delete(h.subs, runID)
			}
			h.mu.Unlock()
			close(s.out)
		}()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(h.ctx, cancel)
		defer stop()
		h.serve(ctx, s)
	}()
	return s.out, nil
}

// startListener listens for other processes' events, when the store can
// tell them, re-listening with a backoff when the connection breaks.
func (h *Hub) startListener() {
	if h.listener == nil {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		delay := 100 * time.Millisecond
		for h.ctx.Err() == nil {
			err := h.listener.ListenEvents(h.ctx, func() { delay = 100 * time.Millisecond; h.wakeAll() }, h.notify)
			if h.ctx.Err() != nil {
				return
			}
			h.logger.Warn("event notifications interrupted; subscribers poll until they resume", "err", err, "retry_in", delay)
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, 5*time.Second)
		}
	}()
}

// notify wakes the subscribers of runID to read the store.
func (h *Hub) notify(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[runID] {
		s.poke()
	}
}

// wakeAll wakes every subscriber to read the store, as after a reconnection.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.subs {
		for s := range subs {
			s.poke()
		}
	}
}

// subscription is one subscriber's state. pending holds the events this
// process published for the run since the subscriber last looked; stale
// says the store may hold events that pending does not (another process
// stored them, or pending overflowed).
type subscription struct {
	runID string
	last  int64 // the sequence number of the last event sent; only serve touches it
	wake  chan struct{}
	out   chan madspark.Event

	mu      sync.Mutex
	pending []madspark.Event
	stale   bool
}

func (s *subscription) push(e madspark.Event) {
	s.mu.Lock()
	if len(s.pending) < maxPending {
		s.pending = append(s.pending, e)
	} else {
		s.stale = true
	}
	s.mu.Unlock()
	s.signal()
}

func (s *subscription) poke() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
	s.signal()
}

func (s *subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscription) take() ([]madspark.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, stale := s.pending, s.stale
	s.pending, s.stale = nil, false
	return p, stale
}

// errDone ends serve after the final event.
var errDone = errors.New("final event sent")

// serve replays, then delivers live events, until the final event or ctx.
func (h *Hub) serve(ctx context.Context, s *subscription) {
	send := func(e madspark.Event) error {
		select {
		case s.out <- e:
		case <-ctx.Done():
			return ctx.Err()
		}
		if e.Seq > 0 {
			s.last = e.Seq
		}
		if e.Final() {
			return errDone
		}
		return nil
	}
	// fromStore sends what the store holds after s.last.
	fromStore := func() error {
		for {
			evs, err := h.store.Events(ctx, s.runID, s.last, pageSize)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				h.logger.Warn("could not read run events; retrying", "run", s.runID, "err", err)
				return nil
			}
			for _, e := range evs {
				if err := send(e); err != nil {
					return err
				}
			}
			if len(evs) < pageSize {
				return nil
			}
		}
	}
	if fromStore() != nil {
		return
	}
	// A finished run without a stored final event: make one up.
	if rec, err := h.store.Run(ctx, s.runID); err == nil && rec.Status.Final() {
		// Events stored between the read above and this one come first.
		if fromStore() != nil {
			return
		}
		_ = send(finalFromRecord(rec))
		return
	}
	tick := time.NewTicker(h.poll)
	defer tick.Stop()
	for {
		stale := false
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
			stale = true
		}
		pending, notified := s.take()
		stale = stale || notified
		for _, e := range pending {
			if e.Seq <= s.last {
				continue
			}
			if e.Seq != s.last+1 {
				stale = true // a gap: the store has what is missing
				break
			}
			if err := send(e); err != nil {
				return
			}
		}
		if stale && fromStore() != nil {
			return
		}
	}
}

// finalFromRecord makes up the final event of a finished run from its
// record.
func finalFromRecord(r *madspark.Run) madspark.Event {
	e := madspark.Event{RunID: r.ID, Progress: 100, Time: r.FinishedAt}
	if r.Status == madspark.RunSucceeded {
		e.Type, e.Stage, e.Message, e.Data = madspark.EventResult, "done", "succeeded", r.Result
		return e
	}
	e.Type, e.Message = madspark.EventError, r.Error
	e.Data, _ = json.Marshal(map[string]madspark.RunStatus{"status": r.Status})
	return e
}
