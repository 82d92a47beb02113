package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
)

// Spec is one run to execute: a new run of Pipeline with Params, or, with
// ResumeID, the unfinished run ResumeID, whose finished steps are
// replayed.
type Spec struct {
	Pipeline string
	Params   any
	// Subject is what the run is about (madspark.Run.Subject), when its
	// parameters do not say it in a field Run.Topic knows.
	Subject  string
	ResumeID string
	// Timeout bounds the whole run.
	Timeout time.Duration
}

// Execute runs one pipeline run: it records the run, feeds the progress
// display, runs fn under the timeout, and records the outcome, also when
// interrupted. The error, if any, names the run, provider and model; an
// interrupted run's is an *InterruptedError. The run is nil only when it
// could not start.
func (a *App) Execute(ctx context.Context, s Spec, fn func(context.Context, *engine.Run) (any, error)) (*engine.Run, time.Duration, error) {
	if a.Info.Mock {
		a.notice("mock mode (%s): outputs are mock data, no model is called", a.Info.Reason)
	}
	start := time.Now()
	sink, stop := func(madspark.Event) {}, func() {}
	var started atomic.Pointer[engine.Run]
	if a.cfg.Progress != nil {
		sink, stop = a.cfg.Progress(func() llm.Usage {
			if r := started.Load(); r != nil {
				return r.Usage()
			}
			return llm.Usage{}
		})
	}
	var run *engine.Run
	var err error
	if s.ResumeID != "" {
		run, err = a.Engine.Resume(ctx, s.ResumeID, sink)
	} else {
		run, err = a.Engine.Start(ctx, engine.RunInfo{Pipeline: s.Pipeline, Mode: a.Info.Mode(), Provider: a.Info.Name, Model: a.Info.Model, Params: s.Params, Subject: s.Subject}, sink)
	}
	if err != nil {
		stop()
		return nil, 0, err
	}
	started.Store(run)
	rctx, cancel := context.WithTimeout(ctx, s.Timeout)
	res, runErr := fn(rctx, run)
	cancel()
	stop()
	switch {
	case runErr != nil && ctx.Err() != nil:
		runErr = &StoppedError{Cause: context.Cause(ctx), Stage: run.Stage(), Err: runErr}
	case runErr != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		runErr = fmt.Errorf("run timed out after %s (--timeout): %w", s.Timeout, runErr)
	}
	if err := run.Finish(ctx, res, runErr); err != nil {
		a.cfg.Logger.Warn("could not record the run's outcome", "run", run.ID(), "err", err)
	}
	if runErr != nil && ctx.Err() != nil {
		return run, 0, &InterruptedError{RunID: run.ID(), err: runErr}
	}
	if runErr != nil {
		return run, 0, &RunError{RunID: run.ID(), Provider: a.Info.Name, Model: a.Info.Model, Err: runErr}
	}
	return run, time.Since(start), nil
}

// RunError is a run that failed: it is kept, and madspark resume finishes
// it once the cause is fixed.
type RunError struct {
	RunID, Provider, Model string
	// Err is the run's error, as recorded.
	Err error
}

func (e *RunError) Error() string {
	return fmt.Sprintf("run %s failed with %s/%s: %v; once the cause is fixed, madspark resume %s finishes it", e.RunID, e.Provider, e.Model, e.Err, e.RunID)
}

func (e *RunError) Unwrap() error { return e.Err }

// StoppedError is the error of a run whose command was stopped (Ctrl-C,
// SIGTERM) during Stage: the run is recorded as interrupted (it wraps
// madspark.ErrInterrupted) with this error's words, not those of the
// cancelled call.
type StoppedError struct {
	// Cause is the cause of the command's context's end: a
	// cmdline.Interruption naming the signal, or context.Canceled.
	Cause error
	Stage string
	Err   error
}

func (e *StoppedError) Error() string {
	what := "interrupted"
	if errors.Is(e.Cause, madspark.ErrInterrupted) {
		what = e.Cause.Error()
	}
	if e.Stage != "" {
		what += " at stage " + e.Stage
	}
	return what
}

func (e *StoppedError) Unwrap() []error { return []error{madspark.ErrInterrupted, e.Err} }

// interruption is the cause of ctx's end as an interruption: its cause
// when that wraps madspark.ErrInterrupted (a signal), else
// madspark.ErrInterrupted, since a command's context ends only when its
// process is stopping.
func interruption(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, madspark.ErrInterrupted) {
		return cause
	}
	return madspark.ErrInterrupted
}

// InterruptedError is a run stopped by Ctrl-C (or SIGTERM): it is kept,
// interrupted, and "madspark resume" finishes it.
type InterruptedError struct {
	RunID string
	// Flags are resume's flags that the hint suggests ("--output-dir DIR").
	Flags string
	err   error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted; run %s is kept, finish it with: madspark resume %s%s", e.RunID, e.RunID, e.Flags)
}

func (e *InterruptedError) Unwrap() error { return e.err }

// resumeWith makes the hint of an interrupted run's err, if it is one,
// suggest resume's flag with value.
func resumeWith(err error, flag, value string) error {
	if ie, ok := errors.AsType[*InterruptedError](err); ok {
		ie.Flags = " " + flag + " " + ShellQuote(value)
	}
	return err
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// UsageLine is the summary line of a finished run, as every command prints
// it: what the run cost and how long it took ("6 calls …; 12.3s"). The
// repairs made to its replies are the caller's to add, once (RepairNote,
// pipeline.RepairsNote).
func UsageLine(run *engine.Run, elapsed time.Duration) string {
	return fmt.Sprintf("%s; %.1fs", run.Usage(), elapsed.Seconds())
}

// RepairNote is "; N repairs" for n > 0, and "" otherwise.
func RepairNote(n int) string {
	if n == 0 {
		return ""
	}
	return "; " + llm.RepairCount(n)
}
