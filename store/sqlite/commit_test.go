package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
)

// TestGroupCommit: writes made at once, committed in groups, each get
// their own outcome: those that fail (a missing run, a cancelled context)
// fail alone, and the others are committed; after Close, writes fail.
func TestGroupCommit(t *testing.T) {
	db := openTest(t, "")
	ctx := context.Background()
	const n = 120
	var wg sync.WaitGroup
	errs := make([]error, n)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("run-%03d", i)
			switch i % 10 {
			case 3: // a write that fails: its group must not fail with it
				errs[i] = db.AppendEvent(ctx, &madspark.Event{RunID: "missing-" + id, Type: madspark.EventProgress})
			case 7: // a writer that gave up
				errs[i] = db.CreateRun(cancelled, &madspark.Run{ID: id, Pipeline: "spark", CreatedAt: time.Now()})
			default:
				errs[i] = db.CreateRun(ctx, &madspark.Run{ID: id, Pipeline: "spark", CreatedAt: time.Now()})
				if errs[i] == nil {
					errs[i] = db.AppendEvent(ctx, &madspark.Event{RunID: id, Type: madspark.EventProgress, Stage: "x"})
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		id := fmt.Sprintf("run-%03d", i)
		_, rerr := db.Run(ctx, id)
		switch i % 10 {
		case 3:
			if !errors.Is(err, madspark.ErrNotFound) {
				t.Errorf("%d: an event of a missing run: %v", i, err)
			}
		case 7:
			if !errors.Is(err, context.Canceled) || !errors.Is(rerr, madspark.ErrNotFound) {
				t.Errorf("%d: a cancelled write: %v, then %v", i, err, rerr)
			}
		default:
			if err != nil || rerr != nil {
				t.Errorf("%d: %v, then %v", i, err, rerr)
			}
			if evs, err := db.Events(ctx, id, 0, 10); err != nil || len(evs) != 1 || evs[0].Seq != 1 {
				t.Errorf("%d: events %v %v", i, evs, err)
			}
		}
	}
	other, err := Open(ctx, filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	err = other.CreateRun(ctx, &madspark.Run{ID: "late", Pipeline: "spark"})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a write after Close: %v", err)
	}
}

// TestRunEndsWaitForOthers: runs started and ended at once, their ends
// waiting for other writes to commit with (sqlstore.MayWait), each get
// their own outcome, their steps and events whole and in order.
func TestRunEndsWaitForOthers(t *testing.T) {
	db := openTest(t, "")
	ctx := context.Background()
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("run-%03d", i)
			run := &madspark.Run{ID: id, Pipeline: "debate", CreatedAt: time.Now()}
			l := &madspark.RunLease{RunID: id, Token: "tok-" + id, Holder: "h", Host: "h", PID: 1}
			if errs[i] = db.StartRun(ctx, run, l, time.Minute); errs[i] != nil {
				return
			}
			step := &madspark.Step{RunID: id, Key: "direct", Status: madspark.StepDone, Output: []byte(`"a"`), StartedAt: time.Now(), FinishedAt: time.Now()}
			run.Status, run.Result = madspark.RunSucceeded, []byte(`"a"`)
			errs[i] = db.EndRun(ctx, run, l, []*madspark.Step{step},
				&madspark.Event{RunID: id, Type: madspark.EventProgress, Stage: "route", Progress: 5},
				&madspark.Event{RunID: id, Type: madspark.EventResult, Stage: "done", Progress: 100})
		})
	}
	wg.Wait()
	for i, err := range errs {
		id := fmt.Sprintf("run-%03d", i)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		r, err := db.Run(ctx, id)
		if err != nil || r.Status != madspark.RunSucceeded {
			t.Fatalf("%s: %+v, %v", id, r, err)
		}
		evs, _ := db.Events(ctx, id, 0, 10)
		steps, _ := db.Steps(ctx, id)
		if len(evs) != 2 || evs[0].Seq != 1 || evs[1].Type != madspark.EventResult || len(steps) != 1 {
			t.Fatalf("%s: events %+v, steps %+v", id, evs, steps)
		}
	}
	if ls, _ := db.RunLeases(ctx); len(ls) != 0 {
		t.Fatalf("leases left: %+v", ls)
	}
}

// TestLoneWritesNeverLinger: a run's end waits for other writes only
// while writers contend (the last group held several writes, lately); a
// lone writer's runs, one after another, never make a group, so their
// ends are committed at once.
func TestLoneWritesNeverLinger(t *testing.T) {
	db := openTest(t, "")
	ctx := context.Background()
	for i := range 3 {
		id := fmt.Sprintf("run-%d", i)
		run := &madspark.Run{ID: id, Pipeline: "debate", CreatedAt: time.Now()}
		l := &madspark.RunLease{RunID: id, Token: "tok-" + id, Holder: "h", Host: "h", PID: 1}
		if err := db.StartRun(ctx, run, l, time.Minute); err != nil {
			t.Fatal(err)
		}
		run.Status, run.Result = madspark.RunSucceeded, []byte(`"a"`)
		if err := db.EndRun(ctx, run, l, nil, &madspark.Event{RunID: id, Type: madspark.EventResult, Stage: "done", Progress: 100}); err != nil {
			t.Fatal(err)
		}
	}
	c := db.writes
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastGroup != 1 || c.lingers(true) {
		t.Fatalf("after lone writes: last group of %d, lingers %v", c.lastGroup, c.lingers(true))
	}
	c.lastCommit, c.lastGroup = time.Now(), 2
	if !c.lingers(true) || c.lingers(false) {
		t.Fatalf("contended: a run's end lingers %v, a run's start %v", c.lingers(true), c.lingers(false))
	}
	c.lastCommit = time.Now().Add(-busy)
	if c.lingers(true) {
		t.Fatal("a group committed longer than busy ago still makes ends linger")
	}
}
