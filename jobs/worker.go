package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
)

// runWorker works the jobs of runs.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	q *Queue
	// g is the lease the jobs are worked under.
	g *generation
}

// Timeout bounds a run by its request's timeout.
func (w *runWorker) Timeout(job *river.Job[RunArgs]) time.Duration {
	if job.Args.Timeout > 0 {
		return job.Args.Timeout
	}
	return w.q.cfg.RunTimeout
}

// Work runs a job's run to its end: it opens the run (recording it from the
// job's arguments if the enqueuing process died before it could), replays
// the steps the journal holds, runs the rest, and records the outcome. A
// failed run completes its job: the pipeline's calls were retried already,
// and `madspark resume` finishes it later without paying again. Only
// trouble with the database before the run starts makes River try the job
// again.
func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	err := w.work(ctx, job)
	if err != nil && w.g.lost.Load() {
		// This worker's lease lapsed: another worker may be running
		// the run now, so nothing more is recorded here. The job goes
		// back to the queue unless another worker took it.
		w.handBack(ctx, job)
		return nil
	}
	return err
}

// errLeaseLost ends the work of a job whose worker's lease lapsed.
var errLeaseLost = errors.New("the worker's lease lapsed")

func (w *runWorker) work(ctx context.Context, job *river.Job[RunArgs]) error {
	q, a := w.q, job.Args
	rec, err := q.cfg.Store.Run(ctx, a.RunID)
	if errors.Is(err, madspark.ErrNotFound) {
		rec = &madspark.Run{ID: a.RunID, Pipeline: a.Pipeline, Status: madspark.RunQueued, Mode: a.Mode,
			Provider: a.Provider, Model: a.Model, Params: a.Params, Tags: a.Tags, CreatedAt: a.CreatedAt}
		if err := q.cfg.Store.CreateRun(ctx, rec); err != nil {
			if rec, err = q.cfg.Store.Run(ctx, a.RunID); err != nil {
				return fmt.Errorf("record run %s: %w", a.RunID, err)
			}
		}
	} else if err != nil {
		return fmt.Errorf("run %s: %w", a.RunID, err)
	}
	if rec.Status.Final() {
		// Finished by an earlier attempt that died before River heard,
		// or cancelled while queued.
		return nil
	}
	def, err := q.cfg.Registry.Get(rec.Pipeline)
	if err != nil {
		return w.reject(ctx, rec.ID, err)
	}
	params, err := q.cfg.Registry.Decode(rec.Pipeline, rec.Params)
	if err != nil {
		return w.reject(ctx, rec.ID, err)
	}
	if rec.Provider != q.cfg.Provider || (rec.Model != "" && rec.Model != q.cfg.Model) {
		q.logger.Warn("working a run with another provider or model than it was queued for", "run", rec.ID,
			"queued_for", rec.Provider+"/"+rec.Model, "worker", q.cfg.Provider+"/"+q.cfg.Model)
	}
	// The run's spans join the trace of the request that queued it.
	run, err := q.cfg.Engine.Resume(a.extractTrace(ctx), rec.ID, nil)
	if errors.Is(err, engine.ErrNotResumable) {
		return nil // cancelled or finished meanwhile
	}
	var held *madspark.RunHeldError
	if errors.As(err, &held) {
		// Another process still works the run (a worker whose lease
		// lapsed, finishing its step): try again once its lease ends.
		q.logger.Info("run held by another process; trying again later", "run", rec.ID, "holder", held.Lease.Holder)
		return river.JobSnooze(max(time.Until(held.Lease.ExpiresAt), 0) + time.Second)
	}
	if err != nil {
		return fmt.Errorf("open run %s: %w", rec.ID, err)
	}
	q.logger.Info("run started", "run", rec.ID, "pipeline", rec.Pipeline, "attempt", job.Attempt, "worker", q.id)
	res, runErr := def.Run(ctx, run, params)
	switch {
	case w.g.lost.Load():
		// Its outcome here is not recorded (see Work).
		run.Abandon(ctx)
		return errLeaseLost
	case runErr == nil:
	case w.g.hard.Load() && ctx.Err() != nil:
		// This worker is stopping: the run goes back to the queue at
		// once, for the next worker to resume.
		// This worker's process is stopping (a signal): the run is
		// recorded interrupted, its job stays in the queue for the next
		// worker.
		if w.g.interrupted.Load() {
			if err := run.Finish(ctx, res, fmt.Errorf("%w: the process working it was stopped; the next worker resumes it", madspark.ErrInterrupted)); err != nil {
				q.logger.Warn("could not record a run as interrupted", "run", rec.ID, "err", err)
			}
			return river.JobSnooze(0)
		}
		run.Abandon(ctx)
		q.requeue(ctx, rec.ID, "requeued: its worker stopped")
		return river.JobSnooze(0)
	case errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely):
		runErr = fmt.Errorf("%w by request", madspark.ErrCancelled)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		runErr = fmt.Errorf("run timed out after %s: %w", w.Timeout(job), runErr)
	}
	if err := run.Finish(ctx, res, runErr); err != nil {
		// The outcome is lost; the next attempt replays the journal.
		return fmt.Errorf("record the outcome of run %s: %w", rec.ID, err)
	}
	if errors.Is(runErr, madspark.ErrCancelled) {
		return river.JobCancel(runErr)
	}
	return nil
}

// handBack gives job back to the queue after this worker's lease lapsed,
// if it is still running this worker's attempt.
func (w *runWorker) handBack(ctx context.Context, job *river.Job[RunArgs]) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := w.q.rescueJob(ctx, job.JobRow, "the lease of worker "+w.g.id+" lapsed"); err != nil {
		w.q.logger.Warn("could not give back the job of a lapsed lease; another worker will", "run", job.Args.RunID, "err", err)
	}
}

// reject fails a run that cannot be worked (an unknown pipeline, parameters
// that no longer decode) and cancels its job, which no retry would help.
func (w *runWorker) reject(ctx context.Context, runID string, err error) error {
	if ferr := w.q.cfg.Engine.Fail(ctx, runID, err); ferr != nil {
		return fmt.Errorf("run %s: %w", runID, ferr)
	}
	return river.JobCancel(err)
}

// requeue records run runID as queued again, with an event saying why.
func (q *Queue) requeue(ctx context.Context, runID, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ok, err := q.cfg.Store.SetRunStatus(ctx, runID, madspark.RunQueued, madspark.RunRunning, madspark.RunInterrupted)
	if err != nil {
		q.logger.Warn("could not record a run as queued again", "run", runID, "err", err)
		return
	}
	if ok {
		q.publish(ctx, &madspark.Event{RunID: runID, Type: madspark.EventProgress, Stage: "queued", Message: why})
	}
}
