package assess

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"reflect"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/prompt"
)

// JobParams are the parameters of an assessment run started through the
// registry (job queue, batch, HTTP API). They are Params without what names
// the worker's file system: the run writes into a directory of its own that
// is removed afterwards, prompts are the built-in ones only, and the files
// are rendered from the stored result by the Definition's Files.
type JobParams struct {
	Idea           string `json:"idea" jsonschema:"required,minLength=1,maxLength=2000,title=Business idea,description=The business idea\\, in one line"`
	Mode           Mode   `json:"mode" jsonschema:"enum=analyze,enum=analyze_and_review,enum=analyze_review_and_judge,enum=full_evaluation,title=Mode,description=How far the assessment goes: analysis; with review; with review and grades; with a synthesis too"`
	FactCheck      bool   `json:"fact_check" jsonschema:"title=Fact check,description=A fact checker beside the reviewer; both must approve (needs a mode with review)"`
	MaxIterations  int    `json:"max_iterations" jsonschema:"minimum=1,maximum=5,title=Iterations,description=Analyst and reviewer iterations at most"`
	MinWords       int    `json:"min_words" jsonschema:"minimum=100,maximum=10000,title=Minimum words,description=Shortest acceptable analysis\\, in words"`
	Strictness     string `json:"strictness" jsonschema:"enum=lenient,enum=normal,enum=strict,title=Strictness,description=How strict the reviewer is"`
	NoWebTools     bool   `json:"no_web_tools" jsonschema:"title=No web research,description=No web research even when a search provider is configured"`
	MaxWebsearches int    `json:"max_websearches" jsonschema:"minimum=1,maximum=20,title=Web searches,description=Web searches the analyst may run at most"`
	AnalystPrompt  string `json:"analyst_prompt,omitempty" jsonschema:"title=Analyst prompt,description=A built-in analyst system prompt\\, such as experimental/analyst/concise.md; empty for the default"`
	ReviewerPrompt string `json:"reviewer_prompt,omitempty" jsonschema:"title=Reviewer prompt,description=A built-in reviewer system prompt; empty for the default"`
}

// Job returns the parameters of p that any process can run: p without the
// output and prompts directories, which name this machine's file system. A
// run started by the command records these, so that the registry decodes
// them when the run is resumed; the files of a resumed run come from
// RunFiles, and its prompts are the built-in ones (a step whose prompt
// differs from the one it was journaled with runs again).
func (p *Params) Job() JobParams {
	return JobParams{Idea: p.Idea, Mode: p.Mode, FactCheck: p.FactCheck, MaxIterations: p.MaxIterations, MinWords: p.MinWords,
		Strictness: p.Strictness, NoWebTools: p.NoWebTools, MaxWebsearches: p.MaxWebsearches,
		AnalystPrompt: p.AnalystPrompt, ReviewerPrompt: p.ReviewerPrompt}
}

// params returns p as Params writing into dir.
func (p *JobParams) params(dir string) Params {
	return Params{Idea: p.Idea, Mode: p.Mode, FactCheck: p.FactCheck, MaxIterations: p.MaxIterations, MinWords: p.MinWords,
		Strictness: p.Strictness, NoWebTools: p.NoWebTools, MaxWebsearches: p.MaxWebsearches,
		AnalystPrompt: p.AnalystPrompt, ReviewerPrompt: p.ReviewerPrompt, OutputDir: dir}
}

// Validate checks p as Params.Validate does, and that the prompts chosen are
// built in.
func (p *JobParams) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	in := p.params(".")
	if err := in.Validate(); err != nil {
		return err
	}
	for _, c := range []struct{ field, agent, choice string }{{"analyst_prompt", "analyst", p.AnalystPrompt}, {"reviewer_prompt", "reviewer", p.ReviewerPrompt}} {
		if c.choice == "" {
			continue
		}
		found := false
		for _, name := range prompt.SystemPaths(c.agent, c.choice) {
			if !fs.ValidPath(name) || path.Clean(name) != name {
				return fmt.Errorf("%s must name a built-in prompt, got %q", c.field, c.choice)
			}
			if _, err := fs.Stat(BuiltinPrompts(), name); err == nil {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s: no built-in prompt %q (available: %s)", c.field, c.choice, strings.Join(prompt.SystemNames(BuiltinPrompts(), c.agent), ", "))
		}
	}
	return nil
}

// Definition describes the assess pipeline to the registry. A run works in
// a temporary directory of its own, removed when it ends; Files renders a
// finished run in the seed's layout from its record.
func Definition(cfg Config) (pipeline.Definition, error) {
	pipe, err := New(cfg)
	if err != nil {
		return pipeline.Definition{}, err
	}
	return pipeline.Definition{
		Name:        "assess",
		Result:      reflect.TypeFor[Result](),
		Title:       "Business idea assessment",
		Description: "A one-line business idea turned into a market analysis, reviewed and revised until approved, optionally fact-checked and graded A-F on seven criteria.",
		NewParams: pipeline.Defaults(func() JobParams {
			d := DefaultParams()
			return JobParams{Mode: d.Mode, MaxIterations: d.MaxIterations, MinWords: d.MinWords, Strictness: d.Strictness, MaxWebsearches: d.MaxWebsearches}
		}),
		Run: pipeline.Runs(func(ctx context.Context, r *engine.Run, in *JobParams) (any, error) {
			dir, err := os.MkdirTemp("", "madspark-assess-")
			if err != nil {
				return nil, fmt.Errorf("assess: working directory: %w", err)
			}
			defer os.RemoveAll(dir)
			res, err := pipe.Run(ctx, r, in.params(dir))
			if res != nil {
				res.OutputDir = ""
			}
			return res, err
		}),
		Topic:      pipeline.Topics(func(p *JobParams) string { return p.Idea }),
		Files:      RunFiles,
		QueryParam: "idea",
		Document:   Document,
		Table:      Table,
		Ideas:      Ideas,
	}, nil
}

// RunFiles renders a succeeded assessment from its record, in the seed's
// layout: analyses/{slug}/iterations/iteration_N.md with the reviewers'
// feedback beside each, analyses/{slug}/analysis.md (the final iteration),
// analyses/{slug}/evaluation.json when judged, report.md and result.json.
func RunFiles(run *madspark.Run) (map[string][]byte, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	dir := path.Join(analysesDir, res.Slug)
	files := map[string][]byte{"report.md": []byte(res.Markdown())}
	js := func(v any) ([]byte, error) {
		b, err := json.MarshalIndent(v, "", "  ")
		return append(b, '\n'), err
	}
	if files["result.json"], err = js(map[string]any{"run_id": run.ID, "pipeline": "assess", "mode": run.Mode,
		"provider": run.Provider, "model": run.Model, "result": res, "usage": run.Usage}); err != nil {
		return nil, err
	}
	for _, it := range res.Iterations {
		files[path.Join(dir, iterDir, iterationFile(it.Number))] = []byte(it.Analysis + "\n")
		if it.Feedback != nil {
			if files[path.Join(dir, iterDir, feedbackFile(it.Number))], err = js(it.Feedback); err != nil {
				return nil, err
			}
		}
		if it.FactCheck != nil {
			if files[path.Join(dir, iterDir, factFile(it.Number))], err = js(it.FactCheck); err != nil {
				return nil, err
			}
		}
	}
	if final := res.Final(); final != nil {
		files[path.Join(dir, analysisFile)] = []byte(final.Analysis + "\n")
	}
	if res.Evaluation != nil {
		if files[path.Join(dir, evalFile)], err = js(res.Evaluation); err != nil {
			return nil, err
		}
	}
	return files, nil
}
