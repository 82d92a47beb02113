package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
)

// ---- run status ----

func testSetRunStatus(t *testing.T, s Store) {
	c := ctx(t)
	r := newRun("q", "spark", base)
	r.Status = madspark.RunQueued
	mustCreate(t, s, r)

	// queued → running, only from queued.
	if ok, err := s.SetRunStatus(c, "q", madspark.RunRunning, madspark.RunSucceeded); err != nil || ok {
		t.Fatalf("SetRunStatus from succeeded = %v, %v; want false, nil", ok, err)
	}
	if got := mustRun(t, s, "q"); got.Status != madspark.RunQueued {
		t.Fatalf("status = %s after a refused change, want queued", got.Status)
	}
	if ok, err := s.SetRunStatus(c, "q", madspark.RunRunning, madspark.RunQueued, madspark.RunFailed); err != nil || !ok {
		t.Fatalf("SetRunStatus queued → running = %v, %v; want true, nil", ok, err)
	}
	if got := mustRun(t, s, "q"); got.Status != madspark.RunRunning {
		t.Fatalf("status = %s, want running", got.Status)
	}

	// A failed run is reopened: its error and finish time are cleared,
	// the rest kept.
	failed := *mustRun(t, s, "q")
	failed.Status, failed.Error, failed.FinishedAt = madspark.RunFailed, "boom", base.Add(time.Minute)
	if err := s.FinishRun(c, &failed); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SetRunStatus(c, "q", madspark.RunRunning); err != nil || !ok {
		t.Fatalf("SetRunStatus from any = %v, %v; want true, nil", ok, err)
	}
	want := *r
	want.Status = madspark.RunRunning
	checkRun(t, mustRun(t, s, "q"), &want)

	// Back to queued (a lost worker).
	if ok, err := s.SetRunStatus(c, "q", madspark.RunQueued, madspark.RunRunning); err != nil || !ok {
		t.Fatalf("SetRunStatus running → queued = %v, %v", ok, err)
	}
	if got := mustRun(t, s, "q"); got.Status != madspark.RunQueued {
		t.Fatalf("status = %s, want queued", got.Status)
	}

	_, err := s.SetRunStatus(c, "missing", madspark.RunRunning)
	checkNotFound(t, "SetRunStatus missing", err, "missing")
	for _, st := range []madspark.RunStatus{madspark.RunSucceeded, madspark.RunFailed, madspark.RunCancelled, ""} {
		if _, err := s.SetRunStatus(c, "q", st); err == nil {
			t.Errorf("SetRunStatus to %q succeeded; final states go through FinishRun", st)
		}
	}
	if got := mustRun(t, s, "q"); got.Status != madspark.RunQueued {
		t.Fatalf("status = %s after refused changes, want queued", got.Status)
	}
}

// ---- events ----

func mustAppend(t *testing.T, s madspark.EventStore, e *madspark.Event) {
	t.Helper()
	if err := s.AppendEvent(ctx(t), e); err != nil {
		t.Fatalf("AppendEvent %+v: %v", e, err)
	}
}

func mustEvents(t *testing.T, s madspark.EventStore, runID string, after int64, limit int) []madspark.Event {
	t.Helper()
	evs, err := s.Events(ctx(t), runID, after, limit)
	if err != nil {
		t.Fatalf("Events %q after %d: %v", runID, after, err)
	}
	if evs == nil {
		t.Fatalf("Events %q = nil, want a non-nil slice", runID)
	}
	return evs
}

func seqs(evs []madspark.Event) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func testEventsRoundTrip(t *testing.T, s Store) {
	mustCreate(t, s, newRun("a", "spark", base))
	mustCreate(t, s, newRun("b", "spark", base))
	first := &madspark.Event{RunID: "a", Type: madspark.EventProgress, Stage: "generate", Progress: 5, Message: "generating 5 ideas", Time: base}
	mustAppend(t, s, first)
	if first.Seq != 1 {
		t.Fatalf("first event seq = %d, want 1", first.Seq)
	}
	other := &madspark.Event{RunID: "b", Type: madspark.EventProgress, Stage: "generate"}
	before := time.Now().Add(-time.Second)
	mustAppend(t, s, other)
	if other.Seq != 1 {
		t.Fatalf("first event of another run: seq = %d, want 1", other.Seq)
	}
	if other.Time.Before(before) || other.Time.Location() != time.UTC {
		t.Errorf("a zero Time is set to now in UTC, got %v", other.Time)
	}
	final := &madspark.Event{RunID: "a", Type: madspark.EventResult, Stage: "done", Progress: 100,
		Data: json.RawMessage(`{"ideas":[{"title":"é","score":8.5}]}`), Time: base.Add(time.Second)}
	mustAppend(t, s, final)
	if final.Seq != 2 {
		t.Fatalf("second event seq = %d, want 2", final.Seq)
	}

	evs := mustEvents(t, s, "a", 0, 0)
	if got := seqs(evs); !reflect.DeepEqual(got, []int64{1, 2}) {
		t.Fatalf("events of a = %v, want [1 2]", got)
	}
	for i, want := range []*madspark.Event{first, final} {
		got := evs[i]
		if got.RunID != want.RunID || got.Type != want.Type || got.Stage != want.Stage || got.Progress != want.Progress || got.Message != want.Message {
			t.Errorf("event %d:\n got %+v\nwant %+v", i+1, got, *want)
		}
		checkJSON(t, fmt.Sprintf("event %d data", i+1), got.Data, want.Data)
		checkTime(t, fmt.Sprintf("event %d time", i+1), got.Time, want.Time)
	}
	if !evs[1].Final() || evs[0].Final() {
		t.Errorf("Final() = %v, %v; want false, true", evs[0].Final(), evs[1].Final())
	}
	if got := mustEvents(t, s, "nobody", 0, 0); len(got) != 0 {
		t.Errorf("events of a missing run = %v, want none", got)
	}
}

func testEventsPaging(t *testing.T, s Store) {
	mustCreate(t, s, newRun("a", "spark", base))
	for i := range 1203 {
		mustAppend(t, s, &madspark.Event{RunID: "a", Type: madspark.EventProgress, Progress: i % 101})
	}
	for _, tc := range []struct {
		after       int64
		limit       int
		first, size int
	}{
		{0, 0, 1, 500},
		{0, 10, 1, 10},
		{500, 0, 501, 500},
		{1200, 0, 1201, 3},
		{1203, 0, 0, 0},
		{0, 5000, 1, 1000},
		{-7, 2, 1, 2},
	} {
		evs := mustEvents(t, s, "a", tc.after, tc.limit)
		if len(evs) != tc.size {
			t.Errorf("Events after %d limit %d: %d events, want %d", tc.after, tc.limit, len(evs), tc.size)
			continue
		}
		for i, e := range evs {
			if e.Seq != int64(tc.first+i) {
				t.Errorf("Events after %d limit %d: event %d has seq %d, want %d", tc.after, tc.limit, i, e.Seq, tc.first+i)
				break
			}
		}
	}
}

func testEventsRejects(t *testing.T, s Store) {
	c := ctx(t)
	mustCreate(t, s, newRun("a", "spark", base))
	err := s.AppendEvent(c, &madspark.Event{RunID: "missing", Type: madspark.EventProgress})
	checkNotFound(t, "AppendEvent to a missing run", err, "missing")
	for _, e := range []*madspark.Event{
		nil,
		{Type: madspark.EventProgress},
		{RunID: "a"},
		{RunID: "a", Type: madspark.EventResult, Data: json.RawMessage(`{"x":`)},
	} {
		if err := s.AppendEvent(c, e); err == nil {
			t.Errorf("AppendEvent(%+v) succeeded", e)
		} else if errors.Is(err, madspark.ErrNotFound) {
			t.Errorf("AppendEvent(%+v): err %v wraps ErrNotFound", e, err)
		}
	}
	if got := mustEvents(t, s, "a", 0, 0); len(got) != 0 {
		t.Fatalf("rejected events were stored: %+v", got)
	}
	// The numbering is not disturbed by the rejected events.
	e := &madspark.Event{RunID: "a", Type: madspark.EventProgress}
	mustAppend(t, s, e)
	if e.Seq != 1 {
		t.Fatalf("seq after rejected events = %d, want 1", e.Seq)
	}
}

func testConcurrentAppendEvent(t *testing.T, s Store) {
	c := ctx(t)
	const goroutines, perG = 8, 15
	mustCreate(t, s, newRun("shared", "concurrent", base))
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			last := int64(0)
			for j := range perG {
				e := &madspark.Event{RunID: "shared", Type: madspark.EventProgress, Message: fmt.Sprintf("g%d-%02d", g, j)}
				if err := s.AppendEvent(c, e); err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", g, err)
					return
				}
				if e.Seq <= last {
					errs <- fmt.Errorf("goroutine %d: seq %d after %d", g, e.Seq, last)
					return
				}
				last = e.Seq
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	evs := mustEvents(t, s, "shared", 0, 1000)
	if len(evs) != goroutines*perG {
		t.Fatalf("%d events, want %d", len(evs), goroutines*perG)
	}
	next := make([]int, goroutines)
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the numbering has gaps or repeats", i, e.Seq)
		}
		var g, j int
		if _, err := fmt.Sscanf(e.Message, "g%d-%d", &g, &j); err != nil || j != next[g] {
			t.Fatalf("event %q out of order (want g%d-%02d)", e.Message, g, next[g])
		}
		next[g]++
	}
}

// ---- batches ----

func testBatchRoundTrip(t *testing.T, s Store) {
	c := ctx(t)
	for _, id := range []string{"r1", "r2"} {
		mustCreate(t, s, newRun(id, "spark", base))
	}
	done := newRun("r3", "spark", base)
	mustCreate(t, s, done)
	done.Status = madspark.RunSucceeded
	if err := s.FinishRun(c, done); err != nil {
		t.Fatal(err)
	}
	b := &madspark.Batch{ID: "batch-1", Pipeline: "spark", Source: "ideas.csv", CreatedAt: base, Items: []madspark.BatchItem{
		{Line: 2, Topic: "urban farming", Tags: []string{"food", "cities, dense"}, RunID: "r1"},
		{Line: 3, Topic: "", Error: "line 3: num_candidates: want an integer, got \"x\""},
		{Line: 4, Topic: "ocean 🌊", RunID: "r3"},
		{Line: 5, Topic: "lost", RunID: "gone"},
		{Line: 6, Topic: "urban farming", RunID: "r2"},
	}}
	if err := s.CreateBatch(c, b); err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	got, err := s.Batch(c, "batch-1")
	if err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if got.ID != b.ID || got.Pipeline != b.Pipeline || got.Source != b.Source {
		t.Errorf("batch = %+v, want %+v", got, b)
	}
	checkTime(t, "batch created", got.CreatedAt, base)
	want := append([]madspark.BatchItem(nil), b.Items...)
	want[0].Status, want[2].Status, want[4].Status = madspark.RunRunning, madspark.RunSucceeded, madspark.RunRunning
	if !reflect.DeepEqual(got.Items, want) {
		t.Errorf("items:\n got %+v\nwant %+v", got.Items, want)
	}

	// An empty batch, and a zero creation time.
	empty := &madspark.Batch{ID: "batch-2", Pipeline: "chaos"}
	if err := s.CreateBatch(c, empty); err != nil {
		t.Fatal(err)
	}
	if empty.CreatedAt.IsZero() {
		t.Error("CreateBatch left CreatedAt zero")
	}
	got, err = s.Batch(c, "batch-2")
	if err != nil || got.Items == nil || len(got.Items) != 0 {
		t.Errorf("empty batch = %+v, %v; want non-nil empty items", got, err)
	}
}

func testBatchRejects(t *testing.T, s Store) {
	c := ctx(t)
	_, err := s.Batch(c, "nope")
	if !errors.Is(err, madspark.ErrNotFound) || err.Error() != `batch "nope": not found` {
		t.Errorf("Batch missing: err = %v, want batch \"nope\": not found", err)
	}
	for _, b := range []*madspark.Batch{nil, {Pipeline: "spark"}} {
		if err := s.CreateBatch(c, b); err == nil {
			t.Errorf("CreateBatch(%+v) succeeded", b)
		}
	}
	mustBatch := &madspark.Batch{ID: "b", Pipeline: "spark", Items: []madspark.BatchItem{{Line: 1, Topic: "x"}}}
	if err := s.CreateBatch(c, mustBatch); err != nil {
		t.Fatal(err)
	}
	dup := &madspark.Batch{ID: "b", Pipeline: "chaos", Items: []madspark.BatchItem{{Line: 9}, {Line: 10}}}
	if err := s.CreateBatch(c, dup); err == nil {
		t.Error("CreateBatch with a used ID succeeded")
	}
	got, err := s.Batch(c, "b")
	if err != nil || got.Pipeline != "spark" || len(got.Items) != 1 {
		t.Errorf("after a refused duplicate: %+v, %v", got, err)
	}
}

func testBatchesList(t *testing.T, s Store) {
	c := ctx(t)
	if got, err := s.Batches(c, 10, 0); err != nil || len(got) != 0 {
		t.Fatalf("Batches of an empty store = %v, %v", got, err)
	}
	for i, id := range []string{"old", "mid", "new"} {
		b := &madspark.Batch{ID: id, Pipeline: "spark", CreatedAt: base.Add(time.Duration(i) * time.Minute),
			Items: []madspark.BatchItem{{Line: 2, Topic: id}, {Line: 3, Topic: id + " 2", Error: "bad"}}}
		if err := s.CreateBatch(c, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Batches(c, 2, 0)
	if err != nil || len(got) != 2 || got[0].ID != "new" || got[1].ID != "mid" || len(got[0].Items) != 2 || got[0].Items[1].Error != "bad" {
		t.Fatalf("Batches(2, 0) = %+v, %v; want new, mid with their items", got, err)
	}
	if got, err := s.Batches(c, 5, 2); err != nil || len(got) != 1 || got[0].ID != "old" {
		t.Fatalf("Batches(5, 2) = %+v, %v; want old", got, err)
	}
}

// ---- leases ----

func testLeases(t *testing.T, s Store) {
	c := ctx(t)
	if got, err := s.Leases(c); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Leases of an empty store = %v, %v; want non-nil empty", got, err)
	}
	a := &madspark.WorkerLease{ID: "w-a", Host: "h1", PID: 41}
	if err := s.RenewLease(c, a, time.Hour); err != nil {
		t.Fatalf("RenewLease: %v", err)
	}
	if a.StartedAt.IsZero() || a.ExpiresAt.Sub(a.StartedAt) < 59*time.Minute {
		t.Fatalf("lease = %+v, want ExpiresAt an hour after StartedAt", a)
	}
	// A short lease expires.
	b := &madspark.WorkerLease{ID: "w-b", Host: "h2", PID: 42}
	if err := s.RenewLease(c, b, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ls, err := s.Leases(c)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Leases = %+v, %v; want 2", ls, err)
	}
	byID := map[string]madspark.WorkerLease{}
	for _, l := range ls {
		byID[l.ID] = l
	}
	if l := byID["w-a"]; l.Expired || l.Host != "h1" || l.PID != 41 {
		t.Errorf("lease w-a = %+v, want live, h1, 41", l)
	}
	if l := byID["w-b"]; !l.Expired {
		t.Errorf("lease w-b = %+v, want expired", l)
	}
	// Renewing keeps the start, moves the expiry, revives.
	started := byID["w-b"].StartedAt
	b.PID = 43
	if err := s.RenewLease(c, b, time.Hour); err != nil {
		t.Fatal(err)
	}
	ls, _ = s.Leases(c)
	for _, l := range ls {
		if l.ID == "w-b" && (l.Expired || l.PID != 43 || !sameTime(l.StartedAt, started)) {
			t.Errorf("renewed lease = %+v, want live, pid 43, started %v", l, started)
		}
	}
	if err := s.DropLease(c, "w-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DropLease(c, "w-a"); err != nil {
		t.Errorf("dropping a missing lease: %v", err)
	}
	ls, _ = s.Leases(c)
	if len(ls) != 1 || ls[0].ID != "w-b" {
		t.Errorf("after DropLease: %+v", ls)
	}
	if err := s.RenewLease(c, &madspark.WorkerLease{}, time.Hour); err == nil {
		t.Error("RenewLease without an ID succeeded")
	}

	// ExtendLease extends a live lease, and neither revives an expired one
	// nor recreates a dropped one.
	if err := s.ExtendLease(c, b, time.Hour); err != nil {
		t.Errorf("ExtendLease of a live lease: %v", err)
	}
	e := &madspark.WorkerLease{ID: "w-e", Host: "h3", PID: 44}
	if err := s.RenewLease(c, e, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.ExtendLease(c, e, time.Hour); !errors.Is(err, madspark.ErrLeaseLost) {
		t.Errorf("ExtendLease of an expired lease: %v, want ErrLeaseLost", err)
	}
	if err := s.ExtendLease(c, &madspark.WorkerLease{ID: "w-a"}, time.Hour); !errors.Is(err, madspark.ErrLeaseLost) {
		t.Errorf("ExtendLease of a dropped lease: %v, want ErrLeaseLost", err)
	}
	ls, _ = s.Leases(c)
	for _, l := range ls {
		if l.ID == "w-a" || (l.ID == "w-e" && !l.Expired) {
			t.Errorf("after refused extensions: %+v", ls)
		}
	}
}
