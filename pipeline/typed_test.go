package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
)

// typedParams are a pipeline's own parameters.
type typedParams struct{ Topic string }

func (*typedParams) Validate() error { return nil }

// TestTyped: the Definition's functions made by Defaults, Runs and Topics
// hand the pipeline its own parameters, and refuse others.
func TestTyped(t *testing.T) {
	p := pipeline.Defaults(func() typedParams { return typedParams{Topic: "bees"} })()
	in, ok := p.(*typedParams)
	if !ok || in.Topic != "bees" {
		t.Fatalf("Defaults gave %#v, want *typedParams of bees", p)
	}
	run := pipeline.Runs(func(_ context.Context, _ *engine.Run, p *typedParams) (any, error) { return "ran " + p.Topic, nil })
	topic := pipeline.Topics(func(p *typedParams) string { return p.Topic })
	if out, err := run(context.Background(), nil, p); err != nil || out != "ran bees" {
		t.Errorf("Runs = %v, %v; want ran bees", out, err)
	}
	if got := topic(p); got != "bees" {
		t.Errorf("Topics = %q, want bees", got)
	}
	other := &seeded{}
	if out, err := run(context.Background(), nil, other); err == nil || out != nil || !strings.Contains(err.Error(), "*pipeline_test.typedParams") {
		t.Errorf("Runs of other parameters = %v, %v; want an error naming the type wanted", out, err)
	}
	if got := topic(other); got != "" {
		t.Errorf("Topics of other parameters = %q, want none", got)
	}
}
