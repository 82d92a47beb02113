package spark

import (
	"context"
	"embed"
	"strings"
	"time"

	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// role is one of the pipeline's agents with the schema of its reply W.
type role[W any] struct {
	*agent.Agent
	spec *structured.Spec[W]
}

func newRole[W any](name, schema string) (role[W], error) {
	a, err := agent.New(promptFS, name, "prompts/"+strings.TrimPrefix(name, "spark.")+".tmpl")
	if err != nil {
		return role[W]{}, err
	}
	spec, err := structured.NewSpec[W](schema)
	if err != nil {
		return role[W]{}, err
	}
	return role[W]{Agent: a, spec: spec}, nil
}

// ask sends the role's prompt rendered from input at temperature temp, with
// the stage's timeout, and returns the validated reply. check adds rules
// that depend on the input.
func (a role[W]) ask(ctx context.Context, c llm.Client, in Params, temp float64, input any, check func(*W) error) (W, error) {
	timeout := stageTimeouts[a.Name()]
	if in.StageTimeout > 0 {
		timeout = time.Duration(float64(timeout) * in.StageTimeout)
	}
	return agent.JSON(ctx, c, a.Agent, a.spec, input, agent.Options{Temperature: temp, Timeout: timeout}, structured.HardCheck(check))
}

// batch is an agent that answers n inputs in one call: its reply W holds a
// list of T, one per input index.
type batch[W any, T indexed] struct {
	role[W]
	items func(*W) *[]T
}

// run asks the batch agent as the journaled step key and returns its items
// in input order. A reply that misses or repeats an index is repaired like
// any invalid reply. When the step fails and fallbacks are allowed, fallback()
// is returned instead and the stage is marked; otherwise the error names the
// stage.
func (b batch[W, T]) run(ctx context.Context, r *engine.Run, fb *fallbacks, key string, in Params, temp float64, input any, n int, fallback func() []T) ([]T, error) {
	return stage(ctx, r, fb, key, input, func(ctx context.Context, c llm.Client) ([]T, error) {
		out, err := b.ask(ctx, c, in, temp, input, func(w *W) (err error) {
			list := b.items(w)
			*list, err = byIndex(*list, n)
			return err
		})
		return *b.items(&out), err
	}, fallback)
}

// stage runs one journaled step, substituting fallback() when it fails and
// fallbacks are allowed.
func stage[T any](ctx context.Context, r *engine.Run, fb *fallbacks, key string, input any, fn func(context.Context, llm.Client) (T, error), fallback func() T) (T, error) {
	out, err := engine.Step(ctx, r, key, input, fn)
	if err == nil {
		return out, nil
	}
	if !fb.allowed || ctx.Err() != nil {
		return out, stageError(key, err)
	}
	fb.mark(key, err)
	r.Emit(key, -1, "fallback used: "+oneLine(err.Error()))
	return fallback(), nil
}

// StageError is a failure of one stage of the workflow.
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return "stage " + e.Stage + ": " + oneLine(e.Err.Error()) }
func (e *StageError) Unwrap() error { return e.Err }

func stageError(stage string, err error) error { return &StageError{Stage: stage, Err: err} }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
