package proposal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/document/pdf"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/search"
)

// Definition describes the proposal pipeline to the registry: the profile
// comes with the parameters (no interview), literature from sources, and
// font, when not nil, is the PDF's fallback TrueType font. Files renders a
// finished run as proposal.pdf, proposal.md and proposal.json.
func Definition(sources []search.Provider, logger *slog.Logger, font []byte) (pipeline.Definition, error) {
	pipe, err := New(sources, logger)
	if err != nil {
		return pipeline.Definition{}, err
	}
	return pipeline.Definition{
		Name:        "proposal",
		Result:      reflect.TypeFor[Result](),
		Title:       "Research proposal",
		Description: "A research proposal from a researcher's profile: problem with real literature, SMART objectives, methodology, data plan and a quality-control loop, as PDF.",
		NewParams: pipeline.Defaults(func() Params {
			p := DefaultParams()
			p.ProfileSource = "api"
			return p
		}),
		Run: pipeline.Runs(func(ctx context.Context, r *engine.Run, p *Params) (any, error) {
			return pipe.Run(ctx, r, *p)
		}),
		Topic: pipeline.Topics(func(p *Params) string { return p.Profile.ResearchArea }),
		Files: func(run *madspark.Run) (map[string][]byte, error) {
			res, err := pipeline.StoredResult[Result](run)
			if err != nil {
				return nil, err
			}
			meta := Meta{RunID: run.ID, Mock: run.Mode == "mock", Provider: run.Provider, Model: run.Model, Date: run.FinishedAt}
			return res.Files(meta, font, map[string]any{
				"run_id": run.ID, "pipeline": "proposal", "mode": run.Mode, "provider": run.Provider, "model": run.Model,
				"usage": run.Usage, "duration_ms": run.FinishedAt.Sub(run.CreatedAt).Milliseconds(),
			})
		},
		// No QueryParam: a proposal needs a whole profile, not one line.
		Document: RunDocument,
		Table:    Table,
		Verdict: func(run *madspark.Run) (*pipeline.Verdict, error) {
			res, err := pipeline.StoredResult[Result](run)
			if err != nil {
				return nil, err
			}
			return res.Verdict(), nil
		},
	}, nil
}

// RunDocument lays a succeeded run's proposal out, as its PDF shows it.
func RunDocument(run *madspark.Run) (*document.Document, error) {
	res, err := pipeline.StoredResult[Result](run)
	if err != nil {
		return nil, err
	}
	return res.Document(Meta{RunID: run.ID, Mock: run.Mode == "mock", Provider: run.Provider, Model: run.Model, Date: run.FinishedAt}), nil
}

// Table flattens a succeeded run's proposal into rows: its research
// questions, its objectives (with the question each answers, indicator and
// due week), its methodology's phases and its literature.
func Table(run *madspark.Run) ([]string, [][]string, error) {
	res, err := pipeline.StoredResult[Result](run)
	if err != nil {
		return nil, nil, err
	}
	header := []string{"kind", "id", "text", "research_question", "indicator", "due_week", "weeks", "year", "authors", "url"}
	var rows [][]string
	for _, q := range res.ProblemDefinition.Questions() {
		rows = append(rows, []string{"research_question", q.ID, q.Text, "", "", "", "", "", "", ""})
	}
	o := res.ResearchObjectives
	rows = append(rows, []string{"general_objective", "", o.GeneralObjective, "", "", "", "", "", "", ""})
	for _, so := range o.SpecificObjectives {
		rows = append(rows, []string{"specific_objective", so.ID, so.Objective, so.ResearchQuestion, so.Indicator, strconv.Itoa(so.DueWeek), "", "", "", ""})
	}
	for i, ph := range res.Methodology.TimelineFit.Phases {
		rows = append(rows, []string{"phase", strconv.Itoa(i + 1), ph.Name, "", "", "", strconv.Itoa(ph.Weeks), "", "", ""})
	}
	for _, e := range res.ProblemDefinition.PreliminaryLiterature {
		year := ""
		if e.Year > 0 {
			year = strconv.Itoa(e.Year)
		}
		rows = append(rows, []string{"literature", strconv.Itoa(e.Ref), e.Title, "", e.RelevanceNote, "", "", year, strings.Join(e.Authors, "; "), e.URL})
	}
	return header, rows, nil
}

// Rendered is a proposal laid out for reading.
type Rendered struct {
	Document *document.Document
	PDF      []byte
	Markdown []byte
}

// Files renders res as the files a user gets: proposal.pdf, proposal.md
// and proposal.json, whose JSON is envelope (the run's identity, usage and
// whatever the caller adds) with the result and, when there is one, the
// notice. envelope is changed.
func (res *Result) Files(m Meta, font []byte, envelope map[string]any) (map[string][]byte, error) {
	out, err := res.Render(m, font)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", m.RunID, err)
	}
	envelope["result"] = res
	envelope["repairs"] = res.Repairs
	if res.Repairs == nil {
		envelope["repairs"] = []llm.Repair{}
	}
	if n := res.Notice(m); n != "" {
		envelope["notice"] = n
	}
	js, err := json.MarshalIndent(envelope, "", "  ")
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"proposal.pdf": out.PDF, "proposal.md": out.Markdown, "proposal.json": append(js, '\n')}, nil
}

// Render lays res out as a document and renders it as PDF (with font, when
// not nil, as the fallback for characters the bundled fonts lack) and as
// Markdown.
func (res *Result) Render(m Meta, font []byte) (*Rendered, error) {
	doc := res.Document(m)
	var buf bytes.Buffer
	if err := pdf.Render(&buf, doc, pdf.Options{Created: m.Date, Fallback: font}); err != nil {
		return nil, err
	}
	return &Rendered{Document: doc, PDF: buf.Bytes(), Markdown: document.Markdown(doc)}, nil
}
