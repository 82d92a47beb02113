package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// testRunLeases checks taking, keeping, dropping and expiring a run's lease.
func testRunLeases(t *testing.T, s Store) {
	c := ctx(t)
	now := time.Now().UTC()
	mustCreate(t, s, newRun("r-lease", "spark", now))
	if ls, err := s.RunLeases(c); err != nil || ls == nil || len(ls) != 0 {
		t.Fatalf("RunLeases of a store without leases = %v, %v; want non-nil empty", ls, err)
	}
	a := &madspark.RunLease{RunID: "r-lease", Token: "tok-a", Holder: "madspark (pid 41 on host h1)", Host: "h1", PID: 41}
	if err := s.TakeRunLease(c, a, time.Hour); err != nil {
		t.Fatalf("TakeRunLease: %v", err)
	}
	if a.StartedAt.IsZero() || a.ExpiresAt.Sub(a.StartedAt) < 59*time.Minute {
		t.Fatalf("lease = %+v, want ExpiresAt an hour after StartedAt", a)
	}
	// Another token is refused, naming the holder.
	b := &madspark.RunLease{RunID: "r-lease", Token: "tok-b", Holder: "other", Host: "h2", PID: 42}
	err := s.TakeRunLease(c, b, time.Hour)
	var held *madspark.RunHeldError
	if !errors.As(err, &held) || held.Lease.Holder != a.Holder || held.Lease.PID != 41 || held.Lease.Token != "" {
		t.Fatalf("TakeRunLease of a held run = %v (%+v), want a RunHeldError naming %q without its token", err, held, a.Holder)
	}
	// The holder takes it again (a retry) and keeps it.
	if err := s.TakeRunLease(c, a, time.Hour); err != nil {
		t.Fatalf("TakeRunLease by its holder: %v", err)
	}
	if err := s.KeepRunLease(c, a, time.Hour); err != nil {
		t.Fatalf("KeepRunLease: %v", err)
	}
	if err := s.KeepRunLease(c, b, time.Hour); !errors.Is(err, madspark.ErrLeaseLost) {
		t.Fatalf("KeepRunLease by another token = %v, want ErrLeaseLost", err)
	}
	ls, err := s.RunLeases(c)
	if err != nil || len(ls) != 1 || ls[0].RunID != "r-lease" || ls[0].Token != "tok-a" || ls[0].Host != "h1" || ls[0].Expired {
		t.Fatalf("RunLeases = %+v, %v; want r-lease live, held by tok-a on h1", ls, err)
	}
	// Dropping by another token leaves it; by its holder removes it.
	if err := s.DropRunLease(c, b); err != nil {
		t.Fatal(err)
	}
	if err := s.TakeRunLease(c, b, time.Hour); !errors.As(err, &held) {
		t.Fatalf("TakeRunLease after a foreign drop = %v, want held", err)
	}
	if err := s.DropRunLease(c, a); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepRunLease(c, a, time.Hour); !errors.Is(err, madspark.ErrLeaseLost) {
		t.Fatalf("KeepRunLease after drop = %v, want ErrLeaseLost", err)
	}
	// A lease that expired is taken over, and its old holder has lost it.
	if err := s.TakeRunLease(c, a, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if ls, _ := s.RunLeases(c); len(ls) != 1 || !ls[0].Expired {
		t.Fatalf("RunLeases = %+v, want one expired", ls)
	}
	if err := s.TakeRunLease(c, b, time.Hour); err != nil {
		t.Fatalf("TakeRunLease of an expired lease: %v", err)
	}
	if err := s.KeepRunLease(c, a, time.Hour); !errors.Is(err, madspark.ErrLeaseLost) {
		t.Fatalf("KeepRunLease of a lease taken over = %v, want ErrLeaseLost", err)
	}
	// No run, no lease.
	if err := s.TakeRunLease(c, &madspark.RunLease{RunID: "r-none", Token: "t"}, time.Hour); !errors.Is(err, madspark.ErrNotFound) {
		t.Fatalf("TakeRunLease of a missing run = %v, want ErrNotFound", err)
	}
}

// testInterruptRun checks that only the lease read is interrupted, once,
// and only while the run is running.
func testInterruptRun(t *testing.T, s Store) {
	c := ctx(t)
	now := time.Now().UTC()
	mustCreate(t, s, newRun("r-int", "spark", now))
	l := &madspark.RunLease{RunID: "r-int", Token: "tok-1", Holder: "gone"}
	if err := s.TakeRunLease(c, l, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ls, err := s.RunLeases(c)
	if err != nil || len(ls) != 1 {
		t.Fatalf("RunLeases = %+v, %v", ls, err)
	}
	// Meanwhile another process took the run over: the stale read must
	// not interrupt it.
	n := &madspark.RunLease{RunID: "r-int", Token: "tok-2", Holder: "live"}
	if err := s.TakeRunLease(c, n, time.Hour); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.InterruptRun(c, &ls[0], "lost"); err != nil || ok {
		t.Fatalf("InterruptRun with a stale lease = %v, %v; want false", ok, err)
	}
	if r := mustRun(t, s, "r-int"); r.Status != madspark.RunRunning {
		t.Fatalf("status = %s, want running", r.Status)
	}
	if ok, err := s.InterruptRun(c, n, "the process working it stopped"); err != nil || !ok {
		t.Fatalf("InterruptRun = %v, %v; want true", ok, err)
	}
	r := mustRun(t, s, "r-int")
	if r.Status != madspark.RunInterrupted || r.Error != "the process working it stopped" {
		t.Fatalf("run = %s %q, want interrupted with the message", r.Status, r.Error)
	}
	if ok, err := s.InterruptRun(c, n, "again"); err != nil || ok {
		t.Fatalf("second InterruptRun = %v, %v; want false", ok, err)
	}
	if ls, _ := s.RunLeases(c); len(ls) != 0 {
		t.Fatalf("RunLeases after interrupting = %+v, want none", ls)
	}
	// An interrupted run resumes: it may be set running again and leased.
	if ok, err := s.SetRunStatus(c, "r-int", madspark.RunRunning, madspark.RunInterrupted); err != nil || !ok {
		t.Fatalf("SetRunStatus from interrupted = %v, %v", ok, err)
	}
	if err := s.TakeRunLease(c, &madspark.RunLease{RunID: "r-int", Token: "tok-3"}, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// testRunLeaseContention has many takers race for one run: exactly one
// gets it, the others are told who has it.
func testRunLeaseContention(t *testing.T, s Store) {
	c := ctx(t)
	mustCreate(t, s, newRun("r-race", "spark", time.Now().UTC()))
	const takers = 16
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []string
		holder = map[string]bool{}
	)
	for i := range takers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &madspark.RunLease{RunID: "r-race", Token: fmt.Sprintf("tok-%d", i), Holder: fmt.Sprintf("p%d", i)}
			err := s.TakeRunLease(c, l, time.Hour)
			var held *madspark.RunHeldError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, l.Holder)
			case errors.As(err, &held):
				holder[held.Lease.Holder] = true
			default:
				t.Errorf("TakeRunLease: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d takers got the lease (%v), want exactly 1", len(won), won)
	}
	for h := range holder {
		if h != won[0] {
			t.Errorf("a refused taker was told %q holds the run, want %q", h, won[0])
		}
	}
}

// testStartRun checks that StartRun records the run and its lease
// together, and neither when the run exists already.
func testStartRun(t *testing.T, s Store) {
	c := ctx(t)
	run := newRun("r-start", "debate", time.Now().UTC())
	l := &madspark.RunLease{RunID: run.ID, Token: "tok-a", Holder: "madspark serve (pid 7 on host h)", Host: "h", PID: 7}
	if err := s.StartRun(c, run, l, time.Hour); err != nil {
		t.Fatalf("StartRun: %v", err)
	}
	checkRun(t, mustRun(t, s, run.ID), run)
	if l.StartedAt.IsZero() || l.ExpiresAt.Sub(l.StartedAt) < 59*time.Minute {
		t.Fatalf("lease = %+v, want ExpiresAt an hour after StartedAt", l)
	}
	if ls, err := s.RunLeases(c); err != nil || len(ls) != 1 || ls[0].RunID != run.ID || ls[0].Token != "tok-a" || ls[0].Holder != l.Holder {
		t.Fatalf("RunLeases after StartRun = %+v, %v; want the run held by tok-a", ls, err)
	}
	// The run exists: a second start changes nothing, its lease included.
	again := newRun(run.ID, "spark", time.Now().UTC())
	other := &madspark.RunLease{RunID: run.ID, Token: "tok-b", Holder: "other", Host: "h2", PID: 8}
	if err := s.StartRun(c, again, other, time.Hour); err == nil {
		t.Fatal("StartRun of an existing run succeeded")
	}
	if got := mustRun(t, s, run.ID); got.Pipeline != "debate" {
		t.Fatalf("the existing run changed: %+v", got)
	}
	if ls, _ := s.RunLeases(c); len(ls) != 1 || ls[0].Token != "tok-a" {
		t.Fatalf("RunLeases after a refused start = %+v, want tok-a's lease alone", ls)
	}
	// A run the store refuses takes no lease.
	bad := newRun("r-bad", "debate", time.Now().UTC())
	bad.Params = []byte(`{not json`)
	if err := s.StartRun(c, bad, &madspark.RunLease{RunID: bad.ID, Token: "tok-c"}, time.Hour); err == nil {
		t.Fatal("StartRun of a run with invalid params succeeded")
	}
	checkNotStored(t, s, bad.ID)
}

// testEndRun checks that EndRun records the steps and events held, the
// outcome, the final event and the lease's end together, and none of them
// when one fails.
func testEndRun(t *testing.T, s Store) {
	c := ctx(t)
	run := newRun("r-end", "debate", time.Now().UTC())
	l := &madspark.RunLease{RunID: run.ID, Token: "tok-a", Holder: "h", Host: "h", PID: 7}
	if err := s.StartRun(c, run, l, time.Hour); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, &madspark.Event{RunID: run.ID, Type: madspark.EventProgress, Stage: "route", Progress: 5})
	// A final event of another run, missing: nothing is recorded.
	run.Status, run.Result, run.Usage = madspark.RunSucceeded, []byte(`{"answer":"42"}`), llm.Usage{InputTokens: 3, OutputTokens: 4, LLMCalls: 1}
	step := &madspark.Step{RunID: run.ID, Key: "direct", InputHash: "h1", Status: madspark.StepDone, Output: []byte(`{"text":"42"}`),
		Usage: run.Usage, StartedAt: time.Now().UTC(), FinishedAt: time.Now().UTC(),
		Calls: []madspark.Call{{Agent: "debate.direct", Model: "m", Response: "42", Usage: run.Usage}}}
	held := &madspark.Event{RunID: run.ID, Type: madspark.EventProgress, Stage: "answer", Progress: 50, Message: "held"}
	stray := &madspark.Event{RunID: "r-missing", Type: madspark.EventResult, Stage: "done", Progress: 100}
	err := s.EndRun(c, run, l, []*madspark.Step{step}, held, stray)
	checkNotFound(t, "EndRun with an event of a missing run", err, "r-missing")
	if got := mustRun(t, s, run.ID); got.Status != madspark.RunRunning || !got.FinishedAt.IsZero() {
		t.Fatalf("a failed EndRun recorded the outcome: %+v", got)
	}
	if steps, err := s.Steps(c, run.ID); err != nil || len(steps) != 0 {
		t.Fatalf("a failed EndRun journaled its steps: %+v, %v", steps, err)
	}
	if evs := mustEvents(t, s, run.ID, 0, 10); len(evs) != 1 {
		t.Fatalf("a failed EndRun stored its events: %+v", evs)
	}
	if ls, _ := s.RunLeases(c); len(ls) != 1 {
		t.Fatalf("a failed EndRun dropped the lease: %+v", ls)
	}
	run.FinishedAt = time.Time{}
	final := &madspark.Event{RunID: run.ID, Type: madspark.EventResult, Stage: "done", Progress: 100, Message: "succeeded", Data: run.Result}
	if err := s.EndRun(c, run, l, []*madspark.Step{step}, held, final); err != nil {
		t.Fatalf("EndRun: %v", err)
	}
	got := mustRun(t, s, run.ID)
	if got.Status != madspark.RunSucceeded || got.Usage != run.Usage || got.FinishedAt.IsZero() {
		t.Fatalf("run after EndRun = %+v", got)
	}
	checkJSON(t, "result", got.Result, run.Result)
	if held.Seq != 2 || final.Seq != 3 || final.Time.IsZero() {
		t.Fatalf("events = %+v, %+v; want seq 2 and 3, with a time", held, final)
	}
	if last, err := s.LastEvent(c, run.ID); err != nil || last == nil || last.Seq != 3 || last.Type != madspark.EventResult {
		t.Fatalf("LastEvent = %+v, %v; want the final event", last, err)
	}
	if evs := mustEvents(t, s, run.ID, 1, 10); len(evs) != 2 || evs[0].Message != "held" {
		t.Fatalf("events after the first = %+v, want the held one, then the final one", evs)
	}
	steps, err := s.Steps(c, run.ID)
	if err != nil || len(steps) != 1 || steps[0].Key != "direct" || steps[0].Status != madspark.StepDone ||
		len(steps[0].Calls) != 1 || steps[0].Calls[0].Response != "42" || steps[0].Usage != run.Usage {
		t.Fatalf("steps after EndRun = %+v, %v; want the step held", steps, err)
	}
	checkJSON(t, "step output", steps[0].Output, step.Output)
	if err := s.KeepRunLease(c, l, time.Hour); !errors.Is(err, madspark.ErrLeaseLost) {
		t.Fatalf("the lease after EndRun: %v, want it dropped", err)
	}
	// Without an event or a lease, EndRun is FinishRun.
	plain := newRun("r-plain", "spark", time.Now().UTC())
	mustCreate(t, s, plain)
	plain.Status, plain.Error = madspark.RunFailed, "boom"
	if err := s.EndRun(c, plain, nil, nil); err != nil {
		t.Fatalf("EndRun without event or lease: %v", err)
	}
	if got := mustRun(t, s, plain.ID); got.Status != madspark.RunFailed || got.Error != "boom" {
		t.Fatalf("run = %+v", got)
	}
	if evs := mustEvents(t, s, plain.ID, 0, 10); len(evs) != 0 {
		t.Fatalf("events = %+v, want none", evs)
	}
	checkNotFound(t, "EndRun of a missing run", s.EndRun(c, newRun("r-none", "spark", time.Now()), nil, nil), "r-none")
}
