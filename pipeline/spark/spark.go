// Package spark is seed 000's idea workflow: generate ideas for a topic and
// context, evaluate them, argue for and against the best, improve them and
// evaluate the improvements.
//
// Every stage is one batched LLM call covering all the ideas it handles, so a
// standard run costs exactly six calls whatever num_candidates and
// num_top_candidates are, and independent stages run concurrently, so the
// critical path is five round trips:
//
//	generate → evaluate (∥ multi-dimensional) → advocate ∥ skeptic (∥ logical inference)
//	         → improve → re-evaluate (∥ multi-dimensional)
package spark

import (
	"context"
	"embed"
	"fmt"
	"sort"
	"strings"
	"text/template"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// Pipeline runs spark workflows. It is safe for concurrent use.
type Pipeline struct {
	prompts map[string]*template.Template // by agent name

	generate *structured.Spec[ideaList]
	evaluate *structured.Spec[evaluations]
	multiDim *structured.Spec[multiDims]
	advocate *structured.Spec[advocacies]
	skeptic  *structured.Spec[skepticisms]
	infer    *structured.Spec[inferences]
	improve  *structured.Spec[improvements]
}

// New prepares the pipeline's prompts and output schemas.
func New() (*Pipeline, error) {
	p := &Pipeline{prompts: map[string]*template.Template{}}
	funcs := template.FuncMap{"dec": func(n int) int { return n - 1 }}
	for _, agent := range []string{agentGenerate, agentEvaluate, agentMultiDim, agentAdvocate, agentSkeptic, agentInfer, agentImprove} {
		file := "prompts/" + strings.TrimPrefix(agent, "spark.") + ".tmpl"
		t, err := template.New(agent).Funcs(funcs).Option("missingkey=error").ParseFS(promptFS, file)
		if err != nil {
			return nil, fmt.Errorf("spark: prompt %s: %w", file, err)
		}
		p.prompts[agent] = t
	}
	var err error
	specs := []error{}
	p.generate, err = structured.NewSpec[ideaList]("spark_ideas")
	specs = append(specs, err)
	p.evaluate, err = structured.NewSpec[evaluations]("spark_evaluations")
	specs = append(specs, err)
	p.multiDim, err = structured.NewSpec[multiDims]("spark_multidimensional")
	specs = append(specs, err)
	p.advocate, err = structured.NewSpec[advocacies]("spark_advocacy")
	specs = append(specs, err)
	p.skeptic, err = structured.NewSpec[skepticisms]("spark_skepticism")
	specs = append(specs, err)
	p.infer, err = structured.NewSpec[inferences]("spark_inference")
	specs = append(specs, err)
	p.improve, err = structured.NewSpec[improvements]("spark_improvements")
	specs = append(specs, err)
	for _, err := range specs {
		if err != nil {
			return nil, fmt.Errorf("spark: %w", err)
		}
	}
	return p, nil
}

// The inputs each agent's prompt is rendered from. They are also the step
// inputs that the journal hashes, and what the mock provider answers.
type (
	generateInput struct {
		Topic, Context string
		N              int
	}
	ideasInput struct {
		Topic, Context string
		Ideas          []Idea
	}
	reviewItem  struct{ Idea, Evaluation string }
	reviewInput struct {
		Topic, Context string
		Items          []reviewItem
	}
	improveItem  struct{ Idea, Critique, Advocacy, Skepticism, Inference string }
	improveInput struct {
		Topic, Context string
		Items          []improveItem
	}
)

// Run executes the workflow for in as run r.
func (p *Pipeline) Run(ctx context.Context, r *engine.Run, in Params) (*Result, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	t := in.Temperatures
	fb := fallbacks{allowed: in.AllowFallbacks}

	// 1. IdeaGenerator: num_candidates ideas.
	r.Emit("generate", 5, fmt.Sprintf("generating %d ideas", in.NumCandidates))
	ideas, err := engine.Step(ctx, r, "generate", generateInput{in.Topic, in.Context, in.NumCandidates},
		func(ctx context.Context, c llm.Client) ([]Idea, error) {
			out, err := call(ctx, p, c, p.generate, agentGenerate, t.Generate, in, generateInput{in.Topic, in.Context, in.NumCandidates},
				func(v *ideaList) error {
					if len(v.Ideas) < in.NumCandidates {
						return fmt.Errorf("want %d ideas, got %d", in.NumCandidates, len(v.Ideas))
					}
					return nil
				})
			return out.Ideas[:min(len(out.Ideas), in.NumCandidates)], err
		})
	if err != nil {
		return nil, stageError("generate", err)
	}
	generated := len(ideas)
	if in.NoveltyFilter {
		ideas = dropNearDuplicates(ideas, in.NoveltyThreshold)
	}
	res := &Result{Topic: in.Topic, Context: in.Context, Generated: generated, Filtered: generated - len(ideas)}

	// 2. Critic on every idea ∥ multi-dimensional evaluation.
	r.Emit("evaluate", 20, fmt.Sprintf("evaluating %d ideas", len(ideas)))
	evals, multi, err := p.assess(ctx, r, in, "evaluate", "multidim", ideas, &fb)
	if err != nil {
		return nil, err
	}

	// Select the top candidates.
	top := topIndices(evals, in.NumTopCandidates)
	cands := make([]Candidate, len(top))
	topIdeas := make([]Idea, len(top))
	review := reviewInput{Topic: in.Topic, Context: in.Context}
	for k, i := range top {
		topIdeas[k] = ideas[i]
		cands[k] = Candidate{Idea: ideas[i].String(), InitialScore: evals[i].Score, InitialCritique: evals[i].Critique}
		cands[k].Details.Initial = evals[i]
		cands[k].Details.Initial.Index = k
		if multi != nil {
			cands[k].MultiDimensionalEvaluation = multi[i]
		}
		review.Items = append(review.Items, reviewItem{Idea: ideas[i].String(), Evaluation: summarizeEvaluation(evals[i])})
	}

	// 3. Advocate ∥ Skeptic (∥ logical inference), one call each for all
	// top candidates.
	r.Emit("advocate", 45, fmt.Sprintf("arguing for and against %d ideas", len(top)))
	var (
		adv []Advocacy
		skp []Skepticism
		inf []Inference
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		adv, err = stage(gctx, r, &fb, "advocate", review, func(ctx context.Context, c llm.Client) ([]Advocacy, error) {
			out, err := call(ctx, p, c, p.advocate, agentAdvocate, t.Advocate, in, review, func(v *advocacies) (err error) {
				v.Advocacies, err = byIndex(v.Advocacies, len(review.Items))
				return err
			})
			return out.Advocacies, err
		}, func() []Advocacy { return fallbackAdvocacy(len(top)) })
		return err
	})
	g.Go(func() error {
		var err error
		skp, err = stage(gctx, r, &fb, "skeptic", review, func(ctx context.Context, c llm.Client) ([]Skepticism, error) {
			out, err := call(ctx, p, c, p.skeptic, agentSkeptic, t.Skeptic, in, review, func(v *skepticisms) (err error) {
				v.Skepticisms, err = byIndex(v.Skepticisms, len(review.Items))
				return err
			})
			return out.Skepticisms, err
		}, func() []Skepticism { return fallbackSkepticism(len(top)) })
		return err
	})
	if in.LogicalInference {
		g.Go(func() error {
			var err error
			inf, err = stage(gctx, r, &fb, "infer", review, func(ctx context.Context, c llm.Client) ([]Inference, error) {
				out, err := call(ctx, p, c, p.infer, agentInfer, t.Evaluate, in, review, func(v *inferences) (err error) {
					v.Inferences, err = byIndex(v.Inferences, len(review.Items))
					return err
				})
				return out.Inferences, err
			}, func() []Inference { return nil })
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// 4. IdeaGenerator improves every top candidate with all the feedback.
	r.Emit("improve", 65, fmt.Sprintf("improving %d ideas", len(top)))
	imp := improveInput{Topic: in.Topic, Context: in.Context}
	for k := range cands {
		cands[k].Advocacy = formatAdvocacy(adv[k])
		cands[k].Skepticism = formatSkepticism(skp[k])
		cands[k].Details.Advocacy, cands[k].Details.Skepticism = &adv[k], &skp[k]
		item := improveItem{Idea: cands[k].Idea, Critique: cands[k].InitialCritique, Advocacy: cands[k].Advocacy, Skepticism: cands[k].Skepticism}
		if inf != nil {
			cands[k].LogicalInference = &inf[k]
			item.Inference = inf[k].Conclusion
		}
		imp.Items = append(imp.Items, item)
	}
	improved, err := stage(ctx, r, &fb, "improve", imp, func(ctx context.Context, c llm.Client) ([]Improvement, error) {
		out, err := call(ctx, p, c, p.improve, agentImprove, t.Improve, in, imp, func(v *improvements) (err error) {
			v.Improvements, err = byIndex(v.Improvements, len(imp.Items))
			return err
		})
		return out.Improvements, err
	}, func() []Improvement { return fallbackImprovement(topIdeas) })
	if err != nil {
		return nil, err
	}

	// 5. Critic re-evaluates the improved ideas (∥ multi-dimensional).
	r.Emit("re_evaluate", 85, fmt.Sprintf("re-evaluating %d improved ideas", len(top)))
	improvedIdeas := make([]Idea, len(improved))
	for k, im := range improved {
		improvedIdeas[k] = Idea{Title: im.Title, Description: im.Description}
	}
	reEvals, reMulti, err := p.assess(ctx, r, in, "re_evaluate", "re_multidim", improvedIdeas, &fb)
	if err != nil {
		return nil, err
	}
	for k := range cands {
		c := &cands[k]
		c.Details.Improvement = &improved[k]
		c.ImprovedIdea = improvedIdeas[k].String()
		c.ImprovedScore, c.ImprovedCritique = reEvals[k].Score, reEvals[k].Critique
		c.Details.Improved = reEvals[k]
		c.ScoreDelta = round2(c.ImprovedScore - c.InitialScore)
		if reMulti != nil {
			c.ImprovedMultiDimensionalEvaluation = reMulti[k]
		}
		c.Fallbacks = fb.marks
		c.Fallback = len(c.Fallbacks) > 0
	}
	res.Candidates = cands
	r.Emit("done", 100, "done")
	return res, nil
}

// assess runs the Critic on ideas and, with enhanced reasoning, the
// multi-dimensional evaluation concurrently, as steps evalKey and multiKey.
func (p *Pipeline) assess(ctx context.Context, r *engine.Run, in Params, evalKey, multiKey string, ideas []Idea, fb *fallbacks) ([]Evaluation, []*MultiDimensional, error) {
	input := ideasInput{Topic: in.Topic, Context: in.Context, Ideas: ideas}
	var (
		evals []Evaluation
		multi []*MultiDimensional
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		evals, err = stage(gctx, r, fb, evalKey, input, func(ctx context.Context, c llm.Client) ([]Evaluation, error) {
			out, err := call(ctx, p, c, p.evaluate, agentEvaluate, in.Temperatures.Evaluate, in, input, func(v *evaluations) (err error) {
				v.Evaluations, err = byIndex(v.Evaluations, len(ideas))
				return err
			})
			return out.Evaluations, err
		}, func() []Evaluation { return fallbackEvaluations(len(ideas)) })
		return err
	})
	if in.EnhancedReasoning {
		g.Go(func() error {
			items, err := stage(gctx, r, fb, multiKey, input, func(ctx context.Context, c llm.Client) ([]multiDimItem, error) {
				out, err := call(ctx, p, c, p.multiDim, agentMultiDim, in.Temperatures.Evaluate, in, input, func(v *multiDims) (err error) {
					v.Evaluations, err = byIndex(v.Evaluations, len(ideas))
					return err
				})
				return out.Evaluations, err
			}, func() []multiDimItem { return nil })
			multi = make([]*MultiDimensional, len(ideas))
			for i, it := range items {
				multi[i] = newMultiDimensional(it)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return evals, multi, nil
}

// stage runs one journaled step. When it fails and fallbacks are allowed,
// the fallback value is used instead and every candidate of the stage is
// marked; otherwise the error names the stage.
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

// call renders agent's prompt from data and asks for a T.
func call[T any](ctx context.Context, p *Pipeline, c llm.Client, spec *structured.Spec[T], agent string, temp float64, in Params, data any, check func(*T) error) (T, error) {
	var sys, user strings.Builder
	tmpl := p.prompts[agent]
	if err := tmpl.ExecuteTemplate(&sys, "system", data); err != nil {
		var zero T
		return zero, fmt.Errorf("%s: prompt: %w", agent, err)
	}
	if err := tmpl.ExecuteTemplate(&user, "user", data); err != nil {
		var zero T
		return zero, fmt.Errorf("%s: prompt: %w", agent, err)
	}
	timeout := stageTimeouts[agent]
	if in.StageTimeout > 0 {
		timeout = time.Duration(float64(timeout) * in.StageTimeout)
	}
	req := llm.Request{
		Agent:       agent,
		System:      sys.String(),
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: user.String()}},
		Temperature: temp,
		Timeout:     timeout,
		Input:       data,
	}
	out, _, err := spec.Generate(ctx, c, req, check)
	return out, err
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

// topIndices returns the indices of the k best-scored evaluations, best
// first; ties keep generation order.
func topIndices(evals []Evaluation, k int) []int {
	idx := make([]int, len(evals))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return evals[idx[a]].Score > evals[idx[b]].Score })
	return idx[:min(k, len(idx))]
}
