package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/pipeline"
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
			if f.compare {
				return argsError(cobra.ExactArgs(2))(cmd, args)
			}
			return argsError(cobra.NoArgs)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(f.format, eval.Formats...); err != nil {
				return err
			}
			if f.compare {
				return c.compareEvals(cmd.Context(), args[0], args[1], f)
			}
			return c.runEval(cmd.Context(), f, cmd.Flags().Changed("limit"))
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

// registerEval registers the eval, which runs the registry's other
// pipelines on the app's engine.
func registerEval(reg *pipeline.Registry, a *app) error {
	def, err := eval.Definition(eval.Deps{Registry: reg, Engine: a.engine})
	if err != nil {
		return err
	}
	return reg.Register(def)
}

func (c *cli) runEval(ctx context.Context, f *evalFlags, limitSet bool) error {
	switch {
	case f.pipeline == "":
		return usagef("--pipeline is required (spark, chaos, debate, assess or proposal)")
	case f.topics == "":
		return usagef(`--topics is required: a file, one topic per line, or "builtin"`)
	case limitSet && f.limit < 1:
		return usagef("--limit must be at least 1, got %d", f.limit)
	case f.concurrency < 1 || f.concurrency > 16:
		return usagef("--concurrency must be 1..16, got %d", f.concurrency)
	case f.timeout <= 0:
		return usagef("--timeout must be positive, got %s", f.timeout)
	}
	a, err := c.openApp(ctx, !f.noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	reg, err := c.registry(a)
	if err != nil {
		return err
	}
	if f.pipeline == eval.Name {
		return usagef("--pipeline cannot be eval itself")
	}
	if _, err := reg.Get(f.pipeline); err != nil {
		return usageError{err}
	}
	var data []byte
	src := f.topics
	if f.topics == eval.BuiltinSource {
		if data, err = eval.Builtin(f.pipeline); err != nil {
			return usageError{err}
		}
		src = "built-in topics"
	} else if data, err = os.ReadFile(f.topics); err != nil {
		return usagef("--topics: %v", err)
	}
	topics, err := eval.Topics(reg, f.pipeline, src, data, f.limit)
	if err != nil {
		return usageError{err}
	}
	raw, err := json.Marshal(map[string]any{
		"pipeline": f.pipeline, "topics": topics, "concurrency": f.concurrency,
		"judge_provider": f.judgeProvider, "judge_model": f.judgeModel, "fresh": f.fresh,
	})
	if err != nil {
		return err
	}
	params, err := reg.Decode(eval.Name, raw)
	if err != nil {
		return usageError{err}
	}
	def, err := reg.Get(eval.Name)
	if err != nil {
		return err
	}
	run, _, err := c.execute(ctx, a, eval.Name, params, f.timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		return def.Run(ctx, r, params)
	})
	if err != nil {
		return err
	}
	rec := run.Record()
	rep, err := eval.ReportOf(&rec)
	if err != nil {
		return err
	}
	return c.writeEval(rep.RunID, f, rep.Write)
}

// writeEval renders a report with write to stdout or to f.output.
func (c *cli) writeEval(id string, f *evalFlags, write func(w io.Writer, format string) error) error {
	var buf bytes.Buffer
	if err := write(&buf, f.format); err != nil {
		return err
	}
	if f.output == "" {
		_, err := c.stdout.Write(buf.Bytes())
		return err
	}
	if err := writeFile(f.output, buf.Bytes()); err != nil {
		if id != "" {
			return fmt.Errorf("%w (eval %s succeeded and is kept: madspark runs show %s)", err, id, id)
		}
		return err
	}
	fmt.Fprintf(c.stderr, "madspark: wrote %s\n", f.output)
	return nil
}

// compareEvals sets the succeeded evals a and b side by side, or judges
// two succeeded runs of one pipeline against each other.
func (c *cli) compareEvals(ctx context.Context, a, b string, f *evalFlags) error {
	if f.judgeProvider != "" && !slices.Contains(eval.JudgeProviders, f.judgeProvider) {
		return usagef("--judge-provider must be one of %s, got %q", strings.Join(eval.JudgeProviders, ", "), f.judgeProvider)
	}
	db, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	var runs [2]*madspark.Run
	for i, id := range []string{a, b} {
		run, err := db.Run(ctx, id)
		if errors.Is(err, madspark.ErrNotFound) {
			db.Close()
			return usagef("no run %s (madspark runs list)", id)
		}
		if err != nil {
			db.Close()
			return err
		}
		runs[i] = run
	}
	db.Close()
	evals := 0
	for _, r := range runs {
		if r.Pipeline == eval.Name {
			evals++
		}
	}
	switch evals {
	case 2:
		var reps [2]*eval.Report
		for i, r := range runs {
			if reps[i], err = eval.ReportOf(r); err != nil {
				return usageError{err}
			}
		}
		return c.writeEval("", f, eval.Compare(reps[0], reps[1]).Write)
	case 1:
		return usagef("compare two evals, or two runs of one pipeline, not an eval with a run")
	}
	app, err := c.openApp(ctx, !f.noCache)
	if err != nil {
		return err
	}
	defer app.Close()
	reg, err := c.registry(app)
	if err != nil {
		return err
	}
	ev, err := eval.New(eval.Deps{Registry: reg, Engine: app.engine})
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Status != madspark.RunSucceeded {
			return usagef("run %s has not succeeded (status %s)", r.ID, r.Status)
		}
	}
	if runs[0].Pipeline != runs[1].Pipeline {
		return usagef("run %s is a %s run and run %s a %s run: compare runs of one pipeline", a, runs[0].Pipeline, b, runs[1].Pipeline)
	}
	cmp, err := ev.CompareRuns(ctx, app.engine.Client, runs[0], runs[1], f.judgeProvider, f.judgeModel)
	if err != nil {
		return err
	}
	return c.writeEval("", f, cmp.Write)
}
