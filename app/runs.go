package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/export"
	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
)

// Runs lists the runs that filter selects, newest first, in the store
// the settings name; runs whose process is gone are marked interrupted
// first.
func Runs(ctx context.Context, getenv func(string) string, logger *slog.Logger, filter madspark.RunFilter) ([]*madspark.Run, error) {
	db, err := OpenStore(ctx, getenv)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := (&engine.Engine{Store: db, Logger: logger}).Interrupt(ctx); err != nil {
		logger.Warn("could not look for interrupted runs", "err", err)
	}
	return db.Runs(ctx, filter)
}

// Run reads run id, with its journal's steps when steps is true, from the
// store the settings name; a missing run is an InputError.
func Run(ctx context.Context, getenv func(string) string, id string, steps bool) (*madspark.Run, []*madspark.Step, error) {
	db, err := OpenStore(ctx, getenv)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	r, err := db.Run(ctx, id)
	if errNotFound(err) {
		return nil, nil, Inputf("no run %s (madspark runs list)", id)
	}
	if err != nil || !steps {
		return r, nil, err
	}
	ss, err := db.Steps(ctx, id)
	return r, ss, err
}

// Steps is the steps view of run id (see package inspect); a missing run
// is an InputError.
func Steps(ctx context.Context, getenv func(string) string, id string) (*inspect.View, error) {
	db, err := OpenStore(ctx, getenv)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	v, err := inspect.Load(ctx, db, id)
	if errNotFound(err) {
		return nil, Inputf("no run %s (madspark runs list)", id)
	}
	return v, err
}

// Watch gives each event of run id after seq to fn, the stored ones then
// the new ones wherever the run executes, until the final one; a missing
// run is an InputError.
func Watch(ctx context.Context, getenv func(string) string, logger *slog.Logger, id string, after int64, fn func(madspark.Event) error) error {
	db, err := OpenStore(ctx, getenv)
	if err != nil {
		return err
	}
	defer db.Close()
	hub := events.New(db, events.Options{Logger: logger})
	defer hub.Close()
	ch, err := hub.Subscribe(ctx, id, after)
	if errNotFound(err) {
		return Inputf("no run %s", id)
	}
	if err != nil {
		return err
	}
	for e := range ch {
		if err := fn(e); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Export renders run id in format through its pipeline's definition.
func (a *App) Export(ctx context.Context, id, format string) (*madspark.Run, *export.File, error) {
	rec, err := a.Store.Run(ctx, id)
	if errNotFound(err) {
		return nil, nil, Inputf("no run %s (madspark runs list)", id)
	}
	if err != nil {
		return nil, nil, err
	}
	reg, err := a.Registry("")
	if err != nil {
		return nil, nil, err
	}
	def, err := reg.Get(rec.Pipeline)
	if err != nil {
		return nil, nil, err
	}
	font, err := PDFFont(a.cfg.Getenv)
	if err != nil {
		return nil, nil, err
	}
	f, err := export.Render(def, rec, format, export.Options{Font: font})
	if errors.Is(err, export.ErrNoResult) || errors.Is(err, export.ErrUnsupported) {
		return nil, nil, InputError{err}
	}
	return rec, f, err
}

// Cancel cancels run id of the job queue and returns its status before:
// a running run stops, and its worker records it as cancelled.
func (a *App) Cancel(ctx context.Context, id string) (madspark.RunStatus, error) {
	reg, err := a.Registry("")
	if err != nil {
		return "", err
	}
	q, err := a.Queue(ctx, reg, 0, 0)
	if err != nil {
		return "", err
	}
	status, err := q.Cancel(ctx, id)
	switch {
	case errNotFound(err):
		return status, Inputf("no run %s", id)
	case errors.Is(err, jobs.ErrFinished):
		return status, Inputf("run %s has finished already (%s)", id, status)
	case errors.Is(err, jobs.ErrNotQueued):
		return status, Inputf("run %s is not a run of the job queue: Ctrl-C in the command that runs it stops it", id)
	}
	return status, err
}

// LoadPipeline parses a pipeline file; every problem is told, one per
// line, and the error, an InputError, is the first.
func LoadPipeline(path string, notices io.Writer) (*flow.Pipeline, error) {
	p, err := flow.Load(path)
	if err != nil {
		return nil, InputError{TellProblems(notices, err)}
	}
	return p, nil
}

// RunFile runs the pipeline of a file with inputs ("name=value" each).
// The hint of a failed run names the file's directory for resume.
func (a *App) RunFile(ctx context.Context, p *flow.Pipeline, inputs []string, timeout time.Duration) (*engine.Run, time.Duration, error) {
	reg := pipeline.NewRegistry()
	def := p.Definition()
	if err := reg.Register(def); err != nil {
		return nil, 0, err
	}
	raw, err := p.InputsJSON(inputs)
	if err != nil {
		return nil, 0, InputError{err}
	}
	params, err := reg.Decode(p.Name, raw)
	if err != nil {
		return nil, 0, InputError{err}
	}
	run, elapsed, err := a.Execute(ctx, Spec{Pipeline: p.Name, Params: params, Subject: reg.Subject(p.Name, params), Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		return def.Run(ctx, r, params)
	})
	if err != nil {
		// resume finds the pipeline in the file's directory.
		dir := filepath.Dir(p.File)
		if _, ok := errors.AsType[*InterruptedError](err); ok {
			return run, 0, resumeWith(err, "--pipelines", dir)
		}
		if run != nil {
			return run, 0, fmt.Errorf("%w (with --pipelines %s)", err, ShellQuote(dir))
		}
	}
	return run, elapsed, err
}
