package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/sqlite"
)

// Registry registers every built-in pipeline, with its dependencies from
// the app, the eval, and the pipeline files of dir (none when empty). The
// queue's workers, batches, resume and the API find pipelines here. A
// problem with any file of dir refuses them all.
func (a *App) Registry(dir string) (*pipeline.Registry, error) {
	reg, err := a.builtins()
	if err != nil {
		return nil, err
	}
	if err := a.registerDir(reg, dir); err != nil {
		return nil, err
	}
	return reg, nil
}

// ServeRegistry is Registry for a server: the good files of dir are
// registered, and each file that is not (its problems, or a name another
// pipeline has) is logged and returned with its problems, so that one
// broken file does not keep the others from being served.
func (a *App) ServeRegistry(dir string) (*pipeline.Registry, []api.BrokenPipeline, error) {
	reg, err := a.builtins()
	if err != nil || dir == "" {
		return reg, nil, err
	}
	ps, probs, err := flow.LoadEach(dir)
	if err != nil {
		return nil, nil, InputError{fmt.Errorf("--pipelines: %w", err)}
	}
	for _, p := range ps {
		if err := reg.Register(p.Definition()); err != nil {
			probs = append(probs, flow.Problem{File: p.File, Line: 1, Msg: err.Error()})
		}
	}
	// Each file's problems, named as in the directory.
	byFile := map[string]flow.Problems{}
	var files []string
	for _, p := range probs {
		p.File = filepath.Base(p.File)
		if _, ok := byFile[p.File]; !ok {
			files = append(files, p.File)
		}
		byFile[p.File] = append(byFile[p.File], p)
	}
	var broken []api.BrokenPipeline
	for _, f := range files {
		ps := byFile[f]
		b := api.BrokenPipeline{File: f, Error: ps.Error()}
		for _, p := range ps {
			b.Problems = append(b.Problems, p.String())
		}
		a.cfg.Logger.Warn("pipeline file not served", "dir", dir, "file", f, "err", b.Error)
		broken = append(broken, b)
	}
	return reg, broken, nil
}

// builtins registers every built-in pipeline and the eval.
func (a *App) builtins() (*pipeline.Registry, error) {
	reg := pipeline.NewRegistry()
	limit, err := promptLimit(a.getenv)
	if err != nil {
		return nil, err
	}
	reg.LimitPrompt(limit)
	count, err := debate.NewTokenCounter()
	if err != nil {
		return nil, err
	}
	for _, def := range []func() (pipeline.Definition, error){
		spark.Definition,
		func() (pipeline.Definition, error) { return chaos.Definition(a.Store) },
		func() (pipeline.Definition, error) { return debate.Definition(count, a.webSearch(), a.cfg.Logger) },
		func() (pipeline.Definition, error) { return assess.Definition(a.assessConfig()) },
		func() (pipeline.Definition, error) {
			font, err := PDFFont(a.cfg.Getenv)
			if err != nil {
				return pipeline.Definition{}, err
			}
			return proposal.Definition(a.proposalSources(), a.cfg.Logger, font)
		},
		func() (pipeline.Definition, error) {
			return eval.Definition(eval.Deps{Registry: reg, Engine: a.Engine})
		},
	} {
		d, err := def()
		if err != nil {
			return nil, err
		}
		if err := reg.Register(d); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// registerDir registers every pipeline file in dir into reg; the problems
// of the files are told, one per line, and refuse them all.
func (a *App) registerDir(reg *pipeline.Registry, dir string) error {
	if dir == "" {
		return nil
	}
	ps, err := flow.LoadDir(dir)
	if err != nil {
		return InputError{fmt.Errorf("--pipelines: %w", TellProblems(a.cfg.Notices, err))}
	}
	for _, p := range ps {
		if err := reg.Register(p.Definition()); err != nil {
			return InputError{fmt.Errorf("--pipelines: %s: %w", input.Show(p.File), err)}
		}
	}
	return nil
}

// TellProblems writes each problem of pipeline files to w on its own line
// when err has more than one, and returns the one-line error to end with:
// err itself, or how many problems were told.
func TellProblems(w io.Writer, err error) error {
	var ps flow.Problems
	if !errors.As(err, &ps) || len(ps) < 2 {
		return err
	}
	where := ps[0].File
	for _, p := range ps {
		fmt.Fprintln(w, p)
		if p.File != where {
			where = "pipeline files"
		}
	}
	return fmt.Errorf("%s: %d problems, each on its line above", where, len(ps))
}

// Queue opens the job queue in the app's database, River's tables beside
// the store's. concurrency is how many runs this process works at once
// (0: it only enqueues).
func (a *App) Queue(ctx context.Context, reg *pipeline.Registry, concurrency int, lease time.Duration) (*jobs.Queue, error) {
	if lease > 0 && concurrency > 0 {
		// The runs this process works are leased as long as the process
		// is: when it dies, other workers wait that long for its runs,
		// not the engine's default.
		a.Engine.LeaseTTL = lease
	}
	cfg := jobs.Config{
		Store: a.Store, Registry: reg, Engine: a.Engine,
		Mode: a.Info.Mode(), Provider: a.Info.Name, Model: a.Info.Model,
		Concurrency: concurrency, LeaseTTL: lease, Logger: a.cfg.Logger,
	}
	switch db := a.Store.(type) {
	case *sqlite.DB:
		cfg.SQLite = db.WritePool()
	case *postgres.DB:
		cfg.Postgres = db.Pool()
	default:
		return nil, fmt.Errorf("the job queue needs a SQLite or PostgreSQL store, not %T", a.Store)
	}
	q, err := jobs.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the job queue: %w", err)
	}
	return q, nil
}

// WorkerOptions are the settings of a process that works jobs.
type WorkerOptions struct {
	// MaxConcurrent is how many runs it works at once (0: the
	// provider's concurrency).
	MaxConcurrent int
	// Lease is how long other workers wait before taking over its runs
	// if it dies.
	Lease time.Duration
	// Drain is how long running runs may finish when it stops.
	Drain time.Duration
}

// Check checks the options.
func (o WorkerOptions) Check() error {
	if o.Lease < time.Second {
		return Inputf("--lease must be at least 1s, got %s", o.Lease)
	}
	if o.Drain < 0 {
		return Inputf("--drain-timeout must not be negative, got %s", o.Drain)
	}
	return nil
}

// Worker is the app's queue worked in this process.
type Worker struct {
	Queue *jobs.Queue
	app   *App
}

// StartWorker starts working the queue of the app's provider in this
// process, and tells so.
func (a *App) StartWorker(ctx context.Context, reg *pipeline.Registry, o WorkerOptions) (*Worker, error) {
	n, err := Concurrency(a.cfg.Getenv, a.Info.Name, o.MaxConcurrent, "--max-concurrent")
	if err != nil {
		return nil, err
	}
	q, err := a.Queue(ctx, reg, n, o.Lease)
	if err != nil {
		return nil, err
	}
	if err := q.Start(ctx); err != nil {
		return nil, err
	}
	a.notice("worker %s working the %s queue (%s/%s, %s; at most %d runs at once)",
		q.WorkerID(), a.Info.Name, a.Info.Name, a.Info.Model, a.Info.Mode(), n)
	return &Worker{Queue: q, app: a}, nil
}

// Interrupt stops the worker at once because its process is stopping:
// cause, the cause of the command's context's end, wraps
// madspark.ErrInterrupted. Its running runs are recorded interrupted and
// stay in the queue, for the next worker to resume.
func (w *Worker) Interrupt(cause error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if err := w.Queue.Stop(ctx); err != nil {
		w.app.cfg.Logger.Warn("worker did not stop cleanly", "err", err)
	}
}

// Stop drains the worker: running runs may finish for drain (a Ctrl-C or
// SIGTERM meanwhile cuts that short), then go back to the queue.
func (w *Worker) Stop(drain time.Duration) {
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-dctx.Done():
		}
	}()
	if err := w.Queue.Stop(dctx); err != nil {
		w.app.cfg.Logger.Warn("worker did not stop cleanly", "err", err)
	}
}
