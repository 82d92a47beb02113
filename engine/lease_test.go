package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/proc"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/postgres/pgtest"
	"github.com/madspark/madspark/store/sqlite"
)

// leaseStore is a store with run leases, as both store packages provide.
type leaseStore interface {
	madspark.RunStore
	madspark.RunLeaseStore
	Close() error
}

// eachStore runs fn with one database opened twice, as two processes
// would: on SQLite, and on PostgreSQL (skipped, saying why, when no server
// is reachable).
func eachStore(t *testing.T, fn func(t *testing.T, dbs [2]leaseStore)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.db")
		var dbs [2]leaseStore
		for i := range dbs {
			db, err := sqlite.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs[i] = db
		}
		fn(t, dbs)
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		var dbs [2]leaseStore
		for i := range dbs {
			db, err := postgres.Open(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs[i] = db
		}
		fn(t, dbs)
	})
}

func TestRunLeaseOneProcessAtATime(t *testing.T) {
	eachStore(t, func(t *testing.T, dbs [2]leaseStore) {
		ctx := t.Context()
		client := &countingClient{}
		a := &Engine{Store: dbs[0], Client: client, Holder: "madspark run"}
		b := &Engine{Store: dbs[1], Client: client, Holder: "madspark resume"}
		r, err := a.Start(ctx, RunInfo{Pipeline: "test", Params: map[string]int{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// While a works it, b may not.
		_, err = b.Resume(ctx, r.ID(), nil)
		var held *madspark.RunHeldError
		if !errors.As(err, &held) {
			t.Fatalf("Resume of a held run = %v, want a RunHeldError", err)
		}
		if !strings.Contains(err.Error(), "madspark run (pid ") || !strings.Contains(err.Error(), r.ID()) {
			t.Errorf("refusal %q should name the run and its holder", err)
		}
		// Nor may two resumers of a failed run both win.
		if _, err := Step(ctx, r, "a", "in", ask("A")); err != nil {
			t.Fatal(err)
		}
		if err := r.Finish(ctx, nil, errors.New("provider down")); err != nil {
			t.Fatal(err)
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			runs []*Run
			refs int
		)
		for _, e := range []*Engine{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run, err := e.Resume(ctx, r.ID(), nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					runs = append(runs, run)
				case errors.As(err, &held):
					refs++
				default:
					t.Errorf("Resume: %v", err)
				}
			}()
		}
		wg.Wait()
		if len(runs) != 1 || refs != 3 {
			t.Fatalf("%d resumes won and %d were refused, want 1 and 3", len(runs), refs)
		}
		before := client.calls.Load()
		if _, err := Step(ctx, runs[0], "a", "in", ask("A")); err != nil {
			t.Fatal(err)
		}
		if _, err := Step(ctx, runs[0], "b", "in", ask("B")); err != nil {
			t.Fatal(err)
		}
		if got := client.calls.Load() - before; got != 1 {
			t.Errorf("the resumed run made %d calls, want 1 (step a is replayed)", got)
		}
		if err := runs[0].Finish(ctx, "ok", nil); err != nil {
			t.Fatal(err)
		}
		if ls, _ := dbs[0].RunLeases(ctx); len(ls) != 0 {
			t.Errorf("leases after the run finished: %+v", ls)
		}
	})
}

func TestRunLeaseExpiryInterrupts(t *testing.T) {
	eachStore(t, func(t *testing.T, dbs [2]leaseStore) {
		ctx := t.Context()
		var events []madspark.Event
		var mu sync.Mutex
		b := &Engine{Store: dbs[1], Client: &countingClient{}, Events: publisherFunc(func(e *madspark.Event) {
			mu.Lock()
			events = append(events, *e)
			mu.Unlock()
		})}
		// A live process renews its run's lease on its clock: each
		// renewal moves the lease's expiry on, so the run is not
		// interrupted. (The lease is long: it outlives the test in the
		// database's real time, renewed or not.)
		fc := clockwork.NewFakeClockAt(time.Now())
		live := &Engine{Store: dbs[0], Client: &countingClient{}, LeaseTTL: time.Minute, Clock: fc}
		lr, err := live.Start(ctx, RunInfo{Pipeline: "test", Params: map[string]int{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer lr.Finish(ctx, "ok", nil)
		first := runLease(t, dbs[1], lr.ID()).ExpiresAt
		for deadline := time.Now().Add(10 * time.Second); !runLease(t, dbs[1], lr.ID()).ExpiresAt.After(first); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the lease of a live run was not renewed when its clock moved on")
			}
			fc.Advance(time.Minute / 3)
		}
		// a's process dies: its run's context ends and nothing
		// finishes the run; its short lease expires.
		a := &Engine{Store: dbs[0], Client: &countingClient{}, LeaseTTL: 50 * time.Millisecond, Clock: clockwork.NewFakeClockAt(time.Now())}
		actx, die := context.WithCancel(ctx)
		r, err := a.Start(actx, RunInfo{Pipeline: "test", Params: map[string]int{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		die()
		deadline := time.Now().Add(10 * time.Second)
		var ids []string
		for len(ids) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			if ids, err = b.Interrupt(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if len(ids) != 1 || ids[0] != r.ID() {
			t.Fatalf("Interrupt = %v, want [%s] (not the live run %s)", ids, r.ID(), lr.ID())
		}
		rec, err := dbs[1].Run(ctx, r.ID())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != madspark.RunInterrupted || !strings.Contains(rec.Error, "madspark resume "+r.ID()) {
			t.Fatalf("run = %s %q, want interrupted, saying how to resume", rec.Status, rec.Error)
		}
		mu.Lock()
		if len(events) != 1 || events[0].Type != madspark.EventError || string(events[0].Data) != `{"status":"interrupted"}` {
			t.Errorf("events = %+v, want one final error event with the status interrupted", events)
		}
		mu.Unlock()
		// It resumes, and the old process, were it to wake, has
		// lost it: it records nothing.
		run, err := b.Resume(ctx, r.ID(), nil)
		if err != nil {
			t.Fatalf("Resume of an interrupted run: %v", err)
		}
		if err := r.Finish(ctx, "stale", nil); err != nil {
			t.Logf("the stale process's Finish: %v", err)
		}
		if err := run.Finish(ctx, "fresh", nil); err != nil {
			t.Fatal(err)
		}
		if rec, _ := dbs[0].Run(ctx, r.ID()); string(rec.Result) != `"fresh"` {
			t.Errorf("result = %s, want the resumed run's", rec.Result)
		}
	})
}

// TestRunLeaseDeadProcessHere checks that a run held by a process of this
// machine that has exited is interrupted at once, before its lease expires.
func TestRunLeaseDeadProcessHere(t *testing.T) {
	if proc.HostID() == "" {
		t.Skip("this system cannot tell processes apart by PID")
	}
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{Store: db, Client: &countingClient{}}
	rec, err := e.NewRecord(RunInfo{Pipeline: "test", Params: map[string]int{}}, madspark.RunRunning)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRun(ctx, rec); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	l := &madspark.RunLease{RunID: rec.ID, Token: "t", Holder: "madspark run (pid gone)", Host: proc.HostID(), PID: child.Process.Pid}
	if err := db.TakeRunLease(ctx, l, time.Hour); err != nil {
		t.Fatal(err)
	}
	ids, err := e.Interrupt(ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("Interrupt = %v, %v; want the run of the exited process", ids, err)
	}
}

// lostLeases is a store whose leases are always lost when renewed, as if
// another process had taken the run over while this one stalled.
type lostLeases struct{ *sqlite.DB }

func (lostLeases) KeepRunLease(context.Context, *madspark.RunLease, time.Duration) error {
	return madspark.ErrLeaseLost
}

func TestRunLeaseLostStopsTheRun(t *testing.T) {
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	client := &countingClient{}
	fc := clockwork.NewFakeClockAt(time.Now())
	e := &Engine{Store: lostLeases{db}, Client: client, LeaseTTL: time.Minute, Clock: fc}
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Params: map[string]int{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Its first renewal finds the lease lost.
	for deadline := time.Now().Add(10 * time.Second); !r.lease.isLost(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lost lease was not noticed when the clock moved on")
		}
		fc.Advance(time.Minute / 3)
	}
	if _, err := Step(ctx, r, "a", "in", ask("A")); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Step after the lease was lost = %v, want ErrLeaseLost", err)
	}
	if client.calls.Load() != 0 {
		t.Errorf("%d calls after the lease was lost, want 0", client.calls.Load())
	}
	if err := r.Finish(ctx, "x", nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Finish = %v, want ErrLeaseLost", err)
	}
	if rec, _ := db.Run(ctx, r.ID()); rec.Status != madspark.RunRunning {
		t.Errorf("status = %s: a run lost to another process must not be recorded here", rec.Status)
	}
}

// runLease returns the lease of run id in s.
func runLease(t *testing.T, s madspark.RunLeaseStore, id string) madspark.RunLease {
	t.Helper()
	ls, err := s.RunLeases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.RunID == id {
			return l
		}
	}
	t.Fatalf("run %s has no lease: %+v", id, ls)
	return madspark.RunLease{}
}

type publisherFunc func(e *madspark.Event)

func (f publisherFunc) Publish(_ context.Context, e *madspark.Event) error { f(e); return nil }

var _ llm.Client = (*countingClient)(nil)
