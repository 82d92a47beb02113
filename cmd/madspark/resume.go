package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/spark"
)

func (c *cli) resumeCmd() *cobra.Command {
	var (
		format  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "resume RUN_ID",
		Short: "Finish a run that was interrupted or failed, without paying again for its finished steps",
		Long: `Resumes a spark run that did not finish (a crash, kill -9, Ctrl-C, a provider
outage): every step that had finished is replayed from the run's journal with
no LLM call, and only the unfinished steps call the model.`,
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			return c.resume(cmd.Context(), args[0], format, timeout)
		},
	}
	cmd.Flags().StringVar(&format, "output-format", "detailed", "brief|detailed|json|markdown")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up on the run after this long")
	return cmd
}

func (c *cli) resume(ctx context.Context, id, format string, timeout time.Duration) error {
	a, err := c.openApp(ctx, true)
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
	if rec.Status == madspark.RunSucceeded {
		return usagef("run %s already succeeded; see madspark runs show %s", id, id)
	}
	if rec.Pipeline != "spark" {
		return usagef("run %s is a %s run; resume supports spark runs", id, rec.Pipeline)
	}
	if rec.Provider != a.info.Name || rec.Model != a.info.Model {
		c.logger.Warn("resuming with another provider or model than the run started with", "run", id,
			"was", rec.Provider+"/"+rec.Model, "now", a.info.Name+"/"+a.info.Model)
	}
	var params spark.Params
	if err := json.Unmarshal(rec.Params, &params); err != nil {
		return fmt.Errorf("run %s: stored parameters: %w", id, err)
	}
	pipe, err := spark.New()
	if err != nil {
		return err
	}
	var res *spark.Result
	run, elapsed, err := c.executeRun(ctx, a, id, "spark", params, timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, params)
		return res, err
	})
	if err != nil {
		return err
	}
	report := spark.NewReport(res, run.ID(), a.info.Mode(), a.info.Name, a.info.Model, run.Usage(), elapsed)
	return c.writeReport(report, format, "")
}
