package debate

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/search"
)

// Definition describes the debate pipeline to the registry, with the same
// dependencies as New. Runs through the registry do not stream: the answer
// is in the result.
func Definition(count func(string) int, searcher search.Provider, logger *slog.Logger) (pipeline.Definition, error) {
	pipe, err := New(count, searcher, logger)
	if err != nil {
		return pipeline.Definition{}, err
	}
	return pipeline.Definition{
		Name:        "debate",
		Result:      reflect.TypeFor[Result](),
		Title:       "Debate",
		Description: "A query answered by multi-agent debate: routed by complexity, proposers on a blackboard, an aggregator that sees the original query.",
		NewParams:   pipeline.Defaults(DefaultParams),
		Run: pipeline.Runs(func(ctx context.Context, r *engine.Run, p *Params) (any, error) {
			return pipe.Run(ctx, r, *p, nil)
		}),
		Topic: pipeline.Topics(func(p *Params) string { return p.Query }),
		Files: func(run *madspark.Run) (map[string][]byte, error) {
			res, err := resultOf(run)
			if err != nil {
				return nil, err
			}
			answer := "# " + document.Escape(res.Query) + "\n\n" + res.Answer + "\n"
			if run.Mode == "mock" {
				answer = "MOCK DATA: generated offline by the mock provider, not by a language model.\n\n" + answer
			}
			envelope, err := json.MarshalIndent(map[string]any{
				"run_id": run.ID, "pipeline": "debate", "mode": run.Mode, "provider": run.Provider, "model": run.Model,
				"result": res, "usage": run.Usage, "duration_ms": run.FinishedAt.Sub(run.CreatedAt).Milliseconds(),
			}, "", "  ")
			if err != nil {
				return nil, err
			}
			return map[string][]byte{"answer.md": []byte(answer), "result.json": envelope}, nil
		},
		QueryParam: "query",
		Document:   Document,
		Table:      Table,
	}, nil
}
