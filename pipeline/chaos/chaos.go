// Package chaos is seed 001's creativity workflow. Each iteration:
//
//	chaos generator (plain text, from randomly sampled seed concepts)
//	  → creative track A → refinement A  ┐ (the two tracks run concurrently)
//	  → creative track B → refinement B  ┘
//	  → judge (strict JSON, validated against the seed's schema)
//	  → memory: accepted ideas are remembered across iterations and runs and
//	    fed back to the next creative prompts; near-duplicates of remembered
//	    ideas are rejected as such
//	  → shared state (judge_results_iteration_N, total_accepted_ideas,
//	    ideas_memory_file)
//
// An iteration is six LLM calls on a critical path of four. --evolve adds a
// recombination pass (3 calls) and --tournament ranks the accepted ideas by
// batched pairwise comparison (⌈log₂ n⌉ calls).
package chaos

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// Agent names.
const (
	agentChaos    = "chaos.chaos"
	agentCreative = "chaos.creative"
	agentRefine   = "chaos.refine"
	agentJudge    = "chaos.judge"
	agentCompare  = "chaos.compare"
	agentEvolve   = "chaos.evolve"
)

// Temperatures of the roles that have no flag: the chaos generator runs hot,
// the refiners and judges cool.
const (
	tempChaos   = 1.2
	tempRefine  = 0.4
	tempJudge   = 0.2
	tempCompare = 0.2
	tempEvolve  = 0.9
)

// stageTimeout bounds each call.
const stageTimeout = 90 * time.Second

// rememberedInPrompt caps how many remembered ideas a prompt lists.
const rememberedInPrompt = 50

// Pipeline runs chaos workflows. It is safe for concurrent use.
type Pipeline struct {
	ideas madspark.IdeaStore

	chaos, creative, refine, judge, compare, evolve *agent.Agent

	judgement *structured.Spec[Judgement]
	verdicts  *structured.Spec[comparisons]
}

// New prepares the pipeline; accepted ideas are remembered in ideas.
func New(ideas madspark.IdeaStore) (*Pipeline, error) {
	p := &Pipeline{ideas: ideas}
	var err error
	for _, a := range []struct {
		dst  **agent.Agent
		name string
	}{{&p.chaos, agentChaos}, {&p.creative, agentCreative}, {&p.refine, agentRefine}, {&p.judge, agentJudge}, {&p.compare, agentCompare}, {&p.evolve, agentEvolve}} {
		file := "prompts/" + a.name[len("chaos."):] + ".tmpl"
		if *a.dst, err = agent.New(promptFS, a.name, file); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	if p.judgement, err = structured.NewSpec[Judgement]("chaos_judgement"); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if p.verdicts, err = structured.NewSpec[comparisons]("chaos_comparisons"); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	p.verdicts.WithSynonyms(map[string]string{"first": "a", "second": "b", "idea a": "a", "idea b": "b", "option a": "a", "option b": "b"})
	return p, nil
}

// StructuredAgents lists the pipeline's agents whose replies are JSON, with the
// Specs their replies are read with.
func (p *Pipeline) StructuredAgents() []structured.Agent {
	return []structured.Agent{{Name: agentJudge, Spec: p.judgement}, {Name: agentCompare, Spec: p.verdicts}}
}

// The inputs each agent's prompt is rendered from; also what the journal
// hashes and the mock answers.
type (
	chaosInput struct {
		Prompt string
		Seeds  []string
	}
	creativeInput struct {
		Prompt, Track, Style, Chaos string
		Remembered                  []string
		TotalAccepted, N, Iteration int
	}
	refineInput struct{ Prompt, Track, Ideas string }
	judgeInput  struct {
		Prompt, RefinementA, RefinementB string
		Remembered                       []string
		Threshold                        float64
	}
	pair         struct{ A, B string }
	compareInput struct {
		Prompt string
		Pairs  []pair
	}
	evolveInput struct {
		Prompt  string
		Parents []string
		N       int
	}
)

// Track styles: A is bold and runs hot, B is grounded and runs cooler.
const (
	styleA = "bold, unconventional, willing to break assumptions"
	styleB = "practical and grounded, favouring ideas that can start next month"
)

// IterationFunc is told about each finished iteration and the memory after
// it, so the caller can write files as the run goes.
type IterationFunc func(it Iteration, memory []madspark.RememberedIdea) error

// Run executes in.Iterations iterations (and the optional evolution and
// tournament) as run r. done, if not nil, is called after each iteration.
// When the evolution or the tournament fails, Run returns the error with
// the result so far (the finished iterations), its FailedStep set; when
// ctx ends during an iteration after others finished (the run was
// cancelled), it returns the error with the finished iterations.
func (p *Pipeline) Run(ctx context.Context, r *engine.Run, in Params, done IterationFunc) (*Result, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	m := &memory{store: p.ideas, name: in.MemoryName(), runID: r.ID()}
	if err := m.load(ctx); err != nil {
		return nil, err
	}
	res := &Result{Prompt: in.Prompt, Memory: m.name, Threshold: in.AcceptThreshold, SharedState: map[string]any{
		"ideas_memory_file":    in.MemoryFile,
		"total_accepted_ideas": len(m.ideas),
	}}
	passes := in.Iterations
	if in.Evolve {
		passes++
	}
	for n := 1; n <= in.Iterations; n++ {
		base := (n - 1) * 100 / passes
		r.Emit(fmt.Sprintf("iteration %d", n), base, "chaos generator")
		it, err := p.iterate(ctx, r, in, n, m, res, base, 100/passes)
		if err != nil {
			if ctx.Err() != nil && len(res.Iterations) > 0 {
				// Stopped (cancelled) part way: the finished iterations
				// are kept with the run.
				res.Repairs = r.Repairs()
				return res, fmt.Errorf("iteration %d: %w", n, err)
			}
			return nil, fmt.Errorf("iteration %d: %w", n, err)
		}
		if err := p.finish(ctx, r, it, m, res, done); err != nil {
			return nil, err
		}
	}
	if in.Evolve {
		r.Emit("evolve", in.Iterations*100/passes, "recombining the best ideas")
		it, err := p.evolvePass(ctx, r, in, in.Iterations+1, m, res)
		if err != nil {
			res.FailedStep, res.Repairs = "evolve", r.Repairs()
			return res, fmt.Errorf("evolve: %w", err)
		}
		if it != nil {
			if err := p.finish(ctx, r, *it, m, res, done); err != nil {
				return nil, err
			}
		}
	}
	if in.Tournament {
		r.Emit("tournament", 95, fmt.Sprintf("ranking %d ideas", len(res.Accepted)))
		t, err := p.tournament(ctx, r, in, res.Accepted)
		if err != nil {
			// The iterations are done and kept; the run fails at the
			// tournament, and resuming it replays them and runs only that.
			res.FailedStep, res.Repairs = "tournament", r.Repairs()
			return res, fmt.Errorf("tournament: %w", err)
		}
		res.Tournament = t
	}
	res.Repairs = r.Repairs()
	r.Emit("done", 100, "done")
	return res, nil
}

// finish records an iteration: the shared state is updated and journaled,
// and the caller is told.
func (p *Pipeline) finish(ctx context.Context, r *engine.Run, it Iteration, m *memory, res *Result, done IterationFunc) error {
	res.Iterations = append(res.Iterations, it)
	res.Accepted = append(res.Accepted, it.Judgement.AcceptedIdeas...)
	accepted, rejected := []string{}, []string{}
	for _, a := range it.Judgement.AcceptedIdeas {
		accepted = append(accepted, a.IdeaName)
	}
	for _, j := range it.Judgement.RejectedIdeas {
		rejected = append(rejected, j.IdeaName)
	}
	res.SharedState[fmt.Sprintf("judge_results_iteration_%d", it.Number)] = map[string]any{
		"accepted_count": len(accepted), "rejected_count": len(rejected),
		"accepted_ideas": accepted, "rejected_ideas": rejected,
	}
	res.SharedState["total_accepted_ideas"] = len(m.ideas)
	state := res.SharedState
	if _, err := engine.Step(ctx, r, fmt.Sprintf("i%d/shared_state", it.Number), state,
		func(context.Context, llm.Client) (map[string]any, error) { return state, nil }); err != nil {
		return err
	}
	if done != nil {
		if err := done(it, m.ideas); err != nil {
			return fmt.Errorf("iteration %d: %w", it.Number, err)
		}
	}
	return nil
}

// iterate runs one iteration: chaos → (creative → refinement) × 2 → judge →
// memory.
func (p *Pipeline) iterate(ctx context.Context, r *engine.Run, in Params, n int, m *memory, res *Result, base, span int) (Iteration, error) {
	key := func(s string) string { return fmt.Sprintf("i%d/%s", n, s) }
	it := Iteration{Number: n, Seeds: sampleSeeds(in.Seed, n, in.ChaosSeeds)}

	// 1. Chaos generator.
	ci := chaosInput{Prompt: in.Prompt, Seeds: it.Seeds}
	chaos, err := p.text(ctx, r, key("chaos"), p.chaos, ci, agent.Options{Temperature: tempChaos}, nil)
	if err != nil {
		return it, err
	}
	it.Chaos = chaos

	// 2-3. Two creative tracks, each refined as soon as it is done.
	r.Emit(fmt.Sprintf("iteration %d", n), base+span/4, "creative tracks A and B")
	remembered, total := m.names(rememberedInPrompt), len(m.ideas)
	track := func(name, style, model string, temp float64, creative, refinement *string) func() error {
		return func() error {
			cin := creativeInput{Prompt: in.Prompt, Track: name, Style: style, Chaos: chaos, Remembered: remembered, TotalAccepted: total, N: in.IdeasPerTrack, Iteration: n}
			var err error
			if *creative, err = p.text(ctx, r, key("creative_"+name), p.creative, cin, agent.Options{Temperature: temp, Model: model}, ideaCount(in.IdeasPerTrack)); err != nil {
				return err
			}
			*refinement, err = p.text(ctx, r, key("refine_"+name), p.refine, refineInput{Prompt: in.Prompt, Track: name, Ideas: *creative}, agent.Options{Temperature: tempRefine}, nil)
			return err
		}
	}
	var g errgroup.Group
	g.Go(track("a", styleA, in.ModelA, in.TempA, &it.CreativeA, &it.RefinementA))
	g.Go(track("b", styleB, in.ModelB, in.TempB, &it.CreativeB, &it.RefinementB))
	if err := g.Wait(); err != nil {
		return it, err
	}

	// 4-5. Judge, then memory.
	r.Emit(fmt.Sprintf("iteration %d", n), base+3*span/4, "judge")
	it.Judgement, it.Duplicates, err = p.judgeAndRemember(ctx, r, in, key("judge"), n, it.RefinementA, it.RefinementB, m)
	return it, err
}

// judgeAndRemember asks the judge, rejects near-duplicates of remembered
// ideas, and remembers the rest.
func (p *Pipeline) judgeAndRemember(ctx context.Context, r *engine.Run, in Params, key string, n int, refA, refB string, m *memory) (Judgement, int, error) {
	ji := judgeInput{Prompt: in.Prompt, RefinementA: refA, RefinementB: refB, Remembered: m.names(rememberedInPrompt), Threshold: in.AcceptThreshold}
	j, err := engine.Step(ctx, r, key, ji, func(ctx context.Context, c llm.Client) (Judgement, error) {
		return agent.JSON(ctx, c, p.judge, p.judgement, ji, agent.Options{Temperature: tempJudge, Timeout: stageTimeout},
			func(j *Judgement, p *structured.Problems) { j.rules(in.AcceptThreshold, p) })
	})
	if err != nil {
		return j, 0, err
	}
	dups := m.rejectDuplicates(&j)
	if err := m.remember(ctx, j.AcceptedIdeas, n); err != nil {
		return j, dups, err
	}
	return j, dups, nil
}

// evolvePass recombines the run's best accepted ideas into new candidates,
// then refines and judges them like any others. It returns nil when fewer
// than two ideas were accepted.
func (p *Pipeline) evolvePass(ctx context.Context, r *engine.Run, in Params, n int, m *memory, res *Result) (*Iteration, error) {
	best := append([]AcceptedIdea(nil), res.Accepted...)
	if len(best) < 2 {
		r.Emit("evolve", -1, "fewer than two accepted ideas: nothing to recombine")
		return nil, nil
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].QualityScore > best[j].QualityScore })
	ei := evolveInput{Prompt: in.Prompt, N: 3}
	for _, a := range best[:min(4, len(best))] {
		ei.Parents = append(ei.Parents, describe(a))
	}
	it := Iteration{Number: n, Evolved: true}
	var err error
	if it.CreativeA, err = p.text(ctx, r, "evolve/recombine", p.evolve, ei, agent.Options{Temperature: tempEvolve}, ideaCount(ei.N)); err != nil {
		return nil, err
	}
	if it.RefinementA, err = p.text(ctx, r, "evolve/refine", p.refine, refineInput{Prompt: in.Prompt, Track: "evolved", Ideas: it.CreativeA}, agent.Options{Temperature: tempRefine}, nil); err != nil {
		return nil, err
	}
	if it.Judgement, it.Duplicates, err = p.judgeAndRemember(ctx, r, in, "evolve/judge", n, it.RefinementA, "", m); err != nil {
		return nil, err
	}
	return &it, nil
}

// text runs a plain-text agent as a journaled step, its reply read with
// check (nil for none). The reply is prose by design: an empty one is
// asked for once more, one cut off at the length limit asked once and
// then kept.
func (p *Pipeline) text(ctx context.Context, r *engine.Run, key string, a *agent.Agent, input any, o agent.Options, check func(*string, *structured.Problems)) (string, error) {
	if o.Timeout == 0 {
		o.Timeout = stageTimeout
	}
	return engine.Step(ctx, r, key, struct {
		Input any
		Model string
		Temp  float64
	}{input, o.Model, o.Temperature}, func(ctx context.Context, c llm.Client) (string, error) {
		return a.CheckedText(ctx, c, input, o, check)
	})
}

// numberedItem matches the start of an item of a numbered list: "3. ",
// "3) ", "**3.** ".
var numberedItem = regexp.MustCompile(`(?m)^[ \t]*(?:\*\*)?\d{1,2}[.)](?:\*\*)?[ \t]+`)

// ideaCount is the rule of a creative reply asked for n ideas as a numbered
// list: fewer are kept as they are, more are cut after the n-th, and either
// is recorded ("count"). A reply that is not a numbered list is kept whole.
func ideaCount(n int) func(*string, *structured.Problems) {
	return func(text *string, p *structured.Problems) {
		items := numberedItem.FindAllStringIndex(*text, -1)
		switch {
		case len(items) == 0 || len(items) == n:
		case len(items) < n:
			got := len(items)
			p.Fix("count", fmt.Sprintf("%d ideas, %d asked", got, n), func() string {
				return fmt.Sprintf("%d ideas kept of %d asked", got, n)
			})
		default:
			got, cut := len(items), items[n][0]
			p.Fix("count", fmt.Sprintf("%d ideas, %d asked", got, n), func() string {
				*text = strings.TrimSpace((*text)[:cut])
				return fmt.Sprintf("%d ideas cut to the %d asked", got, n)
			})
		}
	}
}

// describe renders an accepted idea in one line for a prompt.
func describe(a AcceptedIdea) string {
	b, _ := json.Marshal(a.KeyPoints)
	return fmt.Sprintf("%s (quality %.1f): %s", a.IdeaName, a.QualityScore, b)
}
