package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/riverqueue/river/rivertype"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/jobs"
)

// flaky is a store whose lease writes fail while down, as when a worker
// loses its database connection.
type flaky struct {
	madspark.Store
	down atomic.Bool
}

var errDown = errors.New("connection lost")

func (f *flaky) RenewLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.RenewLease(ctx, l, ttl)
}

func (f *flaky) ExtendLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.ExtendLease(ctx, l, ttl)
}

func leaseTTL(d time.Duration) func(*jobs.Config) {
	return func(c *jobs.Config) { c.LeaseTTL = d }
}

// testTTL is the lease of the workers on a fake clock: long enough that no
// lease expires in the database, by its real clock, while a test runs.
const testTTL = time.Minute

// onClock runs a worker's lease on fc with the lease testTTL: its lease is
// renewed, and lapses, only when the test moves fc on.
func onClock(fc *clockwork.FakeClock) func(*jobs.Config) {
	return func(c *jobs.Config) { c.Clock, c.LeaseTTL = fc, testTTL }
}

// advanceUntil moves fc on by a third of testTTL (one renewal) at a time
// until done reports true, waiting a little between moves for the worker
// to act on them; it fails after 10 s of real time.
func advanceUntil(t *testing.T, fc *clockwork.FakeClock, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after moving the clock on to %s", what, fc.Now().Format(time.TimeOnly))
		}
		fc.Advance(testTTL / 3)
	}
}

// movedOn reports whether w works under a lease other than old.
func movedOn(w *worker, old string) func() bool {
	return func() bool {
		id := w.q.WorkerID()
		return id != old && id != ""
	}
}

// hasEvent reports whether run id has an event whose message contains s.
func hasEvent(t *testing.T, d *db, id, s string) bool {
	t.Helper()
	evs, err := d.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(e.Message, s) {
			return true
		}
	}
	return false
}

// checkOneOutcome checks that run id succeeded and has one final event,
// its last.
func checkOneOutcome(t *testing.T, d *db, id string) {
	t.Helper()
	r := waitStatus(t, d, id, 20*time.Second, madspark.RunSucceeded, madspark.RunFailed, madspark.RunCancelled)
	if r.Status != madspark.RunSucceeded {
		t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
	}
	evs := waitFinalEvent(t, d, id)
	finals := 0
	for _, e := range evs {
		if e.Final() {
			finals++
		}
	}
	if finals != 1 {
		t.Fatalf("run %s has %d final events: %+v", id, finals, evs)
	}
}

// TestLeaseGoneStopsStaleWorker: a worker whose lease is gone when it
// renews it (another worker judged it lost) stops its runs without
// recording anything, goes on under a new lease, and the run ends once.
func TestLeaseGoneStopsStaleWorker(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			ctx := context.Background()
			slow := newMock(0)
			slow.after, slow.gate = 2, make(chan struct{})
			fc := clockwork.NewFakeClockAt(time.Now())
			a := open(t, d, 1, slow, onClock(fc))
			rec, err := a.q.Enqueue(ctx, sparkReq("stale worker"))
			if err != nil {
				t.Fatal(err)
			}
			a.start(t)
			waitSteps(t, d, rec.ID, 2)
			first := a.q.WorkerID()
			if err := d.DropLease(ctx, first); err != nil {
				t.Fatal(err)
			}
			// Its next renewal finds the lease gone.
			advanceUntil(t, fc, "a new lease after the first was dropped", movedOn(a, first))
			// The stale attempt is over: its in-flight calls were
			// cancelled and nothing was recorded for it.
			if r, _ := d.Run(ctx, rec.ID); r.Status.Final() {
				t.Fatalf("the stale worker recorded the run as %s: %s", r.Status, r.Error)
			}
			js := jobsOf(t, d, rec.ID)
			if len(js) != 2 || js[0].State != rivertype.JobStateDiscarded {
				t.Fatalf("jobs of the run: %d, first %s", len(js), js[0].State)
			}
			b2 := open(t, d.reopen(t), 1, newMock(0), leaseTTL(testTTL))
			b2.start(t)
			close(slow.gate)
			checkOneOutcome(t, d, rec.ID)
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := a.q.Stop(sctx); err != nil {
				t.Fatal(err)
			}
			checkOneOutcome(t, d, rec.ID)
			for _, l := range mustLeases(t, d) {
				if l.ID == first {
					t.Fatalf("the lost lease %s is back", first)
				}
			}
		})
	}
}

func mustLeases(t *testing.T, d *db) []madspark.WorkerLease {
	t.Helper()
	ls, err := d.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestLeaseLapseStopsRuns: a worker that cannot renew its lease (its
// database connection is lost) stops its runs once the lease may have
// expired, hands them back to the queue, takes no job without a lease, and
// works again under a new lease once it can take one.
func TestLeaseLapseStopsRuns(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			ctx := context.Background()
			slow := newMock(0)
			slow.after, slow.gate = 2, make(chan struct{})
			fs := &flaky{Store: d.Store}
			fc := clockwork.NewFakeClockAt(time.Now())
			a := open(t, d, 1, slow, onClock(fc), func(c *jobs.Config) { c.Store = fs })
			rec, err := a.q.Enqueue(ctx, sparkReq("lapsed lease"))
			if err != nil {
				t.Fatal(err)
			}
			a.start(t)
			waitSteps(t, d, rec.ID, 2)
			first := a.q.WorkerID()
			fs.down.Store(true)
			// The renewals fail until the lease may have expired; the
			// run is handed back by the worker itself, or by its rescue.
			advanceUntil(t, fc, "the run handed back", func() bool { return hasEvent(t, d, rec.ID, first) })
			if r, _ := d.Run(ctx, rec.ID); r.Status != madspark.RunQueued {
				t.Fatalf("after the lapse the run is %s (%s), want queued", r.Status, r.Error)
			}
			js := jobsOf(t, d, rec.ID)
			if len(js) != 2 || js[0].State != rivertype.JobStateDiscarded || js[1].State != rivertype.JobStateAvailable {
				states := make([]string, len(js))
				for i, j := range js {
					states[i] = fmt.Sprintf("%s by %v", j.State, j.AttemptedBy)
				}
				t.Fatalf("jobs of the run after the lapse: %v, want discarded then available", states)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				dropped := true
				for _, l := range mustLeases(t, d) {
					dropped = dropped && l.ID != first
				}
				if dropped {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the lapsed lease was not dropped")
				}
			}
			calls := slow.calls.Load()
			fs.down.Store(false)
			advanceUntil(t, fc, "a new lease once the database is back", movedOn(a, first))
			second := a.q.WorkerID()
			close(slow.gate)
			checkOneOutcome(t, d, rec.ID)
			if j := jobOf(t, d, rec.ID); len(j.AttemptedBy) == 0 || j.AttemptedBy[len(j.AttemptedBy)-1] != second {
				t.Fatalf("the requeued job was worked by %v, want %s", j.AttemptedBy, second)
			}
			// The two journaled steps were not paid again.
			if n := slow.calls.Load() - calls; n != 4 {
				t.Fatalf("%d calls after the lapse, want 4", n)
			}
		})
	}
}

// TestRescueOnce: a lost worker's job is rescued once, however many
// workers try, and a stale listing of it does not touch the run once
// another worker took it.
func TestRescueOnce(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			ctx := context.Background()
			enq := open(t, d, 0, nil)
			rec := crashedRun(t, d, enq, "rescued once", "ghost")
			stale := jobOf(t, d, rec.ID)
			other := open(t, d.reopen(t), 0, nil)
			var rescued atomic.Int32
			errs := make(chan error, 2)
			for _, q := range []*jobs.Queue{enq.q, other.q} {
				go func() {
					ok, err := q.RescueJob(ctx, stale)
					if ok {
						rescued.Add(1)
					}
					errs <- err
				}()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if n := rescued.Load(); n != 1 {
				t.Fatalf("rescued %d times", n)
			}
			if js := jobsOf(t, d, rec.ID); len(js) != 2 {
				t.Fatalf("%d jobs after two rescues, want 2", len(js))
			}
			// A worker takes the run; rescuing the stale listing again
			// changes nothing.
			slow := newMock(0)
			slow.gate = make(chan struct{})
			w := open(t, d.reopen(t), 1, slow)
			w.start(t)
			waitStatus(t, d, rec.ID, 10*time.Second, madspark.RunRunning)
			waitJob(t, d, rec.ID, rivertype.JobStateRunning)
			if ok, err := enq.q.RescueJob(ctx, stale); ok || err != nil {
				t.Fatalf("rescued a stale listing: %v, %v", ok, err)
			}
			if r, _ := d.Run(ctx, rec.ID); r.Status != madspark.RunRunning {
				t.Fatalf("a stale rescue made the run %s", r.Status)
			}
			close(slow.gate)
			checkOneOutcome(t, d, rec.ID)
		})
	}
}

// TestStartKeepsOwnLease: the rescue at start does not take the starting
// worker for a dead process of this machine.
func TestStartKeepsOwnLease(t *testing.T) {
	d := backends[0].open(t)
	w := open(t, d, 1, nil, onClock(clockwork.NewFakeClockAt(time.Now())))
	w.start(t)
	id := w.q.WorkerID()
	found := false
	for _, l := range mustLeases(t, d) {
		found = found || (l.ID == id && !l.Expired)
	}
	if !found {
		t.Fatalf("the worker's own lease %s is gone after start: %+v", id, mustLeases(t, d))
	}
}
