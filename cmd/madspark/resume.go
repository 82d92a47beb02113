package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/spark"
)

func (c *cli) resumeCmd() *cobra.Command {
	var (
		format, outDir string
		pipelinesDir   string
		timeout        time.Duration
		noCache        bool
	)
	cmd := &cobra.Command{
		Use:   "resume RUN_ID",
		Short: "Finish a run that was interrupted or failed, without paying again for its finished steps",
		Long: `Resumes a run of any pipeline that did not finish (a crash, kill -9, Ctrl-C, a
provider outage): every step that had finished is replayed from the run's
journal with no LLM call, and only the unfinished steps call the model.
The response cache holds only replies that passed their rules, so a step
that failed on a bad reply asks the provider again; --no-cache leaves the
cache aside altogether.

A spark run prints its report (--output-format); other pipelines print the
run's result as JSON. --output-dir writes the run's files. Runs of the job
queue are resumed by workers, not by this command.`,
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			if err := checkFormat(format, spark.Formats...); err != nil {
				return err
			}
			return c.resume(cmd.Context(), args[0], format, outDir, pipelinesDir, timeout, noCache)
		},
	}
	cmd.Flags().StringVar(&format, "output-format", "detailed", "spark runs: brief|detailed|json|markdown; other pipelines print JSON")
	cmd.Flags().StringVar(&outDir, "output-dir", "", "also write the finished run's files to this directory")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up on the run after this long")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "do not use the response cache for the unfinished steps")
	cmd.Flags().StringVar(&pipelinesDir, "pipelines", "", "a directory of pipeline files, for a run of a pipeline defined in one")
	return cmd
}

func (c *cli) resume(ctx context.Context, id, format, outDir, pipelinesDir string, timeout time.Duration, noCache bool) error {
	a, err := c.openApp(ctx, !noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	rec, err := a.db.Run(ctx, id)
	if errors.Is(err, madspark.ErrNotFound) {
		return usagef("no run %s", id)
	}
	if err != nil {
		return err
	}
	switch rec.Status {
	case madspark.RunSucceeded:
		return usagef("run %s already succeeded; see madspark runs show %s", id, id)
	case madspark.RunCancelled:
		return usagef("run %s was cancelled", id)
	case madspark.RunQueued:
		return usagef("run %s is queued: a worker runs it (madspark worker)", id)
	}
	reg, err := c.registry(a)
	if err != nil {
		return err
	}
	if err := c.registerDir(reg, pipelinesDir); err != nil {
		return err
	}
	def, err := reg.Get(rec.Pipeline)
	if err != nil {
		return usagef("run %s: %v", id, err)
	}
	params, err := reg.Decode(rec.Pipeline, rec.Params)
	if err != nil {
		return fmt.Errorf("run %s: stored %w", id, err)
	}
	// A run that the queue still holds is a worker's to resume; running it
	// here too would pay twice.
	q, err := c.openQueue(ctx, a, reg, queueOptions{})
	if err != nil {
		return err
	}
	if owned, err := q.Owned(ctx, id); err != nil {
		return err
	} else if owned {
		return usagef("run %s belongs to the job queue: a worker resumes it (madspark worker)", id)
	}
	if rec.Provider != a.info.Name || rec.Model != a.info.Model {
		c.logger.Warn("resuming with another provider or model than the run started with", "run", id,
			"was", rec.Provider+"/"+rec.Model, "now", a.info.Name+"/"+a.info.Model)
	}
	run, elapsed, err := c.executeRun(ctx, a, id, rec.Pipeline, params, timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		return def.Run(ctx, r, params)
	})
	var held *madspark.RunHeldError
	if errors.As(err, &held) {
		return fmt.Errorf("%v; wait for it to finish, or resume it once that process has stopped", held)
	}
	if err != nil {
		return err
	}
	done := run.Record()
	if outDir != "" && def.Files != nil {
		files, err := def.Files(&done)
		if err != nil {
			return err
		}
		for name, data := range files {
			if err := writeFile(filepath.Join(outDir, filepath.FromSlash(name)), data); err != nil {
				return err
			}
		}
		fmt.Fprintf(c.stderr, "madspark: wrote the run's files to %s\n", outDir)
	}
	if rec.Pipeline == "spark" {
		rep, err := spark.ReportOf(&done)
		if err != nil {
			return err
		}
		rep.DurationMS = elapsed.Milliseconds()
		return c.writeReport(rep, format, "")
	}
	return writeJSON(c, map[string]any{
		"run_id": done.ID, "pipeline": done.Pipeline, "mode": done.Mode, "provider": done.Provider, "model": done.Model,
		"result": done.Result, "usage": done.Usage, "duration_ms": elapsed.Milliseconds(),
	})
}
