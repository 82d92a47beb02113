package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
)

// Resumed is a run finished by Resume.
type Resumed struct {
	Record  madspark.Run
	Elapsed time.Duration
	// Files are the run's files, when outDir was given and its pipeline
	// has files.
	Files map[string][]byte
}

// Resume finishes run id, which failed, was interrupted or was cancelled:
// every step that had finished is replayed from the run's journal with no
// LLM call, and only the unfinished steps call the model. pipelinesDir holds the
// pipeline files of a run of a pipeline defined in one; with outDir the
// run's files are written there. A run that succeeded, belongs to the job
// queue or is held by a live process is refused.
func (a *App) Resume(ctx context.Context, id, pipelinesDir, outDir string, timeout time.Duration) (*Resumed, error) {
	rec, err := a.Store.Run(ctx, id)
	if errNotFound(err) {
		return nil, Inputf("no run %s", id)
	}
	if err != nil {
		return nil, err
	}
	switch rec.Status {
	case madspark.RunSucceeded:
		return nil, Inputf("run %s already succeeded; see madspark runs show %s", id, id)
	case madspark.RunQueued:
		return nil, Inputf("run %s is queued: a worker runs it (madspark worker)", id)
	}
	reg, err := a.Registry(pipelinesDir)
	if err != nil {
		return nil, err
	}
	def, err := reg.Get(rec.Pipeline)
	if err != nil {
		return nil, Inputf("run %s: %v", id, err)
	}
	params, err := reg.Decode(rec.Pipeline, rec.Params)
	if err != nil {
		return nil, fmt.Errorf("run %s: stored %w", id, err)
	}
	// A run that the queue still holds is a worker's to resume; running it
	// here too would pay twice.
	q, err := a.Queue(ctx, reg, 0, 0)
	if err != nil {
		return nil, err
	}
	if owned, err := q.Owned(ctx, id); err != nil {
		return nil, err
	} else if owned {
		return nil, Inputf("run %s belongs to the job queue: a worker resumes it (madspark worker)", id)
	}
	if rec.Provider != a.Info.Name || rec.Model != a.Info.Model {
		a.cfg.Logger.Warn("resuming with another provider or model than the run started with", "run", id,
			"was", rec.Provider+"/"+rec.Model, "now", a.Info.Name+"/"+a.Info.Model)
	}
	run, elapsed, err := a.Execute(ctx, Spec{ResumeID: id, Pipeline: rec.Pipeline, Params: params, Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		return def.Run(ctx, r, params)
	})
	var held *madspark.RunHeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("%v; wait for it to finish, or resume it once that process has stopped", held)
	}
	if err != nil {
		return nil, err
	}
	out := &Resumed{Record: run.Record(), Elapsed: elapsed}
	if outDir != "" && def.Files != nil {
		if out.Files, err = def.Files(&out.Record); err != nil {
			return nil, err
		}
		if err := writeFiles(outDir, out.Files); err != nil {
			return nil, err
		}
		a.notice("wrote the run's files to %s", outDir)
	}
	return out, nil
}
