package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/eval"
)

// evalFlags are the flags of madspark eval.
type evalFlags struct {
	pipeline, topics          string
	limit, concurrency        int
	judgeModel, judgeProvider string
	format, output            string
	compare, fresh, noCache   bool
	timeout                   time.Duration
}

func (c *cli) evalCmd() *cobra.Command {
	f := &evalFlags{}
	cmd := &cobra.Command{
		Use:   "eval --pipeline P --topics FILE|builtin | eval --compare ID_A ID_B",
		Short: "Measure a pipeline against a single call to the same model, judged pairwise in both orders",
		Long: `Runs the pipeline and a single-call baseline (one prompt asking for the same
deliverable, on the same provider and model) for every topic, then a judge
compares the two answers in both orders, with a rubric suited to the
pipeline; a topic whose two orders disagree is a tie. The report gives the
wins, losses and ties, the win rate (a tie counts half) with its 95% Wilson
interval, how often the judge agreed with itself across the orders, and
the calls, tokens, cost and time of each side.

--topics is a file with one topic per line (the pipeline's topic, prompt,
query or idea), or JSON lines of the pipeline's parameters, or "builtin"
for the built-in set of spark, chaos, debate or assess. An eval is a run:
"madspark resume ID" finishes an interrupted one without paying again for
what finished, and a succeeded run of the same pipeline with the same
parameters and model is reused (--fresh runs it again).

--compare ID_A ID_B sets two evals side by side (two configurations), or
judges two runs of one pipeline against each other in both orders.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.compare && len(args) != 2 {
				return usagef("--compare needs two run IDs, got %d: madspark eval --compare ID_A ID_B", len(args))
			}
			if f.compare {
				return nil
			}
			return cmdline.Args(cobra.NoArgs)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(f.format, eval.Formats...); err != nil {
				return err
			}
			return c.runEval(cmd.Context(), f, args, cmd.Flags().Changed("limit"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pipeline, "pipeline", "", "the pipeline to measure: spark|chaos|debate|assess|proposal")
	fl.StringVar(&f.topics, "topics", "", `a file of topics, one per line or JSON lines of parameters, or "builtin"`)
	fl.IntVar(&f.limit, "limit", 0, "at most this many topics (the first ones)")
	fl.IntVar(&f.concurrency, "concurrency", 2, "topics worked at once, 1..16")
	fl.StringVar(&f.judgeModel, "judge-model", "", "the judge's model (default: the run's model, or the judge provider's default)")
	fl.StringVar(&f.judgeProvider, "judge-provider", "", "the judge's provider: openai|ollama|gemini|anthropic (default: the run's)")
	fl.StringVar(&f.format, "output-format", "text", "text|json|markdown")
	fl.StringVarP(&f.output, "output", "o", "", "write the report to this file instead of stdout")
	fl.BoolVar(&f.compare, "compare", false, "compare two evals, or two runs of one pipeline: madspark eval --compare ID_A ID_B")
	fl.BoolVar(&f.fresh, "fresh", false, "run the pipeline even when an identical succeeded run exists")
	fl.BoolVar(&f.noCache, "no-cache", false, "do not answer calls from the response cache")
	fl.DurationVar(&f.timeout, "timeout", 6*time.Hour, "give up on the eval after this long")
	return cmd
}

func (c *cli) runEval(ctx context.Context, f *evalFlags, args []string, limitSet bool) error {
	r := app.EvalRequest{Pipeline: f.pipeline, Topics: f.topics, Limit: f.limit, Concurrency: f.concurrency,
		JudgeProvider: f.judgeProvider, JudgeModel: f.judgeModel, Fresh: f.fresh, Timeout: f.timeout}
	if !f.compare {
		switch {
		case r.Pipeline == "":
			return usagef("--pipeline is required (spark, chaos, debate, assess or proposal)")
		case r.Topics == "":
			return usagef(`--topics is required: a file, one topic per line, or "builtin"`)
		case limitSet && r.Limit < 1:
			return usagef("--limit must be at least 1, got %d", r.Limit)
		case r.Concurrency < 1 || r.Concurrency > 16:
			return usagef("--concurrency must be 1..16, got %d", r.Concurrency)
		}
		if err := cmdline.CheckTimeout(r.Timeout); err != nil {
			return err
		}
	}
	if err := cmdline.CheckOutput(f.output); err != nil {
		return err
	}
	a, err := c.open(ctx, f.noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	var buf bytes.Buffer
	if f.compare {
		write, err := a.Compare(ctx, args[0], args[1], f.judgeProvider, f.judgeModel)
		if err != nil {
			return err
		}
		if err := write(&buf, f.format); err != nil {
			return err
		}
		return c.emit(buf.Bytes(), f.output, "")
	}
	rep, err := a.Eval(ctx, r)
	if err != nil {
		return err
	}
	if err := rep.Write(&buf, f.format); err != nil {
		return err
	}
	if err := c.emit(buf.Bytes(), f.output, ""); err != nil {
		return fmt.Errorf("%w (eval %s succeeded and is kept: madspark runs show %s)", err, rep.RunID, rep.RunID)
	}
	return nil
}
