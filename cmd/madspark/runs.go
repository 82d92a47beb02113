package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/pipeline/spark"
)

func (c *cli) runsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "List and show recorded runs"}
	var (
		format, pipeline, status string
		limit, offset            int
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmdline.CheckFormat(format, "table", "json"); err != nil {
				return err
			}
			if limit < 1 || limit > 1000 || offset < 0 {
				return usagef("--limit must be 1..1000 and --offset not negative")
			}
			if status != "" && !slices.Contains(madspark.RunStatuses(), madspark.RunStatus(status)) {
				return usagef("unknown --status %q (want queued, running, succeeded, failed, cancelled or interrupted)", status)
			}
			runs, err := app.Runs(cmd.Context(), c.env, c.logger, madspark.RunFilter{Pipeline: pipeline, Status: madspark.RunStatus(status), Limit: limit, Offset: offset})
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(c, runs)
			}
			if len(runs) == 0 {
				fmt.Fprintln(c.stderr, "madspark: no runs match")
				return nil
			}
			if err := inspect.WriteRuns(c.stdout, runs); err != nil {
				return err
			}
			if slices.ContainsFunc(runs, func(r *madspark.Run) bool { return r.Status.Resumable() }) {
				fmt.Fprintln(c.stderr, "madspark: a failed, cancelled or interrupted run finishes with: madspark resume RUN_ID (its finished steps are not paid again)")
			}
			return nil
		},
	}
	list.Flags().StringVar(&format, "output-format", "table", "table|json")
	list.Flags().StringVar(&pipeline, "pipeline", "", "only runs of this pipeline")
	list.Flags().StringVar(&status, "status", "", "only runs with this status: queued|running|succeeded|failed|cancelled|interrupted")
	list.Flags().IntVar(&limit, "limit", 20, "at most this many runs")
	list.Flags().IntVar(&offset, "offset", 0, "skip this many runs")

	var (
		showFormat, stepKey string
		showSteps           bool
	)
	show := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a run: its result, or why it failed; with --steps or --step, its LLM calls",
		Args:  cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if showSteps || cmd.Flags().Changed("step") {
				return c.showSteps(cmd, args[0], showFormat, cmd.Flags().Changed("output-format"), showSteps, stepKey)
			}
			if err := cmdline.CheckFormat(showFormat, append([]string{"record"}, spark.Formats...)...); err != nil {
				return err
			}
			r, steps, err := app.Run(cmd.Context(), c.env, args[0], true)
			if err != nil {
				return err
			}
			if showFormat == "record" || r.Pipeline != "spark" || r.Status != madspark.RunSucceeded {
				return writeJSON(c, struct {
					*madspark.Run
					Steps []*madspark.Step `json:"steps"`
				}{r, steps})
			}
			rep, err := spark.ReportOf(r)
			if err != nil {
				return err
			}
			return rep.Write(c.stdout, showFormat)
		},
	}
	show.Flags().StringVar(&showFormat, "output-format", "detailed", "record|"+strings.Join(spark.Formats, "|")+"; with --steps or --step: table|json")
	show.Flags().BoolVar(&showSteps, "steps", false, "show the run's steps: agent, model, status, attempts, cache, tokens, latency, cost, repairs")
	show.Flags().StringVar(&stepKey, "step", "", "show one step's LLM calls in full: prompt and response")
	cmd.AddCommand(list, show, c.runsCancelCmd(), c.runsWatchCmd())
	for _, sub := range cmd.Commands() {
		sub.SetFlagErrorFunc(cmdline.FlagError)
	}
	return cmd
}

// showSteps prints the steps view of run id: a table (or JSON) of its
// steps, or one step's calls in full.
func (c *cli) showSteps(cmd *cobra.Command, id, format string, formatSet, all bool, key string) error {
	if !formatSet {
		format = "table"
	}
	if err := cmdline.CheckFormat(format, "table", "json"); err != nil {
		return err
	}
	if all && key != "" {
		return usagef("--steps and --step cannot be used together")
	}
	if !all && key == "" {
		return usagef("--step needs a step key (madspark runs show %s --steps lists them)", id)
	}
	v, err := app.Steps(cmd.Context(), c.env, id)
	if err != nil {
		return err
	}
	if all {
		if format == "json" {
			return writeJSON(c, v)
		}
		return inspect.WriteTable(c.stdout, v)
	}
	s := v.Step(key)
	if s == nil {
		return usagef("run %s has no step %q (madspark runs show %s --steps lists them)", id, key, id)
	}
	if format == "json" {
		return writeJSON(c, s)
	}
	return inspect.WriteStep(c.stdout, s)
}

// inspectCmd is the inspector: the steps view of a run, or one step's
// calls in full.
func (c *cli) inspectCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "inspect RUN_ID [STEP]",
		Short: "Inspect a run: its steps and their LLM calls (agent, model, attempts, cache, tokens, latency, cost, repairs)",
		Long: `Shows a run's steps from its journal, one row each: agent, model, status,
attempts, cache hits, tokens, latency, cost and repairs. With STEP (a key
the table lists), that step's LLM calls in full: the prompt, the messages as
sent, the response_format, the reply or the error.

The same view as madspark runs show RUN_ID --steps (--step STEP),
GET /api/runs/{id}/steps and the web UI's timeline.`,
		Args: cmdline.Args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := ""
			if len(args) == 2 {
				key = args[1]
			}
			return c.showSteps(cmd, args[0], format, true, key == "", key)
		},
	}
	cmd.Flags().StringVar(&format, "output-format", "table", "table|json")
	return cmd
}

func (c *cli) runsCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Cancel a queued or running run of the job queue",
		Args:  cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			a, err := c.open(ctx, false)
			if err != nil {
				return err
			}
			defer a.Close()
			status, err := a.Cancel(ctx, args[0])
			if err != nil {
				return err
			}
			if status == madspark.RunRunning {
				fmt.Fprintf(c.stderr, "madspark: run %s is stopping; its worker records it as cancelled\n", args[0])
			} else {
				fmt.Fprintf(c.stderr, "madspark: run %s cancelled\n", args[0])
			}
			return nil
		},
	}
}

func (c *cli) runsWatchCmd() *cobra.Command {
	var after int64
	cmd := &cobra.Command{
		Use:   "watch RUN_ID",
		Short: "Print a run's events as JSON lines, from the start (or --after SEQ), until it finishes",
		Long: `Prints the run's stored events, then its new ones as they happen (wherever the
run executes), one JSON object per line in the progress message shape
({type, stage, progress, message, data} with run_id and seq), and exits after
the final result or error event.`,
		Args: cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			enc := json.NewEncoder(c.stdout)
			enc.SetEscapeHTML(false)
			return app.Watch(cmd.Context(), c.env, c.logger, args[0], after, func(e madspark.Event) error { return enc.Encode(e) })
		},
	}
	cmd.Flags().Int64Var(&after, "after", 0, "start after this sequence number")
	return cmd
}
