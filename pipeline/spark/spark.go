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
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
)

// Pipeline runs spark workflows. It is safe for concurrent use.
type Pipeline struct {
	generate role[ideaList]
	evaluate batch[evaluations, Evaluation]
	multiDim batch[multiDims, multiDimItem]
	advocate batch[advocacies, Advocacy]
	skeptic  batch[skepticisms, Skepticism]
	infer    batch[inferences, Inference]
	improve  batch[improvements, Improvement]
}

// New prepares the pipeline's prompts and output schemas.
func New() (*Pipeline, error) {
	var p Pipeline
	var errs [7]error
	p.generate, errs[0] = newRole[ideaList](agentGenerate, "spark_ideas")
	p.evaluate.role, errs[1] = newRole[evaluations](agentEvaluate, "spark_evaluations")
	p.evaluate.items = func(w *evaluations) *[]Evaluation { return &w.Evaluations }
	p.multiDim.role, errs[2] = newRole[multiDims](agentMultiDim, "spark_multidimensional")
	p.multiDim.items = func(w *multiDims) *[]multiDimItem { return &w.Evaluations }
	p.advocate.role, errs[3] = newRole[advocacies](agentAdvocate, "spark_advocacy")
	p.advocate.items = func(w *advocacies) *[]Advocacy { return &w.Advocacies }
	p.skeptic.role, errs[4] = newRole[skepticisms](agentSkeptic, "spark_skepticism")
	p.skeptic.items = func(w *skepticisms) *[]Skepticism { return &w.Skepticisms }
	p.infer.role, errs[5] = newRole[inferences](agentInfer, "spark_inference")
	p.infer.items = func(w *inferences) *[]Inference { return &w.Inferences }
	p.improve.role, errs[6] = newRole[improvements](agentImprove, "spark_improvements")
	p.improve.items = func(w *improvements) *[]Improvement { return &w.Improvements }
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("spark: %w", err)
	}
	return &p, nil
}

// The inputs each agent's prompt is rendered from. They are also the step
// inputs that the journal hashes, and what the mock provider answers.
type (
	generateInput struct {
		Topic, Context string
		N              int
		// SeedIdeas are left out of the journal's hash when empty, so
		// that runs without them hash as before.
		SeedIdeas []string `json:",omitempty"`
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
	fb := &fallbacks{allowed: in.AllowFallbacks}

	// 1. IdeaGenerator: num_candidates ideas, near-duplicates dropped.
	msg := fmt.Sprintf("generating %d ideas", in.NumCandidates)
	if len(in.SeedIdeas) > 0 {
		msg += fmt.Sprintf(" from %d seed ideas", len(in.SeedIdeas))
	}
	r.Emit("generate", 5, msg)
	gen := generateInput{Topic: in.Topic, Context: in.Context, N: in.NumCandidates, SeedIdeas: in.SeedIdeas}
	ideas, err := engine.Step(ctx, r, "generate", gen, func(ctx context.Context, c llm.Client) ([]Idea, error) {
		out, err := p.generate.ask(ctx, c, in, t.Generate, gen, func(v *ideaList) error {
			if len(v.Ideas) < in.NumCandidates {
				return fmt.Errorf("want %d ideas, got %d", in.NumCandidates, len(v.Ideas))
			}
			v.Ideas = v.Ideas[:in.NumCandidates]
			return nil
		})
		return out.Ideas, err
	})
	if err != nil {
		return nil, stageError("generate", err)
	}
	res := &Result{Topic: in.Topic, Context: in.Context, Generated: len(ideas)}
	if in.NoveltyFilter {
		ideas = dropNearDuplicates(ideas, in.NoveltyThreshold)
		res.Filtered = res.Generated - len(ideas)
	}

	// 2. Critic scores every idea (∥ multi-dimensional evaluation).
	r.Emit("evaluate", 20, fmt.Sprintf("evaluating %d ideas", len(ideas)))
	evals, multi, err := p.assess(ctx, r, fb, in, "evaluate", "multidim", ideas)
	if err != nil {
		return nil, err
	}

	// 3. The top candidates.
	top := topIndices(evals, in.NumTopCandidates)
	cands := make([]Candidate, len(top))
	review := reviewInput{Topic: in.Topic, Context: in.Context}
	for k, i := range top {
		cands[k] = Candidate{Idea: ideas[i].String(), InitialScore: evals[i].Score, InitialCritique: evals[i].Critique, MultiDimensionalEvaluation: multi[i]}
		cands[k].Details.Initial = evals[i]
		review.Items = append(review.Items, reviewItem{Idea: ideas[i].String(), Evaluation: summarizeEvaluation(evals[i])})
	}
	n := len(top)

	// 4. Advocate ∥ Skeptic (∥ logical inference), one call each for all
	// top candidates.
	r.Emit("advocate", 45, fmt.Sprintf("arguing for and against %d ideas", n))
	var (
		adv []Advocacy
		skp []Skepticism
		inf []Inference
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		adv, err = p.advocate.run(gctx, r, fb, "advocate", in, t.Advocate, review, n, func() []Advocacy { return fallbackAdvocacy(n) })
		return err
	})
	g.Go(func() (err error) {
		skp, err = p.skeptic.run(gctx, r, fb, "skeptic", in, t.Skeptic, review, n, func() []Skepticism { return fallbackSkepticism(n) })
		return err
	})
	if in.LogicalInference {
		g.Go(func() (err error) {
			inf, err = p.infer.run(gctx, r, fb, "infer", in, t.Evaluate, review, n, func() []Inference { return nil })
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// 5. IdeaGenerator improves every candidate with all the feedback.
	r.Emit("improve", 65, fmt.Sprintf("improving %d ideas", n))
	imp := improveInput{Topic: in.Topic, Context: in.Context}
	for k := range cands {
		c := &cands[k]
		c.Advocacy, c.Skepticism = formatAdvocacy(adv[k]), formatSkepticism(skp[k])
		c.Details.Advocacy, c.Details.Skepticism = &adv[k], &skp[k]
		item := improveItem{Idea: c.Idea, Critique: c.InitialCritique, Advocacy: c.Advocacy, Skepticism: c.Skepticism}
		if inf != nil {
			c.LogicalInference = &inf[k]
			item.Inference = inf[k].Conclusion
		}
		imp.Items = append(imp.Items, item)
	}
	improved, err := p.improve.run(ctx, r, fb, "improve", in, t.Improve, imp, n, func() []Improvement { return fallbackImprovement(ideas, top) })
	if err != nil {
		return nil, err
	}

	// 6. Critic re-evaluates the improved ideas (∥ multi-dimensional).
	r.Emit("re_evaluate", 85, fmt.Sprintf("re-evaluating %d improved ideas", n))
	improvedIdeas := make([]Idea, n)
	for k, im := range improved {
		improvedIdeas[k] = Idea{Title: im.Title, Description: im.Description}
	}
	reEvals, reMulti, err := p.assess(ctx, r, fb, in, "re_evaluate", "re_multidim", improvedIdeas)
	if err != nil {
		return nil, err
	}
	for k := range cands {
		c := &cands[k]
		c.Details.Improvement, c.Details.Improved = &improved[k], reEvals[k]
		c.ImprovedIdea = improvedIdeas[k].String()
		c.ImprovedScore, c.ImprovedCritique = reEvals[k].Score, reEvals[k].Critique
		c.ScoreDelta = round2(c.ImprovedScore - c.InitialScore)
		c.ImprovedMultiDimensionalEvaluation = reMulti[k]
		c.Fallbacks = fb.list()
		c.Fallback = len(c.Fallbacks) > 0
	}
	res.Candidates = cands
	r.Emit("done", 100, "done")
	return res, nil
}

// assess runs the Critic on ideas and, with enhanced reasoning, the
// multi-dimensional evaluation concurrently, as steps evalKey and multiKey.
// multi has one entry per idea, nil without enhanced reasoning.
func (p *Pipeline) assess(ctx context.Context, r *engine.Run, fb *fallbacks, in Params, evalKey, multiKey string, ideas []Idea) (evals []Evaluation, multi []*MultiDimensional, err error) {
	input := ideasInput{Topic: in.Topic, Context: in.Context, Ideas: ideas}
	n := len(ideas)
	multi = make([]*MultiDimensional, n)
	temp := in.Temperatures.Evaluate
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		evals, err = p.evaluate.run(gctx, r, fb, evalKey, in, temp, input, n, func() []Evaluation { return fallbackEvaluations(n) })
		return err
	})
	if in.EnhancedReasoning {
		g.Go(func() error {
			items, err := p.multiDim.run(gctx, r, fb, multiKey, in, temp, input, n, func() []multiDimItem { return nil })
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
