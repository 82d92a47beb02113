package app

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/eval"
)

// EvalRequest is an eval to run: Pipeline against a single call, on
// Topics (a file, or eval.BuiltinSource), judged pairwise.
type EvalRequest struct {
	Pipeline, Topics          string
	Limit, Concurrency        int
	JudgeProvider, JudgeModel string
	Fresh                     bool
	Timeout                   time.Duration
}

// Eval runs an eval as a run of the pipeline "eval" and returns its report.
func (a *App) Eval(ctx context.Context, r EvalRequest) (*eval.Report, error) {
	reg, err := a.Registry("")
	if err != nil {
		return nil, err
	}
	if r.Pipeline == eval.Name {
		return nil, Inputf("--pipeline cannot be eval itself")
	}
	if _, err := reg.Get(r.Pipeline); err != nil {
		return nil, InputError{err}
	}
	var data []byte
	src := r.Topics
	if r.Topics == eval.BuiltinSource {
		if data, err = eval.Builtin(r.Pipeline); err != nil {
			return nil, InputError{err}
		}
		src = "built-in topics"
	} else if data, err = os.ReadFile(r.Topics); err != nil {
		return nil, Inputf("--topics: %v", err)
	}
	topics, err := eval.Topics(reg, r.Pipeline, src, data, r.Limit)
	if err != nil {
		return nil, InputError{err}
	}
	raw, err := json.Marshal(map[string]any{
		"pipeline": r.Pipeline, "topics": topics, "concurrency": r.Concurrency,
		"judge_provider": r.JudgeProvider, "judge_model": r.JudgeModel, "fresh": r.Fresh,
	})
	if err != nil {
		return nil, err
	}
	params, err := reg.Decode(eval.Name, raw)
	if err != nil {
		return nil, InputError{err}
	}
	def, err := reg.Get(eval.Name)
	if err != nil {
		return nil, err
	}
	run, _, err := a.Execute(ctx, Spec{Pipeline: eval.Name, Params: params, Timeout: r.Timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		return def.Run(ctx, r, params)
	})
	if err != nil {
		return nil, err
	}
	rec := run.Record()
	return eval.ReportOf(&rec)
}

// Compare sets the succeeded evals a and b side by side, or judges two
// succeeded runs of one pipeline against each other in both orders, and
// returns the function that writes the report in one of eval.Formats.
func (a *App) Compare(ctx context.Context, idA, idB, judgeProvider, judgeModel string) (func(w io.Writer, format string) error, error) {
	if judgeProvider != "" && !slices.Contains(eval.JudgeProviders, judgeProvider) {
		return nil, Inputf("--judge-provider must be one of %s, got %q", strings.Join(eval.JudgeProviders, ", "), judgeProvider)
	}
	var runs [2]*madspark.Run
	for i, id := range []string{idA, idB} {
		run, err := a.Store.Run(ctx, id)
		if errNotFound(err) {
			return nil, Inputf("no run %s (madspark runs list)", id)
		}
		if err != nil {
			return nil, err
		}
		runs[i] = run
	}
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
			var err error
			if reps[i], err = eval.ReportOf(r); err != nil {
				return nil, InputError{err}
			}
		}
		return eval.Compare(reps[0], reps[1]).Write, nil
	case 1:
		return nil, Inputf("compare two evals, or two runs of one pipeline, not an eval with a run")
	}
	for _, r := range runs {
		if r.Status != madspark.RunSucceeded {
			return nil, Inputf("run %s has not succeeded (status %s)", r.ID, r.Status)
		}
	}
	if runs[0].Pipeline != runs[1].Pipeline {
		return nil, Inputf("run %s is a %s run and run %s a %s run: compare runs of one pipeline", idA, runs[0].Pipeline, idB, runs[1].Pipeline)
	}
	reg, err := a.Registry("")
	if err != nil {
		return nil, err
	}
	ev, err := eval.New(eval.Deps{Registry: reg, Engine: a.Engine})
	if err != nil {
		return nil, err
	}
	c, err := ev.CompareRuns(ctx, a.Engine.Client, runs[0], runs[1], judgeProvider, judgeModel)
	if err != nil {
		return nil, err
	}
	return c.Write, nil
}
