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
// the stage's timeout, and returns the reply with its repairs applied. check
// adds rules that depend on the input.
func (a role[W]) ask(ctx context.Context, c llm.Client, in Params, temp float64, input any, check func(*W, *structured.Problems)) (W, error) {
	timeout := stageTimeouts[a.Name()]
	if in.StageTimeout > 0 {
		timeout = time.Duration(float64(timeout) * in.StageTimeout)
	}
	return agent.JSON(ctx, c, a.Agent, a.spec, input, agent.Options{Temperature: temp, Timeout: timeout}, check)
}

// batch is an agent that answers n inputs in one call: its reply W holds a
// list of T, one per input index.
type batch[W, T any, PT reindexable[T]] struct {
	role[W]
	items func(*W) *[]T
}

// run asks the batch agent as the journaled step key and returns its items
// in input order, with have[i] false where the reply has no item for input
// i even after a re-ask; missing(i) says, for the record, what the pipeline
// does without it. Indices are repaired by byIndex. When the step fails and
// fallbacks are allowed, fallback() is returned instead and the stage is
// marked; otherwise the error names the stage.
func (b batch[W, T, PT]) run(ctx context.Context, r *engine.Run, fb *fallbacks, key string, in Params, temp float64, input any, n int, missing func(i int) string, fallback func() []T) (items []T, have []bool, err error) {
	// The journal keeps nil for a missing item, so that a replayed step
	// has the same gaps.
	got, err := stage(ctx, r, fb, key, input, func(ctx context.Context, c llm.Client) ([]*T, error) {
		out, err := b.ask(ctx, c, in, temp, input, func(w *W, p *structured.Problems) {
			byIndex[T, PT](b.items(w), n, missing, p)
		})
		if err != nil {
			return nil, err
		}
		return place[T, PT](*b.items(&out), n), nil
	}, func() []*T {
		fbItems := fallback()
		out := make([]*T, len(fbItems))
		for i := range fbItems {
			out[i] = &fbItems[i]
		}
		return out
	})
	if err != nil {
		return nil, nil, err
	}
	items, have = make([]T, n), make([]bool, n)
	for i, it := range got {
		if i < n && it != nil {
			items[i], have[i] = *it, true
		}
	}
	return items, have, nil
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
