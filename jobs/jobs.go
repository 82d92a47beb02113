// Package jobs is the durable job queue of runs, on River
// (github.com/riverqueue/river) in the same database as the runs: a SQLite
// file for one machine, PostgreSQL for many.
//
// Enqueue records a run as queued and gives River a job for it; a worker
// (madspark worker, madspark serve, or madspark batch in-process) takes the
// job and runs the pipeline through the registry, opening the run as
// engine.Resume does, so a job that is run again after a crash replays its
// finished steps from the journal and pays only for the others. Cancel stops
// a queued or running run.
//
// Queues are per provider: a run goes to the queue named after the provider
// that enqueued it, and a worker works the queue of its own provider with at
// most Config.Concurrency runs at once, so that a rate-limited API is not
// flooded (the limit is per worker process).
//
// # Rescue
//
// River gives a job back to the queue only once it has been running for
// RescueStuckJobsAfter (an hour by default), which would leave the runs of a
// dead worker waiting that long. So each worker holds a lease
// (madspark.LeaseStore) that it renews every LeaseTTL/3, and every worker
// looks, every LeaseTTL/3 or two seconds if sooner, for running jobs whose
// worker's lease expired or is gone, or whose worker was on this machine
// and is no longer alive: each is discarded and a new job for its run
// inserted, in one transaction that does nothing unless the job still runs
// the attempt the rescuer saw (so a job is rescued once, and a stalled
// worker that comes back cannot record its old attempt's end over the new
// one). A worker that starts does this first, so the runs of a server that
// died resume as soon as it starts again. River's own rescuer remains,
// after a day, as a backstop.
//
// A worker whose lease lapses (a renewal finds it gone or expired, or it
// could not renew it within LeaseTTL) stops working under it: its runs are
// cancelled without recording an outcome and handed back to the queue, and
// it takes a new lease under a new worker ID.
package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jonboulle/clockwork"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/propagation"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/proc"
)

// Kind is the River job kind of a run.
const Kind = "madspark_run"

// Defaults of Config.
const (
	DefaultLeaseTTL   = 15 * time.Second
	DefaultRunTimeout = time.Hour
)

// RunArgs are the arguments of a run's job: everything needed to work it,
// even if the run's record is missing (the process that enqueued it died
// between inserting the job and recording the run).
type RunArgs struct {
	RunID     string          `json:"run_id"`
	Pipeline  string          `json:"pipeline"`
	Params    json.RawMessage `json:"params"`
	Mode      string          `json:"mode"`
	Provider  string          `json:"provider"`
	Model     string          `json:"model"`
	CreatedAt time.Time       `json:"created_at"`
	Tags      []string        `json:"tags,omitempty"`
	// Timeout bounds the run; 0 means Config.RunTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// TraceParent is the W3C trace context of the request that queued the
	// run, so that the worker's spans join its trace; empty when it was
	// not traced.
	TraceParent string `json:"traceparent,omitempty"`
	// TraceState is the W3C tracestate that goes with TraceParent.
	TraceState string `json:"tracestate,omitempty"`
}

// traceContext is the W3C trace context propagator of job arguments.
var traceContext = propagation.TraceContext{}

// injectTrace records the trace context of ctx in a.
func (a *RunArgs) injectTrace(ctx context.Context) {
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	a.TraceParent, a.TraceState = c["traceparent"], c["tracestate"]
}

// extractTrace returns ctx continuing the trace recorded in a, if any.
func (a *RunArgs) extractTrace(ctx context.Context) context.Context {
	if a.TraceParent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": a.TraceParent, "tracestate": a.TraceState})
}

// Kind implements river.JobArgs.
func (RunArgs) Kind() string { return Kind }

// Store is what the queue keeps in the database beside River's tables.
type Store interface {
	madspark.RunStore
	madspark.BatchStore
	madspark.LeaseStore
}

// Config configures a Queue.
type Config struct {
	// Store keeps the runs, batches and worker leases. Required.
	Store Store
	// SQLite is the SQLite store's write pool (sqlite.DB.WritePool), or
	// Postgres the PostgreSQL store's pool (postgres.DB.Pool): River's
	// tables live in the same database as the store's. Exactly one.
	SQLite   *sql.DB
	Postgres *pgxpool.Pool
	// Registry knows the pipelines. Required.
	Registry *pipeline.Registry
	// Engine runs the jobs this process works, through its client stack,
	// and publishes the events of the runs (Engine.Events). Required.
	Engine *engine.Engine
	// Mode ("mock" or "live"), Provider and Model describe the runs this
	// process enqueues and the provider it calls; Provider names the queue
	// its runs go to and the queue it works. Provider is required.
	Mode, Provider, Model string
	// Concurrency is how many runs this process works at once; 0 means it
	// only enqueues.
	Concurrency int
	// LeaseTTL is how long a worker's lease lasts without renewal; 0 means
	// DefaultLeaseTTL. A dead worker's runs wait at most this long (less
	// when it ran on this machine).
	LeaseTTL time.Duration
	// RunTimeout bounds a run whose request sets no timeout; 0 means
	// DefaultRunTimeout.
	RunTimeout time.Duration
	// Logger receives the queue's and River's logs; nil discards.
	Logger *slog.Logger
	// Clock times the lease's renewals and expiry and the looks for lost
	// workers; nil means the real clock. Tests give a fake one and move
	// it on, so that no lease lapses because a loaded machine was slow.
	Clock clockwork.Clock
}

// riverClient is what the queue uses of a *river.Client, whatever its
// driver.
type riverClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	InsertMany(ctx context.Context, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	JobCancel(ctx context.Context, jobID int64) (*rivertype.JobRow, error)
}

// Queue is the job queue. It is safe for concurrent use. Create one with
// Open; a Queue that works jobs is started with Start and drained with Stop.
type Queue struct {
	cfg    Config
	logger *slog.Logger
	// client inserts, lists and cancels jobs; it is never started.
	client   riverClient
	executor func() riverdriver.Executor
	schema   string
	// byRunID is the JobList condition matching a job's run_id argument.
	byRunID string
	// workClient creates the River client that works jobs under a lease.
	workClient func(id string, w *runWorker) (riverClient, error)
	// fence runs fn in a transaction that holds job id, if the job is
	// still running the given attempt; ok reports whether it was.
	fence func(ctx context.Context, id int64, attempt int, fn func(tx fenceTx) error) (ok bool, err error)

	id   string // this process's first worker ID; later leases add a suffix
	host string // this process's machine and PID namespace, or ""

	mu       sync.Mutex
	cur      *generation // the lease this process works under, or nil
	draining bool
	leases   int // how many leases this process took

	stop    context.CancelFunc
	wg      sync.WaitGroup
	started bool
}

// generation is one lease of this process and the River client that works
// jobs under it: when the lease is lost, the client is stopped, its runs
// are stopped without recording an outcome, and a new generation, with a
// new worker ID, takes over.
type generation struct {
	id     string
	client riverClient
	lease  madspark.WorkerLease
	// deadline is when the lease may have expired, by this process's
	// clock: the start of its last successful renewal plus LeaseTTL.
	deadline time.Time
	lost     atomic.Bool // set when the lease is lost
	hard     atomic.Bool // set when Stop cancels running jobs
	// interrupted is set when Stop cancels them because the process is
	// stopping (the cause of Stop's context wraps
	// madspark.ErrInterrupted): their runs are recorded interrupted.
	interrupted atomic.Bool
}

// fenceTx is what fence gives its function: River's driver on the
// transaction, the job's metadata as locked, and an insertion of jobs in the
// transaction.
type fenceTx struct {
	exec     riverdriver.ExecutorTx
	metadata []byte
	insert   func(ctx context.Context, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// ErrFinished is wrapped by Cancel's error for a run that already finished.
var ErrFinished = errors.New("run already finished")

// ErrNotQueued is wrapped by Cancel's error for a run that the queue does
// not work (it runs in a command, which stops it).
var ErrNotQueued = errors.New("run is not worked by the queue")

// Open prepares the queue: it applies River's migrations (in a transaction
// that also serialises processes starting at once) and creates the River
// client. It starts nothing.
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	switch {
	case cfg.Store == nil || cfg.Registry == nil || cfg.Engine == nil:
		return nil, errors.New("jobs: Store, Registry and Engine are required")
	case (cfg.SQLite == nil) == (cfg.Postgres == nil):
		return nil, errors.New("jobs: exactly one of SQLite and Postgres is required")
	case cfg.Provider == "":
		return nil, errors.New("jobs: Provider is required")
	case cfg.Concurrency < 0:
		return nil, fmt.Errorf("jobs: concurrency must not be negative, got %d", cfg.Concurrency)
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	q := &Queue{cfg: cfg, logger: cfg.Logger, host: proc.HostID()}
	if q.logger == nil {
		q.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	hostname, _ := os.Hostname()
	q.id = fmt.Sprintf("%s-%d-%s", hostname, os.Getpid(), randomSuffix())

	rc := &river.Config{
		ID:      q.id,
		Logger:  q.logger,
		Workers: river.NewWorkers(),
		// Runs are bounded by their own timeout (runWorker.Timeout).
		JobTimeout: -1,
		// Dead workers are found by their leases; River's rescuer is a
		// backstop only.
		RescueStuckJobsAfter: 24 * time.Hour,
		MaxAttempts:          10,
		// Jobs that the rescue makes available again are noticed by
		// polling, as River does not announce them (50 ms on SQLite).
		FetchPollInterval: 250 * time.Millisecond,
		// A finished run's slot is refilled at once: a fetch is one
		// indexed query, and runs last seconds, not milliseconds.
		FetchCooldown: 10 * time.Millisecond,
	}
	if err := river.AddWorkerSafely(rc.Workers, &runWorker{q: q}); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	var err error
	if cfg.SQLite != nil {
		err = q.openSQLite(ctx, rc)
	} else {
		err = q.openPostgres(ctx, rc)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return q, nil
}

// workConfig returns rc for a client that works this process's queue as
// worker id with w.
func (q *Queue) workConfig(rc *river.Config, id string, w *runWorker) (*river.Config, error) {
	wc := *rc
	wc.ID, wc.Workers = id, river.NewWorkers()
	if err := river.AddWorkerSafely(wc.Workers, w); err != nil {
		return nil, err
	}
	wc.Queues = map[string]river.QueueConfig{q.cfg.Provider: {MaxWorkers: q.cfg.Concurrency}}
	return &wc, nil
}

func (q *Queue) openSQLite(ctx context.Context, rc *river.Config) error {
	// SQLite announces no new jobs, so a free slot waits for the next
	// poll: a short interval keeps a batch's waves close together (one
	// indexed query of a local file each time).
	rc.FetchPollInterval = 50 * time.Millisecond
	drv := riversqlite.New(q.cfg.SQLite)
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: q.logger})
	if err != nil {
		return err
	}
	// All of River's migrations in one transaction: SQLite's DDL is
	// transactional, and the store's write pool begins transactions
	// IMMEDIATE, so processes migrating at once take turns. (MigrateTx is
	// deprecated for PostgreSQL, where one migration uses an enum value an
	// earlier one adds; that does not arise in SQLite.)
	tx, err := q.cfg.SQLite.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	//lint:ignore SA1019 see above: one transaction is what makes concurrent starts safe on SQLite
	if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	c, err := river.NewClient(drv, rc)
	if err != nil {
		return err
	}
	q.client, q.executor = c, c.Driver().GetExecutor
	q.byRunID = `json_extract(args, '$.run_id') = @run_id`
	q.workClient = func(id string, w *runWorker) (riverClient, error) {
		wc, err := q.workConfig(rc, id, w)
		if err != nil {
			return nil, err
		}
		return river.NewClient(drv, wc)
	}
	q.fence = func(ctx context.Context, id int64, attempt int, fn func(tx fenceTx) error) (bool, error) {
		// The write pool's transactions begin IMMEDIATE: the job cannot
		// change until this one ends.
		tx, err := q.cfg.SQLite.BeginTx(ctx, nil)
		if err != nil {
			return false, err
		}
		defer func() { _ = tx.Rollback() }()
		var (
			state string
			att   int
			meta  []byte
		)
		err = tx.QueryRowContext(ctx, `SELECT state, attempt, json(metadata) FROM river_job WHERE id = ?`, id).Scan(&state, &att, &meta)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if state != string(rivertype.JobStateRunning) || att != attempt {
			return false, nil
		}
		insert := func(ctx context.Context, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
			return c.InsertManyTx(ctx, tx, params)
		}
		if err := fn(fenceTx{exec: drv.UnwrapExecutor(tx), metadata: meta, insert: insert}); err != nil {
			return false, err
		}
		return true, tx.Commit()
	}
	return nil
}

func (q *Queue) openPostgres(ctx context.Context, rc *river.Config) error {
	pool := q.cfg.Postgres
	// River's tables go in the store's schema, and River names its
	// notification channels after it, so that installations in several
	// schemas of one database do not hear each other.
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&q.schema); err != nil {
		return fmt.Errorf("current schema: %w", err)
	}
	rc.Schema = q.schema
	drv := riverpgxv5.New(pool)
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: q.logger, Schema: q.schema})
	if err != nil {
		return err
	}
	// River's migrations cannot all run in one transaction (one adds an
	// enum value that a later one uses), so processes starting at once
	// take turns under a session lock, held on a connection of its own.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	const lock = `hashtextextended('madspark/jobs river migrate ' || current_schema(), 0)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+lock+`)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	_, merr := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+lock+`)`); err != nil {
		conn.Conn().Close(context.Background()) // closing the session releases the lock
	}
	if merr != nil {
		return fmt.Errorf("migrate: %w", merr)
	}
	c, err := river.NewClient(drv, rc)
	if err != nil {
		return err
	}
	q.client, q.executor = c, c.Driver().GetExecutor
	q.byRunID = `args->>'run_id' = @run_id`
	q.workClient = func(id string, w *runWorker) (riverClient, error) {
		wc, err := q.workConfig(rc, id, w)
		if err != nil {
			return nil, err
		}
		return river.NewClient(drv, wc)
	}
	table := pgx.Identifier{q.schema, "river_job"}.Sanitize()
	q.fence = func(ctx context.Context, id int64, attempt int, fn func(tx fenceTx) error) (bool, error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return false, err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		var (
			state string
			att   int
			meta  []byte
		)
		err = tx.QueryRow(ctx, `SELECT state::text, attempt, metadata FROM `+table+` WHERE id = $1 FOR UPDATE`, id).Scan(&state, &att, &meta)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if state != string(rivertype.JobStateRunning) || att != attempt {
			return false, nil
		}
		insert := func(ctx context.Context, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
			return c.InsertManyTx(ctx, tx, params)
		}
		if err := fn(fenceTx{exec: drv.UnwrapExecutor(tx), metadata: meta, insert: insert}); err != nil {
			return false, err
		}
		return true, tx.Commit(ctx)
	}
	return nil
}

// WorkerID returns the ID this process has as a worker: the ID of its
// current lease, which changes when a lease is lost and another taken.
func (q *Queue) WorkerID() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cur != nil {
		return q.cur.id
	}
	return q.id
}

// Request asks for a run.
type Request struct {
	Pipeline string
	// Params are the pipeline's parameters as JSON, decoded strictly by
	// the registry (pipeline.Registry.Decode).
	Params json.RawMessage
	// Timeout bounds the run; 0 means Config.RunTimeout.
	Timeout time.Duration
	// Tags label the run (madspark.Run.Tags).
	Tags []string
}

// Enqueue records a run of req as queued, gives the queue a job for it, and
// returns the run's record. Invalid parameters are a *pipeline.ParamsError
// and an unknown pipeline wraps pipeline.ErrUnknown, before anything is
// stored.
func (q *Queue) Enqueue(ctx context.Context, req Request) (*madspark.Run, error) {
	runs, err := q.EnqueueMany(ctx, []Request{req})
	if err != nil {
		return nil, err
	}
	return runs[0], nil
}

// EnqueueMany is Enqueue for many requests, with one insertion of their
// jobs. If any request is invalid, nothing is enqueued and the error names
// its index.
func (q *Queue) EnqueueMany(ctx context.Context, reqs []Request) ([]*madspark.Run, error) {
	recs := make([]*madspark.Run, len(reqs))
	params := make([]river.InsertManyParams, len(reqs))
	for i, req := range reqs {
		p, err := q.cfg.Registry.Decode(req.Pipeline, req.Params)
		if err != nil {
			if len(reqs) > 1 {
				return nil, fmt.Errorf("jobs: request %d: %w", i, err)
			}
			return nil, fmt.Errorf("jobs: %w", err)
		}
		if req.Timeout < 0 {
			return nil, fmt.Errorf("jobs: request %d: timeout must not be negative", i)
		}
		rec, err := q.cfg.Engine.NewRecord(engine.RunInfo{Pipeline: req.Pipeline, Mode: q.cfg.Mode, Provider: q.cfg.Provider, Model: q.cfg.Model, Params: p, Tags: req.Tags,
			Subject: q.cfg.Registry.Subject(req.Pipeline, p)}, madspark.RunQueued)
		if err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
		recs[i] = rec
		args := RunArgs{RunID: rec.ID, Pipeline: rec.Pipeline, Params: rec.Params, Mode: rec.Mode, Provider: rec.Provider,
			Model: rec.Model, CreatedAt: rec.CreatedAt, Tags: rec.Tags, Timeout: req.Timeout}
		args.injectTrace(ctx)
		params[i] = river.InsertManyParams{Args: args, InsertOpts: &river.InsertOpts{Queue: q.cfg.Provider}}
	}
	if len(reqs) == 0 {
		return recs, nil
	}
	// The jobs first: a job whose run is not recorded yet records it when
	// it is worked, while a run recorded without a job would wait forever.
	res, err := q.client.InsertMany(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("jobs: enqueue: %w", err)
	}
	for i, rec := range recs {
		if err := q.cfg.Store.CreateRun(ctx, rec); err != nil {
			if _, gerr := q.cfg.Store.Run(ctx, rec.ID); gerr == nil {
				continue // a worker was quicker and recorded it from the job
			}
			// Take back what was enqueued, so that nothing runs unseen.
			for _, r := range res[i:] {
				_, _ = q.client.JobCancel(context.WithoutCancel(ctx), r.Job.ID)
			}
			return nil, fmt.Errorf("jobs: record run %s: %w", rec.ID, err)
		}
		q.publish(ctx, &madspark.Event{RunID: rec.ID, Type: madspark.EventProgress, Stage: "queued", Message: "waiting for a worker"})
	}
	return recs, nil
}

// publish sends a run event, if the engine has a publisher; a failure is
// logged.
func (q *Queue) publish(ctx context.Context, e *madspark.Event) {
	if q.cfg.Engine.Events == nil {
		return
	}
	if err := q.cfg.Engine.Events.Publish(context.WithoutCancel(ctx), e); err != nil {
		q.logger.Warn("could not publish a run event", "run", e.RunID, "err", err)
	}
}

// ErrNotResumable is wrapped by Resume's error for a run that is not
// failed, interrupted or cancelled: it succeeded, or is queued or running.
var ErrNotResumable = errors.New("run cannot be resumed")

// Resume gives the queue a job that resumes run runID, which failed, was
// interrupted (its process is gone) or was cancelled, and records it as
// queued; a worker
// replays its finished steps from the journal and runs the rest. Any other
// status gives an error wrapping ErrNotResumable (with the status), a
// missing run one wrapping madspark.ErrNotFound.
func (q *Queue) Resume(ctx context.Context, runID string) (*madspark.Run, error) {
	rec, err := q.cfg.Store.Run(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("jobs: resume: %w", err)
	}
	if !rec.Status.Resumable() {
		return rec, fmt.Errorf("jobs: resume run %s: %w: it is %s", runID, ErrNotResumable, rec.Status)
	}
	if _, err := q.cfg.Registry.Get(rec.Pipeline); err != nil {
		return rec, fmt.Errorf("jobs: resume run %s: %w", runID, err)
	}
	// Queued first: a worker skips the job of a run that is failed.
	ok, err := q.cfg.Store.SetRunStatus(ctx, runID, madspark.RunQueued, rec.Status)
	if err != nil {
		return nil, fmt.Errorf("jobs: resume: %w", err)
	}
	if !ok {
		return rec, fmt.Errorf("jobs: resume run %s: %w: its status changed meanwhile", runID, ErrNotResumable)
	}
	args := RunArgs{RunID: rec.ID, Pipeline: rec.Pipeline, Params: rec.Params, Mode: rec.Mode, Provider: rec.Provider,
		Model: rec.Model, CreatedAt: rec.CreatedAt, Tags: rec.Tags}
	args.injectTrace(ctx)
	if _, err := q.client.InsertMany(ctx, []river.InsertManyParams{{Args: args, InsertOpts: &river.InsertOpts{Queue: q.cfg.Provider}}}); err != nil {
		// Put the run back as it was, so that it can be resumed later.
		if ferr := q.cfg.Store.FinishRun(context.WithoutCancel(ctx), rec); ferr != nil {
			q.logger.Warn("could not restore the status of a run that was not resumed", "run", runID, "err", ferr)
		}
		return nil, fmt.Errorf("jobs: resume run %s: %w", runID, err)
	}
	rec.Status, rec.Error, rec.FinishedAt = madspark.RunQueued, "", time.Time{}
	q.publish(ctx, &madspark.Event{RunID: rec.ID, Type: madspark.EventProgress, Stage: "queued", Message: "resuming: waiting for a worker"})
	return rec, nil
}

// jobsOf returns the jobs of run runID that are not finalized.
func (q *Queue) jobsOf(ctx context.Context, runID string) ([]*rivertype.JobRow, error) {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Kinds(Kind).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled).
		Where(q.byRunID, river.NamedArgs{"run_id": runID}).First(10))
	if err != nil {
		return nil, fmt.Errorf("jobs: jobs of run %s: %w", runID, err)
	}
	return res.Jobs, nil
}

// Owned reports whether the queue has an unfinished job for run runID, so
// that nothing but a worker should run it.
func (q *Queue) Owned(ctx context.Context, runID string) (bool, error) {
	jobs, err := q.jobsOf(ctx, runID)
	return len(jobs) > 0, err
}

// Cancel cancels run runID. A queued run is cancelled at once; a running
// one is told to stop and ends cancelled as soon as its worker notices,
// within seconds. It returns the run's status after the call: cancelled, or
// running while its worker stops it. A finished run gives an error wrapping
// ErrFinished, a run the queue does not work (it runs in a command) one
// wrapping ErrNotQueued, a missing run one wrapping madspark.ErrNotFound.
func (q *Queue) Cancel(ctx context.Context, runID string) (madspark.RunStatus, error) {
	rec, err := q.cfg.Store.Run(ctx, runID)
	if err != nil {
		return "", fmt.Errorf("jobs: cancel: %w", err)
	}
	if rec.Status.Final() {
		return rec.Status, fmt.Errorf("jobs: cancel run %s: %w (%s)", runID, ErrFinished, rec.Status)
	}
	jobs, err := q.jobsOf(ctx, runID)
	if err != nil {
		return "", err
	}
	if len(jobs) == 0 {
		if rec.Status != madspark.RunQueued && rec.Status != madspark.RunInterrupted {
			return rec.Status, fmt.Errorf("jobs: cancel run %s: %w", runID, ErrNotQueued)
		}
		// A queued run without a job (its job was lost), or an
		// interrupted one: nothing runs it.
		if err := q.cfg.Engine.Fail(ctx, runID, fmt.Errorf("%w by request", madspark.ErrCancelled)); err != nil {
			return "", fmt.Errorf("jobs: cancel: %w", err)
		}
		return madspark.RunCancelled, nil
	}
	status := madspark.RunCancelled
	for _, j := range jobs {
		row, err := q.client.JobCancel(ctx, j.ID)
		if err != nil {
			return "", fmt.Errorf("jobs: cancel run %s: %w", runID, err)
		}
		if row.State == rivertype.JobStateRunning {
			status = madspark.RunRunning // its worker records the cancellation
		}
	}
	if status == madspark.RunCancelled {
		if err := q.cfg.Engine.Fail(ctx, runID, fmt.Errorf("%w by request", madspark.ErrCancelled)); err != nil {
			return "", fmt.Errorf("jobs: cancel: %w", err)
		}
	}
	return status, nil
}
