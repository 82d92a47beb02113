package spark

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
)

// Definition describes the spark pipeline to the registry.
func Definition() (pipeline.Definition, error) {
	pipe, err := New()
	if err != nil {
		return pipeline.Definition{}, err
	}
	return pipeline.Definition{
		Name:        "spark",
		Result:      reflect.TypeFor[Result](),
		Title:       "Spark",
		Description: "Ideas for a topic and context: generated, critiqued, argued for and against, improved and re-scored.",
		NewParams:   pipeline.Defaults(DefaultParams),
		Run: pipeline.Runs(func(ctx context.Context, r *engine.Run, p *Params) (any, error) {
			return pipe.Run(ctx, r, *p)
		}),
		Topic: pipeline.Topics(func(p *Params) string { return p.Topic }),
		Files: func(run *madspark.Run) (map[string][]byte, error) {
			rep, err := ReportOf(run)
			if err != nil {
				return nil, err
			}
			var md, js bytes.Buffer
			if err := rep.Write(&md, "markdown"); err != nil {
				return nil, err
			}
			if err := rep.Write(&js, "json"); err != nil {
				return nil, err
			}
			return map[string][]byte{"report.md": md.Bytes(), "result.json": js.Bytes()}, nil
		},
		QueryParam: "topic",
		Ideas:      Ideas,
		Document:   Document,
		Table:      Table,
	}, nil
}

// Ideas are a succeeded run's candidates, best first, as bookmarks keep
// them.
func Ideas(run *madspark.Run) ([]pipeline.Idea, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	p := DefaultParams()
	_ = json.Unmarshal(run.Params, &p)
	out := make([]pipeline.Idea, len(res.Candidates))
	for i, c := range res.Candidates {
		out[i] = pipeline.Idea{Text: c.Idea, Improved: c.ImprovedIdea, Score: c.InitialScore, ImprovedScore: c.ImprovedScore,
			Topic: res.Topic, Context: res.Context, Temperature: p.Temperatures.Generate}
	}
	return out, nil
}

// ReportOf is the report of a succeeded spark run, from its record.
func ReportOf(run *madspark.Run) (*Report, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	return NewReport(res, run.ID, run.Mode, run.Provider, run.Model, run.Usage, run.FinishedAt.Sub(run.CreatedAt)), nil
}
