package pipeline

import (
	"context"
	"fmt"

	"github.com/madspark/madspark/engine"
)

// A pipeline's Definition takes its parameters as Params; its own code
// takes them as its Params type. Defaults, Runs and Topics make the
// Definition's functions from the pipeline's own.

// Defaults returns a Definition.NewParams giving a pointer to what
// defaults returns, the pipeline's default parameters.
func Defaults[P any, T interface {
	*P
	Params
}](defaults func() P) func() Params {
	return func() Params {
		p := defaults()
		return T(&p)
	}
}

// Runs returns a Definition.Run that calls run with the parameters as the
// pipeline's own type T, the type NewParams gives.
func Runs[T Params](run func(ctx context.Context, r *engine.Run, p T) (any, error)) func(context.Context, *engine.Run, Params) (any, error) {
	return func(ctx context.Context, r *engine.Run, p Params) (any, error) {
		in, ok := p.(T)
		if !ok {
			return nil, fmt.Errorf("parameters of type %T, not %T", p, in)
		}
		return run(ctx, r, in)
	}
}

// Topics returns a Definition.Topic that reads what a run is about from the
// parameters as the pipeline's own type T; parameters of another type are
// about nothing.
func Topics[T Params](topic func(p T) string) func(Params) string {
	return func(p Params) string {
		if in, ok := p.(T); ok {
			return topic(in)
		}
		return ""
	}
}
