package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/postgres/pgtest"
	"github.com/madspark/madspark/store/sqlite"
)

// store is a full store that closes.
type store interface {
	events.Store
	CreateRun(ctx context.Context, r *madspark.Run) error
	FinishRun(ctx context.Context, r *madspark.Run) error
	Close() error
}

func openSQLite(t testing.TB, path string) store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openPostgres(t testing.TB, url string) store {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newRun(t testing.TB, s store) string {
	t.Helper()
	id := fmt.Sprintf("run-%d", time.Now().UnixNano())
	if err := s.CreateRun(context.Background(), &madspark.Run{ID: id, Pipeline: "spark", Status: madspark.RunRunning}); err != nil {
		t.Fatal(err)
	}
	return id
}

func progress(runID string, p int) *madspark.Event {
	return &madspark.Event{RunID: runID, Type: madspark.EventProgress, Stage: "s", Progress: p, Message: fmt.Sprint(p)}
}

func final(runID string) *madspark.Event {
	return &madspark.Event{RunID: runID, Type: madspark.EventResult, Stage: "done", Progress: 100, Data: json.RawMessage(`{"ok":true}`)}
}

func publish(t testing.TB, h *events.Hub, e *madspark.Event) {
	t.Helper()
	if err := h.Publish(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// collect reads ch until it is closed, failing after d.
func collect(t testing.TB, ch <-chan madspark.Event, d time.Duration) []madspark.Event {
	t.Helper()
	var got []madspark.Event
	timeout := time.After(d)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, e)
		case <-timeout:
			t.Fatalf("subscription not closed after %s; got %d events", d, len(got))
		}
	}
}

// next reads one event, failing after d.
func next(t testing.TB, ch <-chan madspark.Event, d time.Duration) madspark.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed early")
		}
		return e
	case <-time.After(d):
		t.Fatalf("no event within %s", d)
	}
	panic("unreachable")
}

func checkSeqs(t testing.TB, got []madspark.Event, from, to int64) {
	t.Helper()
	if len(got) != int(to-from+1) {
		t.Fatalf("got %d events, want seq %d..%d", len(got), from, to)
	}
	for i, e := range got {
		if e.Seq != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, from+int64(i))
		}
	}
}

func TestReplayThenLive(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "m.db"))
	h := events.New(s, events.Options{PollInterval: time.Hour}) // only the in-process path
	defer h.Close()
	run := newRun(t, s)
	for p := range 3 {
		publish(t, h, progress(run, p*10))
	}
	ch, err := h.Subscribe(context.Background(), run, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Replayed: 2 and 3.
	if e := next(t, ch, time.Second); e.Seq != 2 || e.Progress != 10 || e.Type != madspark.EventProgress {
		t.Fatalf("first replayed = %+v", e)
	}
	if e := next(t, ch, time.Second); e.Seq != 3 {
		t.Fatalf("second replayed = %+v", e)
	}
	// Live, without polling: delivered by the in-process path.
	publish(t, h, progress(run, 50))
	if e := next(t, ch, time.Second); e.Seq != 4 || e.Message != "50" {
		t.Fatalf("live = %+v", e)
	}
	publish(t, h, final(run))
	rest := collect(t, ch, time.Second)
	if len(rest) != 1 || rest[0].Seq != 5 || !rest[0].Final() || string(rest[0].Data) != `{"ok":true}` {
		t.Fatalf("after the final event: %+v", rest)
	}
	// A late subscriber replays everything and is closed at once.
	ch, err = h.Subscribe(context.Background(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, collect(t, ch, time.Second), 1, 5)
}

func TestSubscribeMissingRun(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "m.db"))
	h := events.New(s, events.Options{})
	defer h.Close()
	if _, err := h.Subscribe(context.Background(), "nope", 0); !errors.Is(err, madspark.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if err := h.Publish(context.Background(), progress("nope", 1)); !errors.Is(err, madspark.ErrNotFound) {
		t.Fatalf("publish to a missing run: %v", err)
	}
}

func TestCancelEndsSubscription(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "m.db"))
	h := events.New(s, events.Options{})
	defer h.Close()
	run := newRun(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.Subscribe(ctx, run, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if got := collect(t, ch, time.Second); len(got) != 0 {
		t.Fatalf("events after cancel: %+v", got)
	}
	// Closing the hub ends the others.
	ch, _ = h.Subscribe(context.Background(), run, 0)
	h.Close()
	collect(t, ch, time.Second)
}

func TestFinishedRunWithoutFinalEvent(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "m.db"))
	h := events.New(s, events.Options{})
	defer h.Close()
	run := newRun(t, s)
	publish(t, h, progress(run, 40))
	if err := s.FinishRun(context.Background(), &madspark.Run{ID: run, Status: madspark.RunFailed, Error: "stage evaluate: 500"}); err != nil {
		t.Fatal(err)
	}
	ch, err := h.Subscribe(context.Background(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, ch, time.Second)
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 0 || got[1].Type != madspark.EventError ||
		got[1].Message != "stage evaluate: 500" || string(got[1].Data) != `{"status":"failed"}` {
		t.Fatalf("events = %+v", got)
	}
}

func TestSlowSubscriberMissesNothing(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "m.db"))
	h := events.New(s, events.Options{PollInterval: time.Hour})
	defer h.Close()
	run := newRun(t, s)
	ch, err := h.Subscribe(context.Background(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	// More than the subscriber holds in memory, while it does not read.
	const n = 1100
	for i := range n {
		publish(t, h, progress(run, i%100))
	}
	publish(t, h, final(run))
	checkSeqs(t, collect(t, ch, 10*time.Second), 1, n+1)
}

// crossProcess publishes through one store handle and subscribes through
// another, as two processes sharing a database would.
func crossProcess(t *testing.T, a, b store, opts events.Options) {
	pub := events.New(a, opts)
	defer pub.Close()
	sub := events.New(b, opts)
	defer sub.Close()
	run := newRun(t, a)
	publish(t, pub, progress(run, 1))
	ch, err := sub.Subscribe(context.Background(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := next(t, ch, 5*time.Second); e.Seq != 1 {
		t.Fatalf("replayed %+v", e)
	}
	for p := 2; p <= 5; p++ {
		publish(t, pub, progress(run, p))
		if e := next(t, ch, 5*time.Second); e.Seq != int64(p) || e.Progress != p {
			t.Fatalf("live event %d = %+v", p, e)
		}
	}
	publish(t, pub, final(run))
	got := collect(t, ch, 5*time.Second)
	if len(got) != 1 || got[0].Seq != 6 || !got[0].Final() {
		t.Fatalf("final = %+v", got)
	}
}

func TestCrossProcessSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	crossProcess(t, openSQLite(t, path), openSQLite(t, path), events.Options{PollInterval: 20 * time.Millisecond})
}

func TestCrossProcessPostgres(t *testing.T) {
	url := pgtest.URL(t)
	// No polling to speak of: the events arrive by LISTEN/NOTIFY.
	crossProcess(t, openPostgres(t, url), openPostgres(t, url), events.Options{FallbackPoll: time.Hour})
}

// TestRelay: an event stored by a write of the caller's making is
// delivered like a published one, and one whose write fails is not.
func TestRelay(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "m.db"))
	h := events.New(s, events.Options{PollInterval: time.Hour}) // only the in-process path
	defer h.Close()
	run := newRun(t, s)
	ch, err := h.Subscribe(context.Background(), run, 0)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, h, progress(run, 10))
	failed := errors.New("the write failed")
	err = h.Relay(context.Background(), []*madspark.Event{progress(run, 20)}, func() error { return failed })
	if err != failed {
		t.Fatalf("Relay = %v, want the store's error as it is", err)
	}
	// A held event and the final one, stored by one write.
	held, end := progress(run, 30), final(run)
	stored := false
	if err := h.Relay(context.Background(), []*madspark.Event{held, end}, func() error {
		stored = true
		if err := s.AppendEvent(context.Background(), held); err != nil {
			return err
		}
		return s.AppendEvent(context.Background(), end)
	}); err != nil || !stored {
		t.Fatalf("Relay = %v (stored %v)", err, stored)
	}
	got := collect(t, ch, time.Second)
	checkSeqs(t, got, 1, 3)
	if got[0].Progress != 10 || got[1].Progress != 30 || !got[2].Final() {
		t.Fatalf("delivered %+v, want the progress events, then the final one, and not the one whose write failed", got)
	}
	if err := h.Relay(context.Background(), []*madspark.Event{progress(run, 40), progress("another", 50)}, func() error { return nil }); err == nil {
		t.Fatal("Relay of events of two runs: no error")
	}
}
