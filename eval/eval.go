// Package eval measures whether a pipeline beats a single call to the same
// model. For each topic it runs the pipeline and a single-call baseline
// (one prompt asking for the same deliverable, on the same provider and
// model), then a pairwise judge compares the two answers in both orders,
// with a rubric suited to the pipeline; a topic whose two orders disagree
// is a tie. The report counts wins, losses and ties, the win rate (a tie is
// half a win) with its 95% Wilson interval, how often the judge agreed with
// itself across orders, and what each side cost.
//
// An eval is itself a run of the registered pipeline "eval": each pipeline
// run, baseline call and judgement is a journaled step, so an interrupted
// eval resumes without paying again for what finished, and each pipeline
// run is a run of its own (tagged "eval:" and the eval's ID) that the eval
// links to. A succeeded run of the same pipeline with the same parameters,
// provider and model is reused rather than run again.
package eval

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/structured"
)

// Name is the eval's pipeline name in the registry and in runs.
const Name = "eval"

// JudgeProviders are the providers a judge may name.
var JudgeProviders = []string{"mock", "openai", "ollama", "gemini", "anthropic"}

// MaxTopics is the most topics one eval takes.
const MaxTopics = 500

// Params are an eval's parameters, stored with its run.
type Params struct {
	Pipeline string `json:"pipeline" jsonschema:"required,title=Pipeline,description=The pipeline measured against a single call"`
	// Topics are the parameters of each pipeline run, complete (see
	// Normalize).
	Topics []map[string]any `json:"topics" jsonschema:"required,title=Topics,description=One object of the pipeline's parameters per topic"`
	// JudgeProvider and JudgeModel choose the judge; empty means the
	// provider and model of the run.
	JudgeProvider string `json:"judge_provider,omitempty" jsonschema:"title=Judge provider,description=The provider that judges; the run's own when empty"`
	JudgeModel    string `json:"judge_model,omitempty" jsonschema:"title=Judge model,description=The model that judges; the provider's default when empty"`
	// Concurrency is how many topics are worked at once.
	Concurrency int `json:"concurrency" jsonschema:"minimum=1,maximum=16,title=Concurrency,description=How many topics are worked at once"`
	// Fresh runs the pipeline even when a succeeded run with the same
	// parameters, provider and model exists.
	Fresh bool `json:"fresh,omitempty" jsonschema:"title=Fresh runs,description=Run the pipeline even when an identical succeeded run exists"`

	reg *pipeline.Registry
}

// NewParams returns the default parameters, checked against reg.
func NewParams(reg *pipeline.Registry) *Params { return &Params{Concurrency: 2, reg: reg} }

// Validate checks the parameters: a registered pipeline other than the
// eval, 1..MaxTopics topics each valid for it, a known judge provider and a
// concurrency of 1..16.
func (p *Params) Validate() error {
	if p.Pipeline == "" {
		return errors.New("pipeline is required")
	}
	if p.Pipeline == Name {
		return errors.New("pipeline cannot be eval itself")
	}
	if p.reg != nil {
		if _, err := p.reg.Get(p.Pipeline); err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
	}
	if len(p.Topics) == 0 || len(p.Topics) > MaxTopics {
		return fmt.Errorf("topics must hold 1..%d topics, got %d", MaxTopics, len(p.Topics))
	}
	if p.reg != nil {
		for i, t := range p.Topics {
			raw, err := json.Marshal(t)
			if err != nil {
				return fmt.Errorf("topics item %d: %w", i+1, err)
			}
			if _, err := p.reg.Decode(p.Pipeline, raw); err != nil {
				return fmt.Errorf("topics item %d: %w", i+1, err)
			}
		}
	}
	if p.JudgeProvider != "" && !slices.Contains(JudgeProviders, p.JudgeProvider) {
		return fmt.Errorf("judge_provider must be one of %s, got %q", strings.Join(JudgeProviders, ", "), p.JudgeProvider)
	}
	if p.Concurrency < 1 || p.Concurrency > 16 {
		return fmt.Errorf("concurrency must be 1..16, got %d", p.Concurrency)
	}
	return nil
}

// Deps are what an eval runs with.
type Deps struct {
	// Registry holds the pipelines an eval measures.
	Registry *pipeline.Registry
	// Engine is the engine of the eval's runs; the pipeline runs are
	// started on a copy whose client meters into the eval's steps.
	Engine *engine.Engine
}

//go:embed prompts/*.tmpl
var promptFS embed.FS

// Evaluator runs evals. It is safe for concurrent use.
type Evaluator struct {
	deps     Deps
	judge    *agent.Agent
	baseline *agent.Agent
	verdict  *structured.Spec[Verdict]
}

// New returns an Evaluator.
func New(d Deps) (*Evaluator, error) {
	if d.Registry == nil || d.Engine == nil {
		return nil, errors.New("eval: a registry and an engine are required")
	}
	judge, err := agent.New(promptFS, "eval.judge", "prompts/judge.tmpl")
	if err != nil {
		return nil, err
	}
	baseline, err := agent.New(promptFS, "eval.baseline", "prompts/baseline.tmpl")
	if err != nil {
		return nil, err
	}
	spec, err := newVerdictSpec()
	if err != nil {
		return nil, err
	}
	return &Evaluator{deps: d, judge: judge, baseline: baseline, verdict: spec}, nil
}

// Definition describes the eval to the registry, as the pipeline Name. It
// must be registered in d.Registry, after the pipelines it measures.
func Definition(d Deps) (pipeline.Definition, error) {
	ev, err := New(d)
	if err != nil {
		return pipeline.Definition{}, err
	}
	return pipeline.Definition{
		Name:        Name,
		Result:      reflect.TypeFor[Report](),
		Title:       "Eval",
		Description: "A pipeline against a single call to the same model, judged pairwise in both orders: wins, losses, ties and the win rate with its 95% interval.",
		NewParams:   func() pipeline.Params { return NewParams(d.Registry) },
		Run: pipeline.Runs(func(ctx context.Context, r *engine.Run, p *Params) (any, error) {
			return ev.Run(ctx, r, p)
		}),
		Topic: pipeline.Topics(func(p *Params) string {
			return fmt.Sprintf("%s against a single call, %d topics", p.Pipeline, len(p.Topics))
		}),
		Files: func(run *madspark.Run) (map[string][]byte, error) {
			rep, err := ReportOf(run)
			if err != nil {
				return nil, err
			}
			js, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				return nil, err
			}
			var md strings.Builder
			if err := rep.Write(&md, "markdown"); err != nil {
				return nil, err
			}
			return map[string][]byte{"eval.md": []byte(md.String()), "eval.json": append(js, '\n')}, nil
		},
		Document: func(run *madspark.Run) (*document.Document, error) {
			rep, err := ReportOf(run)
			if err != nil {
				return nil, err
			}
			return rep.Document(), nil
		},
		Table: func(run *madspark.Run) ([]string, [][]string, error) {
			rep, err := ReportOf(run)
			if err != nil {
				return nil, nil, err
			}
			h, rows := rep.Table()
			return h, rows, nil
		},
	}, nil
}

// ReportOf is the report of a succeeded eval run, from its record.
func ReportOf(run *madspark.Run) (*Report, error) {
	if run.Pipeline != Name {
		return nil, fmt.Errorf("run %s is a %s run, not an eval", run.ID, run.Pipeline)
	}
	if run.Status != madspark.RunSucceeded {
		return nil, fmt.Errorf("eval %s has not succeeded (status %s)", run.ID, run.Status)
	}
	rep, err := pipeline.StoredResult[Report](run)
	if err != nil {
		return nil, err
	}
	rep.RunID = run.ID
	return rep, nil
}

// MockNotice is said by every report of a mock eval.
const MockNotice = "MOCK DATA: the answers and verdicts are the mock provider's, not a language model's; this eval proves nothing about the pipeline."

// Run runs the eval p as r and returns its report. Topics are worked
// p.Concurrency at a time; a topic whose pipeline run, baseline or
// judgement fails is counted as a failure and the others go on. The eval
// fails when no topic could be judged, or when ctx ends.
func (e *Evaluator) Run(ctx context.Context, r *engine.Run, p *Params) (*Report, error) {
	def, err := e.deps.Registry.Get(p.Pipeline)
	if err != nil {
		return nil, err
	}
	rec := r.Record()
	items := make([]Item, len(p.Topics))
	var done, failed atomic.Int64
	var g errgroup.Group
	g.SetLimit(p.Concurrency)
	r.Emit("topics", 0, fmt.Sprintf("0/%d topics", len(p.Topics)))
	for i, t := range p.Topics {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			items[i] = e.topic(ctx, r, &rec, def, p, i, t)
			if err := ctx.Err(); err != nil {
				return err
			}
			n := done.Add(1)
			if items[i].Error != "" {
				failed.Add(1)
			}
			msg := fmt.Sprintf("%d/%d topics", n, len(p.Topics))
			if f := failed.Load(); f > 0 {
				msg += fmt.Sprintf(", %d failed", f)
			}
			r.Emit("topics", int(n*100/int64(len(p.Topics))), msg)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rep := summarise(p, &rec, items)
	rep.Repairs = r.Repairs()
	if rep.N == 0 {
		return nil, fmt.Errorf("no topic could be judged; the first failure: %s", items[0].Error)
	}
	return rep, nil
}

// pipelineOut is the journaled output of a topic's pipeline run.
type pipelineOut struct {
	RunID   string    `json:"run_id"`
	Answer  string    `json:"answer"`
	Usage   llm.Usage `json:"usage"`
	Repairs int       `json:"repairs"`
	WallMS  int64     `json:"wall_ms"`
	Reused  bool      `json:"reused,omitempty"`
}

// callOut is the journaled output of the baseline's call.
type callOut struct {
	Answer string    `json:"answer"`
	Usage  llm.Usage `json:"usage"`
	WallMS int64     `json:"wall_ms"`
}

// judgeOut is the journaled output of one judgement.
type judgeOut struct {
	Verdict
	Usage  llm.Usage `json:"usage"`
	WallMS int64     `json:"wall_ms"`
}

// baselineInput is the baseline's prompt input.
type baselineInput struct {
	Pipeline    string
	Deliverable string
	Request     string
}

// judgeInput is the judge's prompt input.
type judgeInput struct {
	Pipeline string
	Rubric   string
	Request  string
	A, B     string
}

// topic works topic i: the pipeline run and the baseline side by side,
// then the two judgements side by side. A failure is recorded in the
// item's Error.
func (e *Evaluator) topic(ctx context.Context, r *engine.Run, rec *madspark.Run, def pipeline.Definition, p *Params, i int, topic map[string]any) Item {
	key := fmt.Sprintf("t%d/", i+1)
	raw, _ := json.Marshal(topic)
	it := Item{Index: i + 1, Topic: topicOf(e.deps.Registry, def, raw)}
	request := requestText(def.Name, topic)
	k := kindOf(def.Name)

	var pipe pipelineOut
	var base callOut
	var g errgroup.Group
	g.Go(func() error {
		id, err := engine.Step(ctx, r, key+"run", map[string]any{"pipeline": def.Name, "params": topic, "fresh": p.Fresh},
			func(ctx context.Context, _ llm.Client) (string, error) {
				return e.startRun(ctx, r, rec, def, raw, p.Fresh)
			})
		if err != nil {
			return err
		}
		pipe, err = engine.Step(ctx, r, key+"pipeline", map[string]string{"run_id": id},
			func(ctx context.Context, c llm.Client) (pipelineOut, error) {
				return e.runPipeline(ctx, c, def, id)
			})
		return err
	})
	g.Go(func() error {
		in := baselineInput{Pipeline: def.Name, Deliverable: k.deliverable, Request: request}
		var err error
		base, err = engine.Step(ctx, r, key+"baseline", in, func(ctx context.Context, c llm.Client) (callOut, error) {
			req, err := e.baseline.Request(in, agent.Options{Temperature: 0.7, Timeout: 5 * time.Minute})
			if err != nil {
				return callOut{}, err
			}
			start := time.Now()
			text, usage, err := structured.Text(ctx, c, req, nil)
			return callOut{Answer: text, Usage: usage, WallMS: time.Since(start).Milliseconds()}, err
		})
		return err
	})
	err := g.Wait()
	it.RunID, it.Reused, it.Repairs = pipe.RunID, pipe.Reused, pipe.Repairs
	it.PipelineUsage = SideUsage{Usage: pipe.Usage, WallMS: pipe.WallMS}
	it.BaselineUsage = SideUsage{Usage: base.Usage, WallMS: base.WallMS}
	if err != nil {
		it.Error = oneLine(err.Error())
		it.Failure = failure.Of(it.Error)
		return it
	}

	pipeAnswer, baseAnswer := clip(pipe.Answer), clip(base.Answer)
	orders := [2]judgeInput{
		{Pipeline: def.Name, Rubric: k.rubric, Request: request, A: pipeAnswer, B: baseAnswer},
		{Pipeline: def.Name, Rubric: k.rubric, Request: request, A: baseAnswer, B: pipeAnswer},
	}
	var verdicts [2]judgeOut
	for o, suffix := range []string{"judge_ab", "judge_ba"} {
		g.Go(func() error {
			in := orders[o]
			var err error
			verdicts[o], err = engine.Step(ctx, r, key+suffix, map[string]any{"input": in, "provider": p.JudgeProvider, "model": p.JudgeModel},
				func(ctx context.Context, c llm.Client) (judgeOut, error) {
					return e.judgeOnce(ctx, c, in, p.JudgeProvider, p.JudgeModel)
				})
			return err
		})
	}
	err = g.Wait()
	for _, v := range verdicts {
		it.JudgeUsage.Add(v.Usage)
		it.JudgeUsage.WallMS += v.WallMS
	}
	if err != nil {
		it.Error = oneLine(err.Error())
		it.Failure = failure.Of(it.Error)
		return it
	}
	outcome, consistent := Combine(verdicts[0].Winner, verdicts[1].Winner)
	it.Outcome, it.Consistent = outcome, consistent
	it.Winner = map[Outcome]string{Win: "pipeline", Loss: "baseline", Tie: "tie"}[outcome]
	it.Verdicts = []OrderVerdict{
		{Order: "pipeline_first", Winner: sideOf(verdicts[0].Winner, "A"), Reasons: verdicts[0].Reasons},
		{Order: "baseline_first", Winner: sideOf(verdicts[1].Winner, "B"), Reasons: verdicts[1].Reasons},
	}
	return it
}

// judgeOnce asks the judge for one verdict on in.
func (e *Evaluator) judgeOnce(ctx context.Context, c llm.Client, in judgeInput, provider, model string) (judgeOut, error) {
	req, err := e.judge.Request(in, agent.Options{Temperature: 0, Timeout: 3 * time.Minute, Model: model})
	if err != nil {
		return judgeOut{}, err
	}
	req.Provider = provider
	start := time.Now()
	v, usage, err := e.verdict.Generate(ctx, c, req, nil)
	return judgeOut{Verdict: v, Usage: usage, WallMS: time.Since(start).Milliseconds()}, err
}

// sideOf names the side a verdict chose, the pipeline's answer having been
// shown as label.
func sideOf(verdict, label string) string {
	return map[Outcome]string{Win: "pipeline", Loss: "baseline", Tie: "tie"}[fromPipeline(verdict, label)]
}

// startRun returns the ID of the pipeline run of a topic: a succeeded run
// of the same pipeline with the same parameters, mode, provider and model
// when there is one and fresh is false, else a new run recorded as running
// (which the next step resumes).
func (e *Evaluator) startRun(ctx context.Context, r *engine.Run, rec *madspark.Run, def pipeline.Definition, raw []byte, fresh bool) (string, error) {
	params, err := e.deps.Registry.Decode(def.Name, raw)
	if err != nil {
		return "", err
	}
	if !fresh {
		id, err := e.findRun(ctx, rec, def, params)
		if err != nil {
			return "", err
		}
		if id != "" {
			return id, nil
		}
	}
	info := engine.RunInfo{Pipeline: def.Name, Mode: rec.Mode, Provider: rec.Provider, Model: rec.Model, Params: params, Tags: []string{madspark.ParentTag(madspark.ParentEval, r.ID())},
		Subject: e.deps.Registry.Subject(def.Name, params)}
	child, err := e.deps.Engine.NewRecord(info, madspark.RunRunning)
	if err != nil {
		return "", err
	}
	if err := e.deps.Engine.Store.CreateRun(ctx, child); err != nil {
		return "", fmt.Errorf("record the %s run: %w", def.Name, err)
	}
	return child.ID, nil
}

// findRun returns the newest succeeded run of def with params, in rec's
// mode, provider and model, or "".
func (e *Evaluator) findRun(ctx context.Context, rec *madspark.Run, def pipeline.Definition, params pipeline.Params) (string, error) {
	want, err := canonical(params)
	if err != nil {
		return "", err
	}
	f := madspark.RunFilter{Pipeline: def.Name, Status: madspark.RunSucceeded, Limit: 200}
	// The query matches the parameters' JSON text: only a topic that JSON
	// writes as it is can narrow the search.
	if def.Topic != nil {
		if t := def.Topic(params); t != "" {
			if b, _ := json.Marshal(t); string(b) == `"`+t+`"` {
				f.Query = t
			}
		}
	}
	runs, err := e.deps.Engine.Store.Runs(ctx, f)
	if err != nil {
		return "", fmt.Errorf("look for an earlier %s run: %w", def.Name, err)
	}
	for _, run := range runs {
		if run.Mode != rec.Mode || run.Provider != rec.Provider || run.Model != rec.Model {
			continue
		}
		if got, err := canonical(run.Params); err == nil && reflect.DeepEqual(got, want) {
			return run.ID, nil
		}
	}
	return "", nil
}

// canonical is v as JSON decoded into generic values, for comparisons that
// ignore key order.
func canonical(v any) (any, error) {
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	var out any
	err := json.Unmarshal(b, &out)
	return out, err
}

// runPipeline resumes (or starts) pipeline run id on a copy of the engine
// whose client is c, so that the run's calls count in the eval's step too,
// and returns its answer. A run that succeeded already is read from the
// store.
func (e *Evaluator) runPipeline(ctx context.Context, c llm.Client, def pipeline.Definition, id string) (pipelineOut, error) {
	child := *e.deps.Engine
	child.Client = c
	start := time.Now()
	cr, err := child.Resume(ctx, id, nil)
	var rec madspark.Run
	reused := false
	switch {
	case errors.Is(err, engine.ErrNotResumable):
		got, gerr := child.Store.Run(ctx, id)
		if gerr != nil {
			return pipelineOut{}, gerr
		}
		if got.Status != madspark.RunSucceeded {
			return pipelineOut{}, fmt.Errorf("%s run %s was %s", def.Name, id, got.Status)
		}
		rec, reused = *got, true
	case err != nil:
		return pipelineOut{}, err
	default:
		params, err := e.deps.Registry.Decode(def.Name, cr.Params())
		if err != nil {
			_ = cr.Finish(ctx, nil, err)
			return pipelineOut{}, fmt.Errorf("%s run %s: %w", def.Name, id, err)
		}
		res, runErr := def.Run(ctx, cr, params)
		if err := cr.Finish(ctx, res, runErr); err != nil {
			return pipelineOut{}, err
		}
		if runErr != nil {
			return pipelineOut{}, fmt.Errorf("%s run %s failed: %w", def.Name, id, runErr)
		}
		rec = cr.Record()
	}
	wall := time.Since(start)
	if reused {
		wall = rec.FinishedAt.Sub(rec.CreatedAt)
	}
	answer, err := answerOf(def, &rec)
	if err != nil {
		return pipelineOut{}, err
	}
	out := pipelineOut{RunID: id, Answer: answer, Usage: rec.Usage, Repairs: repairsOf(rec.Result), WallMS: wall.Milliseconds(), Reused: reused}
	if reused {
		// Paid by the earlier run, not by this eval.
		out.Usage = llm.Usage{}
	}
	return out, nil
}

// repairsOf counts the repairs a pipeline's result lists.
func repairsOf(result json.RawMessage) int {
	var r struct {
		Repairs []json.RawMessage `json:"repairs"`
	}
	_ = json.Unmarshal(result, &r)
	return len(r.Repairs)
}

// answerOf is what a succeeded run delivered, as the judge reads it: its
// document in Markdown without what tells how it was made (title lines,
// notices, appendices, the sections its kind leaves out), or its result
// as JSON for a pipeline without a document.
func answerOf(def pipeline.Definition, rec *madspark.Run) (string, error) {
	if def.Document == nil {
		var v any
		if err := json.Unmarshal(rec.Result, &v); err != nil {
			return "", fmt.Errorf("%s run %s: stored result: %w", def.Name, rec.ID, err)
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b), nil
	}
	doc, err := def.Document(rec)
	if err != nil {
		return "", err
	}
	k := kindOf(def.Name)
	d := document.Document{Title: doc.Title}
	for _, s := range doc.Sections {
		if len(k.keep) > 0 && !slices.Contains(k.keep, s.Title) || slices.Contains(k.drop, s.Title) {
			continue
		}
		d.Sections = append(d.Sections, s)
	}
	return strings.TrimSpace(string(document.Markdown(&d))), nil
}

// topicOf is a topic's one line, as the pipeline names it.
func topicOf(reg *pipeline.Registry, def pipeline.Definition, raw []byte) string {
	if def.Topic != nil {
		if p, err := reg.Decode(def.Name, raw); err == nil {
			if t := def.Topic(p); t != "" {
				return t
			}
		}
	}
	return string(raw)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// summarise counts the items into a report.
func summarise(p *Params, rec *madspark.Run, items []Item) *Report {
	rep := &Report{
		RunID: rec.ID, Pipeline: p.Pipeline, Mode: rec.Mode, Provider: rec.Provider, Model: rec.Model,
		JudgeProvider: p.JudgeProvider, JudgeModel: p.JudgeModel, Topics: len(items), Items: items,
	}
	if rep.JudgeProvider == "" {
		rep.JudgeProvider = rec.Provider
	}
	if rep.JudgeModel == "" && rep.JudgeProvider == rec.Provider {
		rep.JudgeModel = rec.Model
	}
	if rec.Mode == "mock" {
		rep.Notice = MockNotice
	}
	var t Tally
	for _, it := range items {
		rep.Usage.Pipeline.add(it.PipelineUsage)
		rep.Usage.Baseline.add(it.BaselineUsage)
		rep.Usage.Judge.add(it.JudgeUsage)
		rep.PipelineRepairs += it.Repairs
		if it.Reused {
			rep.ReusedRuns++
		}
		if it.Error != "" {
			rep.Failures++
			continue
		}
		t.Add(it.Outcome, it.Consistent)
	}
	rep.Usage.Total = rep.Usage.Pipeline.Usage
	rep.Usage.Total.Add(rep.Usage.Baseline.Usage)
	rep.Usage.Total.Add(rep.Usage.Judge.Usage)
	rep.N, rep.Wins, rep.Losses, rep.Ties = t.N(), t.Wins, t.Losses, t.Ties
	rep.WinRate = round4(t.WinRate())
	lo, hi := Wilson(t.WinRate(), t.N())
	rep.CI = [2]float64{round4(lo), round4(hi)}
	rep.PositionConsistency = round4(t.Consistency())
	return rep
}

func round4(f float64) float64 {
	return float64(int64(f*10000+0.5)) / 10000
}
