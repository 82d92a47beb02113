package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/proc"
)

// DefaultLeaseTTL is how long a run's lease lasts when Engine.LeaseTTL is
// zero. The process working the run renews it every third of that, so a
// process that stops is noticed within this long (at once on its own
// machine, where its PID is seen to be gone).
const DefaultLeaseTTL = 30 * time.Second

// ErrLeaseLost is wrapped by the errors of a run whose lease another process
// took over (this one stalled for longer than the lease): the run stops at
// its next step and its outcome is not recorded here.
var ErrLeaseLost = madspark.ErrLeaseLost

func (e *Engine) leases() madspark.RunLeaseStore {
	if e.Leases != nil {
		return e.Leases
	}
	l, _ := e.Store.(madspark.RunLeaseStore)
	return l
}

func (e *Engine) clock() clockwork.Clock {
	if e.Clock != nil {
		return e.Clock
	}
	return clockwork.NewRealClock()
}

func (e *Engine) leaseTTL() time.Duration {
	if e.LeaseTTL > 0 {
		return e.LeaseTTL
	}
	return DefaultLeaseTTL
}

// holder describes this process in the leases it takes.
func (e *Engine) holder() string {
	name := e.Holder
	if name == "" {
		name = "madspark"
	}
	return fmt.Sprintf("%s (pid %d on host %s)", name, os.Getpid(), hostname())
}

// hostname is this machine's name, read once.
var hostname = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown"
	}
	return host
})

// lease holds a run's lease for the process while the run goes.
type lease struct {
	store madspark.RunLeaseStore
	l     madspark.RunLease
	ttl   time.Duration
	clock clockwork.Clock
	log   func(msg string, args ...any)

	mu   sync.Mutex
	lost bool
	// ctx is the run's, set by start; the renewals stop when it ends.
	ctx context.Context
	// timer fires the next renewal; nil before start.
	timer clockwork.Timer
	// halted: no renewal is to start any more; renewing: one is under
	// way, and done is broadcast when it ends.
	halted, renewing bool
	done             *sync.Cond
}

// takeLease takes the lease of run id for this process, or returns the
// *madspark.RunHeldError of the process that holds it. It returns nil, nil
// when the store keeps no leases.
func (e *Engine) takeLease(ctx context.Context, id string) (*lease, error) {
	s := e.leases()
	if s == nil {
		return nil, nil
	}
	ls, err := e.newLease(s, id)
	if err != nil {
		return nil, err
	}
	if err := s.TakeRunLease(ctx, &ls.l, ls.ttl); err != nil {
		var held *madspark.RunHeldError
		if errors.As(err, &held) {
			return nil, held
		}
		return nil, fmt.Errorf("engine: %w", err)
	}
	return ls, nil
}

// newLease returns a lease of run id for this process in s, not taken
// yet.
func (e *Engine) newLease(s madspark.RunLeaseStore, id string) (*lease, error) {
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("engine: lease token: %w", err)
	}
	ls := &lease{store: s, ttl: e.leaseTTL(), clock: e.clock(),
		l:   madspark.RunLease{RunID: id, Token: hex.EncodeToString(tok[:]), Holder: e.holder(), Host: proc.HostID(), PID: os.Getpid()},
		log: e.logger().Warn}
	ls.done = sync.NewCond(&ls.mu)
	return ls, nil
}

// start renews the lease every third of its life until halt or release,
// or until ctx is done (then the lease lapses unless released). Each
// renewal is a timer's (no goroutine waits between them).
func (ls *lease) start(ctx context.Context) {
	if ls == nil {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.halted {
		return
	}
	ls.ctx = ctx
	ls.timer = ls.clock.AfterFunc(ls.ttl/3, ls.renew)
}

// renew renews the lease once, and sets the timer for the next renewal
// unless the lease is lost or halted, or the run's context ended.
func (ls *lease) renew() {
	ls.mu.Lock()
	if ls.halted || ls.ctx.Err() != nil {
		ls.mu.Unlock()
		return
	}
	ls.renewing = true
	ls.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ls.ctx), ls.ttl/3)
	err := ls.store.KeepRunLease(rctx, &ls.l, ls.ttl)
	cancel()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.renewing = false
	ls.done.Broadcast()
	switch {
	case errors.Is(err, madspark.ErrLeaseLost):
		ls.lost = true
		ls.log("lost the lease of a run to another process; stopping it", "run", ls.l.RunID)
		return
	case err != nil:
		ls.log("could not renew a run's lease", "run", ls.l.RunID, "err", err)
	}
	if !ls.halted && ls.ctx.Err() == nil {
		ls.timer = ls.clock.AfterFunc(ls.ttl/3, ls.renew)
	}
}

// isLost reports whether another process took the run over.
func (ls *lease) isLost() bool {
	if ls == nil {
		return false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.lost
}

// halt stops renewing the lease, and waits for a renewal under way to
// end.
func (ls *lease) halt() {
	if ls == nil {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.halted = true
	if ls.timer != nil {
		ls.timer.Stop()
	}
	for ls.renewing {
		ls.done.Wait()
	}
}

// release stops renewing the lease and drops it.
func (ls *lease) release(ctx context.Context) {
	if ls == nil {
		return
	}
	ls.halt()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := ls.store.DropRunLease(ctx, &ls.l); err != nil {
		ls.log("could not drop a run's lease; it lapses by itself", "run", ls.l.RunID, "err", err)
	}
}

// Abandon stops working r without recording an outcome: its lease is
// dropped, so that another process may resume it at once. A worker that
// hands a run back to the queue abandons it.
func (r *Run) Abandon(ctx context.Context) {
	r.flushHeld(ctx)
	r.lease.release(ctx)
	endRun(r.span, &r.rec, nil)
}

// Interrupt records as interrupted every running run whose process is
// gone: its lease expired, or its holder ran on this machine and has
// exited. Each gets an error event with the status "interrupted" and a
// message saying how to resume it. It returns their IDs.
func (e *Engine) Interrupt(ctx context.Context) ([]string, error) {
	s := e.leases()
	if s == nil {
		return nil, nil
	}
	ls, err := s.RunLeases(ctx)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	var ids []string
	for i := range ls {
		l := &ls[i]
		if !l.Expired && !e.goneHere(*l) {
			continue
		}
		msg := fmt.Sprintf("interrupted: %s stopped without finishing it; resume with: madspark resume %s", l.Holder, l.RunID)
		ok, err := s.InterruptRun(ctx, l, msg)
		if err != nil {
			return ids, fmt.Errorf("engine: %w", err)
		}
		if !ok {
			continue
		}
		ids = append(ids, l.RunID)
		e.logger().Warn("run interrupted: the process working it is gone", "run", l.RunID, "holder", l.Holder)
		r := &Run{e: e, rec: madspark.Run{ID: l.RunID}}
		r.publish(ctx, &madspark.Event{RunID: l.RunID, Type: madspark.EventError, Stage: "interrupted", Progress: 100,
			Message: msg, Data: []byte(`{"status":"interrupted"}`)})
	}
	return ids, nil
}

// goneHere reports whether l's holder ran on this machine and has exited.
func (e *Engine) goneHere(l madspark.RunLease) bool {
	host := proc.HostID()
	return host != "" && l.Host == host && !proc.Alive(l.PID)
}

// WatchLeases calls Interrupt every interval until ctx is done, so that the
// runs of processes that died are shown interrupted, with their progress
// streams ended, soon after.
func (e *Engine) WatchLeases(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := e.Interrupt(ctx); err != nil && ctx.Err() == nil {
			e.logger().Warn("could not look for interrupted runs", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
