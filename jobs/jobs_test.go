package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/postgres/pgtest"
	"github.com/madspark/madspark/store/sqlite"
)

// backend is a database the queue runs on.
type backend struct {
	name string
	open func(t *testing.T) *db
}

// db is one handle on a backend's database, as one process has.
type db struct {
	madspark.Store
	cfg func(*jobs.Config)
	// reopen opens another handle on the same database.
	reopen func(t *testing.T) *db
	// exec gives River's driver for direct changes.
	exec func() riverdriver.Executor
	// list lists every job.
	list func(t *testing.T) []*rivertype.JobRow
}

// lister lists jobs with a River client on the same database.
func lister[TTx any](drv riverdriver.Driver[TTx]) func(t *testing.T) []*rivertype.JobRow {
	return func(t *testing.T) []*rivertype.JobRow {
		t.Helper()
		c, err := river.NewClient(drv, &river.Config{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.JobList(context.Background(), river.NewJobListParams().First(10000))
		if err != nil {
			t.Fatal(err)
		}
		return res.Jobs
	}
}

func sqliteDB(t *testing.T, path string) *db {
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &db{Store: s, cfg: func(c *jobs.Config) { c.SQLite = s.WritePool() },
		reopen: func(t *testing.T) *db { return sqliteDB(t, path) },
		exec:   func() riverdriver.Executor { return riversqlite.New(s.WritePool()).GetExecutor() },
		list:   lister(riversqlite.New(s.WritePool()))}
}

func postgresDB(t *testing.T, url string) *db {
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &db{Store: s, cfg: func(c *jobs.Config) { c.Postgres = s.Pool() },
		reopen: func(t *testing.T) *db { return postgresDB(t, url) },
		exec:   func() riverdriver.Executor { return riverpgxv5.New(s.Pool()).GetExecutor() },
		list:   lister(riverpgxv5.New(s.Pool()))}
}

var backends = []backend{
	{"sqlite", func(t *testing.T) *db { return sqliteDB(t, filepath.Join(t.TempDir(), "m.db")) }},
	{"postgres", func(t *testing.T) *db { return postgresDB(t, pgtest.URL(t)) }},
}

// counter counts the model calls of one worker and can hold them back.
type counter struct {
	next  llm.Client
	calls atomic.Int32
	// gate, when set, is waited on by every call after the first after.
	after int32
	gate  chan struct{}
}

func (c *counter) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if n := c.calls.Add(1); c.gate != nil && n > c.after {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.next.Generate(ctx, req)
}

func newMock(latency time.Duration) *counter {
	return &counter{next: mock.New(spark.MockResponders(), mock.WithLatency(latency))}
}

type worker struct {
	q      *jobs.Queue
	llm    *counter
	hub    *events.Hub
	engine *engine.Engine
}

// open opens a queue on d working at most concurrency runs with client.
func open(t *testing.T, d *db, concurrency int, client *counter, mod ...func(*jobs.Config)) *worker {
	t.Helper()
	reg := pipeline.NewRegistry()
	sp, err := spark.Definition()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chaos.Definition(d.Store)
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []pipeline.Definition{sp, ch} {
		if err := reg.Register(def); err != nil {
			t.Fatal(err)
		}
	}
	if client == nil {
		client = newMock(0)
	}
	hub := events.New(d.Store, events.Options{PollInterval: 20 * time.Millisecond})
	t.Cleanup(func() { hub.Close() })
	e := &engine.Engine{Store: d.Store, Client: client, Events: hub}
	cfg := jobs.Config{Store: d.Store, Registry: reg, Engine: e, Mode: "mock", Provider: "mock", Model: "mock-1", Concurrency: concurrency}
	d.cfg(&cfg)
	for _, m := range mod {
		m(&cfg)
	}
	q, err := jobs.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &worker{q: q, llm: client, hub: hub, engine: e}
}

func (w *worker) start(t *testing.T) {
	t.Helper()
	if err := w.q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.q.Stop(ctx)
	})
}

func sparkReq(topic string) jobs.Request {
	return jobs.Request{Pipeline: "spark", Params: json.RawMessage(fmt.Sprintf(`{"topic":%q,"num_candidates":3,"num_top_candidates":2}`, topic))}
}

// waitStatus waits until run id has one of the statuses.
func waitStatus(t *testing.T, s madspark.RunStore, id string, d time.Duration, want ...madspark.RunStatus) *madspark.Run {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r, err := s.Run(context.Background(), id)
		if err == nil {
			for _, w := range want {
				if r.Status == w {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s after %s, want %v (err %v)", id, r.Status, d, want, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSteps waits until run id has n finished steps.
func waitSteps(t *testing.T, s madspark.RunStore, id string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		steps, _ := s.Steps(context.Background(), id)
		done := 0
		for _, st := range steps {
			if st.Status == madspark.StepDone {
				done++
			}
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s has %d finished steps, want %d", id, done, n)
		}
	}
}

// jobOf returns the latest job of run runID.
func jobOf(t *testing.T, d *db, runID string) *rivertype.JobRow {
	t.Helper()
	js := jobsOf(t, d, runID)
	if len(js) == 0 {
		t.Fatalf("no job for run %s", runID)
	}
	return js[len(js)-1]
}

// jobsOf returns the jobs of run runID, oldest first.
func jobsOf(t *testing.T, d *db, runID string) []*rivertype.JobRow {
	t.Helper()
	var out []*rivertype.JobRow
	for _, j := range d.list(t) {
		var a struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal(j.EncodedArgs, &a)
		if a.RunID == runID {
			out = append(out, j)
		}
	}
	return out
}

func TestEnqueueAndWork(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			w := open(t, d, 2, nil)
			ctx := context.Background()
			var ids []string
			for i := range 3 {
				rec, err := w.q.Enqueue(ctx, sparkReq(fmt.Sprintf("topic %d", i)))
				if err != nil {
					t.Fatal(err)
				}
				if rec.Status != madspark.RunQueued || rec.Pipeline != "spark" || rec.Provider != "mock" {
					t.Fatalf("enqueued %+v", rec)
				}
				got, _ := d.Run(ctx, rec.ID)
				if got.Status != madspark.RunQueued {
					t.Fatalf("stored as %s before any worker", got.Status)
				}
				ids = append(ids, rec.ID)
			}
			w.start(t)
			for _, id := range ids {
				r := waitStatus(t, d, id, 20*time.Second, madspark.RunSucceeded, madspark.RunFailed)
				if r.Status != madspark.RunSucceeded || r.Usage.LLMCalls != 6 || len(r.Result) == 0 {
					t.Fatalf("run %s: %+v", id, r)
				}
				// The final event follows the record.
				evs := waitFinalEvent(t, d, id)
				if len(evs) < 3 || evs[0].Stage != "queued" || !evs[len(evs)-1].Final() || evs[len(evs)-1].Type != madspark.EventResult {
					t.Fatalf("events of %s: %+v", id, evs)
				}
			}
			if n := w.llm.calls.Load(); n != 18 {
				t.Fatalf("%d model calls for 3 runs, want 18", n)
			}
			for _, id := range ids {
				waitJob(t, d, id, rivertype.JobStateCompleted)
			}
		})
	}
}

func waitFinalEvent(t *testing.T, d *db, runID string) []madspark.Event {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		evs, err := d.Events(context.Background(), runID, 0, 0)
		if err == nil && len(evs) > 0 && evs[len(evs)-1].Final() {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s has no final event: %+v (%v)", runID, evs, err)
		}
	}
}

func waitJob(t *testing.T, d *db, runID string, want rivertype.JobState) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if j := jobOf(t, d, runID); j.State == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("job of run %s is %s, want %s", runID, j.State, want)
		}
	}
}

func TestEnqueueRejectsBadParams(t *testing.T) {
	d := backends[0].open(t)
	w := open(t, d, 0, nil)
	ctx := context.Background()
	_, err := w.q.Enqueue(ctx, jobs.Request{Pipeline: "spark", Params: json.RawMessage(`{"topic":"x","num_candidates":"many"}`)})
	var pe *pipeline.ParamsError
	if !errors.As(err, &pe) || pe.Field != "num_candidates" {
		t.Fatalf("err = %v, want a ParamsError on num_candidates", err)
	}
	if _, err := w.q.Enqueue(ctx, jobs.Request{Pipeline: "proposal"}); !errors.Is(err, pipeline.ErrUnknown) {
		t.Fatalf("unknown pipeline: %v", err)
	}
	_, err = w.q.EnqueueMany(ctx, []jobs.Request{sparkReq("fine"), {Pipeline: "spark", Params: json.RawMessage(`{"topic":""}`)}})
	if err == nil || !strings.Contains(err.Error(), "request 1") {
		t.Fatalf("EnqueueMany with a bad request: %v", err)
	}
	if runs, _ := d.Runs(ctx, madspark.RunFilter{}); len(runs) != 0 {
		t.Fatalf("%d runs stored for rejected requests", len(runs))
	}
}

func TestCancel(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			ctx := context.Background()

			// Queued: cancelled at once, and never worked.
			enq := open(t, d, 0, nil)
			queued, err := enq.q.Enqueue(ctx, sparkReq("never run"))
			if err != nil {
				t.Fatal(err)
			}
			if st, err := enq.q.Cancel(ctx, queued.ID); err != nil || st != madspark.RunCancelled {
				t.Fatalf("Cancel queued = %s, %v", st, err)
			}
			r, _ := d.Run(ctx, queued.ID)
			if r.Status != madspark.RunCancelled || !strings.Contains(r.Error, "cancelled") {
				t.Fatalf("cancelled run = %+v", r)
			}
			evs := waitFinalEvent(t, d, queued.ID)
			if last := evs[len(evs)-1]; last.Type != madspark.EventError || string(last.Data) != `{"status":"cancelled"}` {
				t.Fatalf("last event %+v", last)
			}
			if _, err := enq.q.Cancel(ctx, queued.ID); !errors.Is(err, jobs.ErrFinished) {
				t.Fatalf("cancelling twice: %v", err)
			}

			// Running: the worker's context is cancelled, the run ends
			// cancelled, and the steps after it are not run.
			slow := newMock(0)
			slow.after, slow.gate = 2, make(chan struct{})
			w := open(t, d.reopen(t), 1, slow)
			running, err := enq.q.Enqueue(ctx, sparkReq("stopped midway"))
			if err != nil {
				t.Fatal(err)
			}
			w.start(t)
			waitSteps(t, d, running.ID, 2)
			if st, err := enq.q.Cancel(ctx, running.ID); err != nil || st != madspark.RunRunning {
				t.Fatalf("Cancel running = %s, %v", st, err)
			}
			r = waitStatus(t, d, running.ID, 10*time.Second, madspark.RunCancelled, madspark.RunFailed, madspark.RunSucceeded)
			if r.Status != madspark.RunCancelled {
				t.Fatalf("cancelled running run ended %s: %s", r.Status, r.Error)
			}
			// generate and evaluate finished; advocate ∥ skeptic were
			// cancelled; improve and re_evaluate never started.
			if n := slow.calls.Load(); n != 4 {
				t.Fatalf("%d model calls, want the 2 finished steps and the 2 cancelled", n)
			}
			waitJob(t, d, running.ID, rivertype.JobStateCancelled)
			time.Sleep(300 * time.Millisecond) // a worker would have taken the queued one by now
			if n := slow.calls.Load(); n != 4 {
				t.Fatalf("the cancelled queued run was worked: %d calls", n)
			}

			// Missing, and a run outside the queue.
			if _, err := enq.q.Cancel(ctx, "nope"); !errors.Is(err, madspark.ErrNotFound) {
				t.Fatalf("Cancel missing: %v", err)
			}
			cli, _ := enq.engine.Start(ctx, engine.RunInfo{Pipeline: "spark"}, nil)
			if _, err := enq.q.Cancel(ctx, cli.ID()); !errors.Is(err, jobs.ErrNotQueued) {
				t.Fatalf("Cancel a command's run: %v", err)
			}
		})
	}
}

// crashedRun leaves a run in the state a worker that died mid-run leaves
// it: its job running, attributed to worker ghost, two steps journaled.
func crashedRun(t *testing.T, d *db, enq *worker, topic, ghost string) *madspark.Run {
	t.Helper()
	ctx := context.Background()
	rec, err := enq.q.Enqueue(ctx, sparkReq(topic))
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.exec().JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{ClientID: ghost, MaxToLock: 1, Queue: "mock", MaxAttemptedBy: 100, Now: nil})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("take the job as %s: %v, %+v", ghost, err, res)
	}
	// Two steps finished, then the process died mid-step.
	// Its run's lease, which it stops renewing when it dies, is short,
	// as if it had expired by the time another worker looks.
	gate := &counter{next: mock.New(spark.MockResponders()), after: 2, gate: make(chan struct{})}
	e := &engine.Engine{Store: d.Store, Client: gate, LeaseTTL: 300 * time.Millisecond}
	cctx, cancel := context.WithCancel(ctx)
	run, err := e.Resume(cctx, rec.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := spark.DefaultParams()
	p.Topic, p.NumCandidates, p.NumTopCandidates = topic, 3, 2
	pipe, _ := spark.New()
	done := make(chan struct{})
	go func() { pipe.Run(cctx, run, p); close(done) }()
	waitSteps(t, d, rec.ID, 2)
	cancel()
	<-done
	return rec
}

func TestRescueLostWorker(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			ctx := context.Background()
			enq := open(t, d, 0, nil)

			// One dead worker whose lease expired, one on another machine
			// that is alive.
			lost := crashedRun(t, d, enq, "lost worker", "ghost-expired")
			if err := d.RenewLease(ctx, &madspark.WorkerLease{ID: "ghost-expired", Host: "elsewhere", PID: 1}, time.Millisecond); err != nil {
				t.Fatal(err)
			}
			busy := crashedRun(t, d, enq, "busy worker", "ghost-alive")
			if err := d.RenewLease(ctx, &madspark.WorkerLease{ID: "ghost-alive", Host: "elsewhere", PID: 1}, time.Hour); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)

			w := open(t, d.reopen(t), 2, newMock(0))
			w.start(t)
			r := waitStatus(t, d, lost.ID, 15*time.Second, madspark.RunSucceeded, madspark.RunFailed)
			if r.Status != madspark.RunSucceeded || r.Usage.LLMCalls != 6 {
				t.Fatalf("rescued run: %+v", r)
			}
			// The two journaled steps were not paid again.
			if n := w.llm.calls.Load(); n != 4 {
				t.Fatalf("the worker made %d calls for the rescued run, want 4", n)
			}
			evs, _ := d.Events(ctx, lost.ID, 0, 0)
			requeued := false
			for _, e := range evs {
				requeued = requeued || strings.Contains(e.Message, "worker ghost-expired lost")
			}
			if !requeued {
				t.Fatalf("no requeue event: %+v", evs)
			}
			// The live worker's job is left alone.
			if j := jobOf(t, d, busy.ID); j.State != rivertype.JobStateRunning {
				t.Fatalf("a live worker's job was taken: %s", j.State)
			}
			leases, _ := d.Leases(ctx)
			for _, l := range leases {
				if l.ID == "ghost-expired" {
					t.Fatal("the lost worker's lease is still there")
				}
			}
		})
	}
}

func TestRescueDeadProcessOnThisMachine(t *testing.T) {
	d := backends[0].open(t)
	ctx := context.Background()
	enq := open(t, d, 0, nil)
	// The job of a worker with a lease for an hour, on this machine, whose
	// process is gone: a restarted server must not wait for the lease.
	w := open(t, d.reopen(t), 1, newMock(0))
	var host string
	w.start(t)
	leases, _ := d.Leases(ctx)
	for _, l := range leases {
		if l.ID == w.q.WorkerID() {
			host = l.Host
		}
	}
	if host == "" {
		t.Skip("this platform cannot tell whether a process is alive")
	}
	if err := w.q.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rec := crashedRun(t, d, enq, "restart", "ghost-here")
	if err := d.RenewLease(ctx, &madspark.WorkerLease{ID: "ghost-here", Host: host, PID: 1 << 30}, time.Hour); err != nil {
		t.Fatal(err)
	}
	w2 := open(t, d.reopen(t), 1, newMock(0))
	start := time.Now()
	w2.start(t)
	r := waitStatus(t, d, rec.ID, 10*time.Second, madspark.RunSucceeded, madspark.RunFailed)
	if r.Status != madspark.RunSucceeded || w2.llm.calls.Load() != 4 {
		t.Fatalf("run %s with %d calls", r.Status, w2.llm.calls.Load())
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s: the dead process's lease was waited out", time.Since(start))
	}
}

func TestStopRequeuesRunningRuns(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			ctx := context.Background()
			slow := newMock(0)
			slow.after, slow.gate = 2, make(chan struct{})
			w := open(t, d, 1, slow)
			rec, err := w.q.Enqueue(ctx, sparkReq("drained"))
			if err != nil {
				t.Fatal(err)
			}
			w.start(t)
			waitSteps(t, d, rec.ID, 2)
			// The run cannot finish: draining gives up and requeues it.
			sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			if err := w.q.Stop(sctx); err != nil {
				t.Fatal(err)
			}
			if r, _ := d.Run(ctx, rec.ID); r.Status != madspark.RunQueued {
				t.Fatalf("after a hard stop the run is %s, want queued", r.Status)
			}
			if j := jobOf(t, d, rec.ID); j.State != rivertype.JobStateAvailable {
				t.Fatalf("job %s, want available", j.State)
			}
			if leases, _ := d.Leases(ctx); len(leases) != 0 {
				t.Fatalf("leases after Stop: %+v", leases)
			}
			next := open(t, d.reopen(t), 1, newMock(0))
			next.start(t)
			r := waitStatus(t, d, rec.ID, 10*time.Second, madspark.RunSucceeded, madspark.RunFailed)
			if r.Status != madspark.RunSucceeded || next.llm.calls.Load() != 4 {
				t.Fatalf("resumed run %s with %d calls, want succeeded with 4", r.Status, next.llm.calls.Load())
			}
		})
	}
}

func TestSoftStopWaitsForRuns(t *testing.T) {
	d := backends[0].open(t)
	ctx := context.Background()
	w := open(t, d, 2, newMock(30*time.Millisecond))
	rec, err := w.q.Enqueue(ctx, sparkReq("finished before exit"))
	if err != nil {
		t.Fatal(err)
	}
	w.start(t)
	waitSteps(t, d, rec.ID, 1)
	if err := w.q.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := d.Run(ctx, rec.ID); r.Status != madspark.RunSucceeded {
		t.Fatalf("after a drain the run is %s", r.Status)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	d := backends[0].open(t)
	ctx := context.Background()
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	sim := mock.New(spark.MockResponders(), mock.WithLatency(20*time.Millisecond))
	track := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		n := inFlight.Add(1)
		mu.Lock()
		if n > peak.Load() {
			peak.Store(n)
		}
		mu.Unlock()
		defer inFlight.Add(-1)
		return sim.Generate(ctx, req)
	})
	w := open(t, d, 2, &counter{next: track})
	var reqs []jobs.Request
	for i := range 6 {
		reqs = append(reqs, sparkReq(fmt.Sprintf("limited %d", i)))
	}
	runs, err := w.q.EnqueueMany(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	w.start(t)
	for _, r := range runs {
		waitStatus(t, d, r.ID, 20*time.Second, madspark.RunSucceeded)
	}
	// Two runs at once, each with at most two calls in flight
	// (advocate ∥ skeptic).
	if p := peak.Load(); p > 4 || p < 2 {
		t.Fatalf("peak of %d calls in flight with 2 runs at once", p)
	}
}

// TestRunRecordedFromJob: a process that died between inserting the job
// and recording the run leaves a job without a run; the worker records it.
func TestRunRecordedFromJob(t *testing.T) {
	d := backends[0].open(t)
	ctx := context.Background()
	client, err := river.NewClient(riversqlite.New(d.Store.(*sqlite.DB).WritePool()), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := open(t, d, 1, nil) // migrates River's tables
	args := jobs.RunArgs{RunID: "orphan-1", Pipeline: "spark", Params: json.RawMessage(`{"topic":"orphan","num_candidates":2,"num_top_candidates":1}`),
		Mode: "mock", Provider: "mock", Model: "mock-1", CreatedAt: time.Now()}
	if _, err := client.Insert(ctx, args, &river.InsertOpts{Queue: "mock"}); err != nil {
		t.Fatal(err)
	}
	w.start(t)
	r := waitStatus(t, d, "orphan-1", 10*time.Second, madspark.RunSucceeded, madspark.RunFailed)
	if r.Status != madspark.RunSucceeded || r.Pipeline != "spark" || r.Mode != "mock" {
		t.Fatalf("orphan run: %+v", r)
	}
	// A job whose pipeline is unknown fails its run, once.
	args.RunID, args.Pipeline = "orphan-2", "nonesuch"
	if _, err := client.Insert(ctx, args, &river.InsertOpts{Queue: "mock"}); err != nil {
		t.Fatal(err)
	}
	r = waitStatus(t, d, "orphan-2", 10*time.Second, madspark.RunFailed)
	if !strings.Contains(r.Error, "unknown pipeline") {
		t.Fatalf("unknown pipeline: %+v", r)
	}
	waitJob(t, d, "orphan-2", rivertype.JobStateCancelled)
}

// TestSubscribeAcrossProcesses follows a run worked by another process.
func TestSubscribeAcrossProcesses(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			d := b.open(t)
			ctx := context.Background()
			api := open(t, d, 0, nil)
			w := open(t, d.reopen(t), 1, newMock(20*time.Millisecond))
			rec, err := api.q.Enqueue(ctx, sparkReq("watched"))
			if err != nil {
				t.Fatal(err)
			}
			ch, err := api.hub.Subscribe(ctx, rec.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			w.start(t)
			var got []madspark.Event
			timeout := time.After(20 * time.Second)
		loop:
			for {
				select {
				case e, ok := <-ch:
					if !ok {
						break loop
					}
					got = append(got, e)
				case <-timeout:
					t.Fatalf("subscription did not end; got %d events", len(got))
				}
			}
			if len(got) < 5 || got[0].Stage != "queued" || got[len(got)-1].Type != madspark.EventResult {
				t.Fatalf("events = %+v", got)
			}
			for i, e := range got {
				if e.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
			var res spark.Result
			if err := json.Unmarshal(got[len(got)-1].Data, &res); err != nil || len(res.Candidates) != 2 {
				t.Fatalf("result event data: %v %s", err, got[len(got)-1].Data)
			}
		})
	}
}

// TestConcurrentOpen: processes that start at once on a new database apply
// River's migrations once, without tripping over each other.
func TestConcurrentOpen(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			first := b.open(t)
			handles := []*db{first}
			for range 3 {
				handles = append(handles, first.reopen(t))
			}
			var wg sync.WaitGroup
			errs := make([]error, len(handles))
			for i, d := range handles {
				wg.Go(func() {
					defer func() {
						if r := recover(); r != nil {
							errs[i] = fmt.Errorf("panic: %v", r)
						}
					}()
					cfg := jobs.Config{Store: d.Store, Registry: pipeline.NewRegistry(), Engine: &engine.Engine{Store: d.Store}, Provider: "mock"}
					d.cfg(&cfg)
					_, errs[i] = jobs.Open(context.Background(), cfg)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("open %d: %v", i, err)
				}
			}
			w := open(t, first, 1, nil)
			rec, err := w.q.Enqueue(context.Background(), sparkReq("after a concurrent start"))
			if err != nil {
				t.Fatal(err)
			}
			w.start(t)
			waitStatus(t, first, rec.ID, 10*time.Second, madspark.RunSucceeded)
		})
	}
}
