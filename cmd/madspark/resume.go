package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/cmdline"
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
		Args: cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckTimeout(timeout); err != nil {
				return err
			}
			if err := cmdline.CheckFormat(format, spark.Formats...); err != nil {
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
	a, err := c.open(ctx, noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	out, err := a.Resume(ctx, id, pipelinesDir, outDir, timeout)
	if err != nil {
		return err
	}
	done := &out.Record
	if done.Pipeline == "spark" {
		rep, err := spark.ReportOf(done)
		if err != nil {
			return err
		}
		rep.DurationMS = out.Elapsed.Milliseconds()
		return rep.Write(c.stdout, format)
	}
	return writeJSON(c, map[string]any{
		"run_id": done.ID, "pipeline": done.Pipeline, "mode": done.Mode, "provider": done.Provider, "model": done.Model,
		"result": done.Result, "usage": done.Usage, "duration_ms": out.Elapsed.Milliseconds(),
	})
}
