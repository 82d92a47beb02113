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
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// Pipeline runs spark workflows. It is safe for concurrent use.
type Pipeline struct {
	generate role[ideaList]
	evaluate batch[evaluations, Evaluation, *Evaluation]
	multiDim batch[multiDims, multiDimItem, *multiDimItem]
	advocate batch[advocacies, Advocacy, *Advocacy]
	skeptic  batch[skepticisms, Skepticism, *Skepticism]
	infer    batch[inferences, Inference, *Inference]
	improve  batch[improvements, Improvement, *Improvement]
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

// StructuredAgents lists the pipeline's agents whose replies are JSON, with the
// Specs their replies are read with.
func (p *Pipeline) StructuredAgents() []structured.Agent {
	return []structured.Agent{
		{Name: agentGenerate, Spec: p.generate.spec},
		{Name: agentEvaluate, Spec: p.evaluate.spec},
		{Name: agentMultiDim, Spec: p.multiDim.spec},
		{Name: agentAdvocate, Spec: p.advocate.spec},
		{Name: agentSkeptic, Spec: p.skeptic.spec},
		{Name: agentInfer, Spec: p.infer.spec},
		{Name: agentImprove, Spec: p.improve.spec},
	}
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
		// InferenceType is the kind of logical analysis, for the
		// inference prompt only.
		InferenceType string
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
		out, err := p.generate.ask(ctx, c, in, t.Generate, gen, func(v *ideaList, p *structured.Problems) {
			checkIdeas(v, in.NumCandidates, p)
		})
		return out.Ideas, err
	})
	if err != nil {
		return nil, stageError("generate", err)
	}
	res := &Result{Topic: in.Topic, Context: in.Context, Generated: len(ideas)}
	res.Ideas = make([]GeneratedIdea, len(ideas))
	at := make([]int, 0, len(ideas)) // at[i] is ideas[i]'s index in res.Ideas
	for i, idea := range ideas {
		res.Ideas[i] = GeneratedIdea{Title: idea.Title, Description: idea.Description}
		at = append(at, i)
	}
	if in.NoveltyFilter {
		kept, dupOf := dropNearDuplicates(ideas, in.NoveltyThreshold)
		at = at[:0]
		for i, d := range dupOf {
			if d >= 0 {
				res.Ideas[i].DuplicateOf = ideas[d].Title
			} else {
				at = append(at, i)
			}
		}
		ideas = kept
		res.Filtered = res.Generated - len(ideas)
	}

	// 2. Critic scores every idea (∥ multi-dimensional evaluation).
	r.Emit("evaluate", 20, fmt.Sprintf("evaluating %d ideas", len(ideas)))
	evals, scored, multi, err := p.assess(ctx, r, fb, in, "evaluate", "multidim", ideas, func(i int) string {
		return fmt.Sprintf("idea %d left out of the ranking", i)
	})
	if err != nil {
		return nil, err
	}

	// 3. The top candidates, of the ideas scored.
	top := topIndices(evals, scored, in.NumTopCandidates)
	if len(top) == 0 {
		return nil, stageError("evaluate", errors.New("no idea was scored"))
	}
	if len(top) < in.NumTopCandidates {
		r.Repair(llm.Repair{Agent: agentRank, Rule: "count", Action: fmt.Sprintf("%d top candidates asked, %d ideas to rank: %d kept", in.NumTopCandidates, len(top), len(top))})
	}
	for i := range ideas {
		if scored[i] {
			score := evals[i].Score
			res.Ideas[at[i]].Score, res.Ideas[at[i]].Critique = &score, evals[i].Critique
		}
	}
	for k, i := range top {
		res.Ideas[at[i]].Candidate = k + 1
	}
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
		adv               []Advocacy
		skp               []Skepticism
		inf               []Inference
		hasAdv, hasSkp    []bool
		hasInf            = make([]bool, n)
		withoutAdvocacy   = func(k int) string { return fmt.Sprintf("candidate %d kept without advocacy", k) }
		withoutSkepticism = func(k int) string { return fmt.Sprintf("candidate %d kept without skepticism", k) }
		withoutInference  = func(k int) string { return fmt.Sprintf("candidate %d kept without logical inference", k) }
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		adv, hasAdv, err = p.advocate.run(gctx, r, fb, "advocate", in, t.Advocate, review, n, withoutAdvocacy, func() []Advocacy { return fallbackAdvocacy(n) })
		return err
	})
	g.Go(func() (err error) {
		skp, hasSkp, err = p.skeptic.run(gctx, r, fb, "skeptic", in, t.Skeptic, review, n, withoutSkepticism, func() []Skepticism { return fallbackSkepticism(n) })
		return err
	})
	if in.LogicalInference {
		g.Go(func() (err error) {
			ireview := review
			ireview.InferenceType = in.inferenceType()
			inf, hasInf, err = p.infer.run(gctx, r, fb, "infer", in, t.Evaluate, ireview, n, withoutInference, func() []Inference { return nil })
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
		if hasAdv[k] {
			c.Advocacy, c.Details.Advocacy = formatAdvocacy(adv[k]), &adv[k]
		}
		if hasSkp[k] {
			c.Skepticism, c.Details.Skepticism = formatSkepticism(skp[k]), &skp[k]
		}
		item := improveItem{Idea: c.Idea, Critique: c.InitialCritique, Advocacy: c.Advocacy, Skepticism: c.Skepticism}
		if hasInf[k] {
			inf[k].Type = in.inferenceType()
			c.LogicalInference = &inf[k]
			item.Inference = inf[k].Conclusion
		}
		imp.Items = append(imp.Items, item)
	}
	original := fallbackImprovement(ideas, top)
	improved, hasImp, err := p.improve.run(ctx, r, fb, "improve", in, t.Improve, imp, n, func(k int) string {
		return fmt.Sprintf("candidate %d's original idea kept as its improvement", k)
	}, func() []Improvement { return original })
	if err != nil {
		return nil, err
	}
	for k, ok := range hasImp {
		if !ok {
			improved[k] = original[k]
		}
	}

	// 6. Critic re-evaluates the improved ideas (∥ multi-dimensional).
	r.Emit("re_evaluate", 85, fmt.Sprintf("re-evaluating %d improved ideas", n))
	improvedIdeas := make([]Idea, n)
	for k, im := range improved {
		improvedIdeas[k] = Idea{Title: im.Title, Description: im.Description}
	}
	reEvals, reScored, reMulti, err := p.assess(ctx, r, fb, in, "re_evaluate", "re_multidim", improvedIdeas, func(k int) string {
		return fmt.Sprintf("improved idea %d keeps its initial score", k)
	})
	if err != nil {
		return nil, err
	}
	for k := range cands {
		c := &cands[k]
		if !reScored[k] {
			reEvals[k] = cands[k].Details.Initial
			reEvals[k].Index = k
		}
		c.Details.Improvement, c.Details.Improved = &improved[k], reEvals[k]
		c.ImprovedIdea = improvedIdeas[k].String()
		c.ImprovedScore, c.ImprovedCritique = reEvals[k].Score, reEvals[k].Critique
		c.ScoreDelta = round2(c.ImprovedScore - c.InitialScore)
		c.ImprovedMultiDimensionalEvaluation = reMulti[k]
		c.Fallbacks = fb.list()
		c.Fallback = len(c.Fallbacks) > 0
	}
	res.Candidates = cands
	res.Repairs = r.Repairs()
	r.Emit("done", 100, "done")
	return res, nil
}

// assess runs the Critic on ideas and, with enhanced reasoning, the
// multi-dimensional evaluation concurrently, as steps evalKey and multiKey.
// multi has one entry per idea, nil without enhanced reasoning.
// scored[i] is false for an idea the Critic's reply left unscored, and
// unscored(i) says what that means for the record. multi has one entry per
// idea, nil without enhanced reasoning or where the reply has none.
func (p *Pipeline) assess(ctx context.Context, r *engine.Run, fb *fallbacks, in Params, evalKey, multiKey string, ideas []Idea, unscored func(i int) string) (evals []Evaluation, scored []bool, multi []*MultiDimensional, err error) {
	input := ideasInput{Topic: in.Topic, Context: in.Context, Ideas: ideas}
	n := len(ideas)
	multi = make([]*MultiDimensional, n)
	temp := in.Temperatures.Evaluate
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		evals, scored, err = p.evaluate.run(gctx, r, fb, evalKey, in, temp, input, n, unscored, func() []Evaluation { return fallbackEvaluations(n) })
		return err
	})
	if in.EnhancedReasoning {
		g.Go(func() error {
			items, have, err := p.multiDim.run(gctx, r, fb, multiKey, in, temp, input, n, func(i int) string {
				return fmt.Sprintf("idea %d has no multi-dimensional evaluation", i)
			}, func() []multiDimItem { return nil })
			for i, it := range items {
				if have[i] {
					multi[i] = newMultiDimensional(it)
				}
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}
	return evals, scored, multi, nil
}

// topIndices returns the indices of the k best-scored evaluations among
// those scored, best first; ties keep generation order.
func topIndices(evals []Evaluation, scored []bool, k int) []int {
	var idx []int
	for i := range evals {
		if scored[i] {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return evals[idx[a]].Score > evals[idx[b]].Score })
	return idx[:min(k, len(idx))]
}

// checkIdeas is the rule of the IdeaGenerator's reply for n ideas: ideas
// with neither title nor description are dropped; more than n are cut to
// n; fewer are asked for once, then the run goes on with those there are;
// none is hard.
func checkIdeas(v *ideaList, n int, p *structured.Problems) {
	usable := 0
	for _, it := range v.Ideas {
		if strings.TrimSpace(it.Title) != "" || strings.TrimSpace(it.Description) != "" {
			usable++
		}
	}
	if blank := len(v.Ideas) - usable; blank > 0 {
		p.Fix("count", fmt.Sprintf("%d ideas are blank", blank), func() string {
			kept := v.Ideas[:0]
			for _, it := range v.Ideas {
				if strings.TrimSpace(it.Title) != "" || strings.TrimSpace(it.Description) != "" {
					kept = append(kept, it)
				}
			}
			v.Ideas = kept
			return fmt.Sprintf("blank ideas dropped: %d", blank)
		})
	}
	switch {
	case usable == 0:
		p.Hardf("count", "want %d ideas, got none", n)
	case usable > n:
		p.Fix("count", fmt.Sprintf("want %d ideas, got %d", n, usable), func() string {
			v.Ideas = v.Ideas[:n]
			return fmt.Sprintf("%d ideas cut to the %d asked", usable, n)
		})
	case usable < n:
		p.Ask("count", fmt.Sprintf("want %d ideas, got %d", n, usable), func() string {
			return fmt.Sprintf("%d ideas kept of %d asked", usable, n)
		})
	}
}
