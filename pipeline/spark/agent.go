package spark

import (
	"context"
	"embed"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// agent is one LLM role: its prompt (a template defining "system" and
// "user") and the schema of its reply W.
type agent[W any] struct {
	name   string
	prompt *template.Template
	spec   *structured.Spec[W]
}

func newAgent[W any](name, schema string) (agent[W], error) {
	file := "prompts/" + strings.TrimPrefix(name, "spark.") + ".tmpl"
	t, err := template.New(name).Funcs(template.FuncMap{"dec": func(n int) int { return n - 1 }}).
		Option("missingkey=error").ParseFS(promptFS, file)
	if err != nil {
		return agent[W]{}, fmt.Errorf("prompt %s: %w", file, err)
	}
	spec, err := structured.NewSpec[W](schema)
	if err != nil {
		return agent[W]{}, err
	}
	return agent[W]{name: name, prompt: t, spec: spec}, nil
}

// ask renders the agent's prompt from input, sends it at temperature temp
// with the stage's timeout, and returns the validated reply. check adds rules
// that depend on the input.
func (a agent[W]) ask(ctx context.Context, c llm.Client, in Params, temp float64, input any, check func(*W) error) (W, error) {
	var zero W
	var sys, user strings.Builder
	if err := a.prompt.ExecuteTemplate(&sys, "system", input); err != nil {
		return zero, fmt.Errorf("%s: prompt: %w", a.name, err)
	}
	if err := a.prompt.ExecuteTemplate(&user, "user", input); err != nil {
		return zero, fmt.Errorf("%s: prompt: %w", a.name, err)
	}
	timeout := stageTimeouts[a.name]
	if in.StageTimeout > 0 {
		timeout = time.Duration(float64(timeout) * in.StageTimeout)
	}
	out, _, err := a.spec.Generate(ctx, c, llm.Request{
		Agent:       a.name,
		System:      sys.String(),
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: user.String()}},
		Temperature: temp,
		Timeout:     timeout,
		Input:       input,
	}, check)
	return out, err
}

// batch is an agent that answers n inputs in one call: its reply W holds a
// list of T, one per input index.
type batch[W any, T indexed] struct {
	agent[W]
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
