// Package assess is seed 004's business-idea evaluator. One idea's run:
//
//	web research (optional): the analyst proposes queries; the searches run
//	    concurrently; their results are the only URLs the analysis may cite
//	iteration n = 1 … max_iterations:
//	    analyst   writes iterations/iteration_n.md (revisions read the feedback);
//	              analysis.md now points at it
//	    reviewer  ∥ fact checker (optional) write reviewer_feedback_iteration_n.json
//	              and fact_check_iteration_n.json
//	    every reviewer approves → stop; otherwise the next iteration revises
//	judge (optional): seven criteria graded A-F → a weighted score → evaluation.json
//
// and Pipeline.Synthesize ranks every judged analysis under the output
// directory and has the synthesizer explain the top ones.
//
// Files follow the seed's layout under Params.OutputDir: analyses/{slug}/
// (iterations, analysis.md, metadata.json, evaluation.json) and
// logs/runs/{timestamp}_{slug}/ (messages.jsonl, run_summary.json). Each is
// written atomically, so a crash or Ctrl-C leaves whole files only.
package assess

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/renameio/v2"
	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/structured"
)

// Temperatures and time limits of the roles.
const (
	tempResearch    = 0.3
	tempAnalyst     = 0.7
	tempReviewer    = 0.3
	tempFactChecker = 0.2
	tempJudge       = 0.2
	tempSynthesizer = 0.4

	analystTimeout = 6 * time.Minute
	stageTimeout   = 3 * time.Minute
)

// Web research limits: results asked for per query, and sources kept.
const (
	resultsPerQuery   = 5
	maxSources        = 30
	searchConcurrency = 4
)

// NoSearchNote is the note of a run without a search provider.
const NoSearchNote = "web tools off: set TAVILY_API_KEY or BRAVE_API_KEY to enable them"

// analystMaxTokens is the reply cap of the analyst: room for well over
// min_words words of markdown.
func analystMaxTokens(minWords int) int {
	return min(max(minWords*4, 8192), 32000)
}

// Config is what a Pipeline needs from its surroundings.
type Config struct {
	// Searcher runs the analyst's web searches; nil means no web tools.
	Searcher search.Provider
	// NoSearchNote says why there is no Searcher; empty means NoSearchNote.
	NoSearchNote string
	// Mock marks every file the pipeline writes as mock data.
	Mock bool
	// Logger may be nil.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Symlink replaces newname by a symbolic link to oldname atomically;
	// nil means renameio.Symlink. Where it fails, analysis.md is a copy.
	Symlink func(oldname, newname string) error
}

// Pipeline assesses ideas. It is safe for concurrent use: a batch runs many
// ideas on one Pipeline.
type Pipeline struct {
	cfg Config

	plan      *structured.Spec[researchPlan]
	feedback  *structured.Spec[Feedback]
	factCheck *structured.Spec[FactCheck]
	judgement *structured.Spec[Judgement]
	narrative *structured.Spec[Narrative]

	mu   sync.Mutex
	busy map[string]bool // analysis directories of runs in progress
}

// New prepares a pipeline.
func New(cfg Config) (*Pipeline, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Symlink == nil {
		cfg.Symlink = renameio.Symlink
	}
	if cfg.NoSearchNote == "" {
		cfg.NoSearchNote = NoSearchNote
	}
	p := &Pipeline{cfg: cfg, busy: map[string]bool{}}
	var err error
	if p.plan, err = structured.NewSpec[researchPlan]("assess_research_plan"); err != nil {
		return nil, fmt.Errorf("assess: %w", err)
	}
	if p.feedback, err = structured.NewSpec[Feedback]("assess_reviewer_feedback"); err != nil {
		return nil, fmt.Errorf("assess: %w", err)
	}
	p.feedback.WithSynonyms(verdictSynonyms)
	if p.factCheck, err = structured.NewSpec[FactCheck]("assess_fact_check"); err != nil {
		return nil, fmt.Errorf("assess: %w", err)
	}
	p.factCheck.WithSynonyms(verdictSynonyms)
	if p.judgement, err = structured.NewSpec[Judgement]("assess_judgement"); err != nil {
		return nil, fmt.Errorf("assess: %w", err)
	}
	p.judgement.WithSynonyms(judgeSynonyms)
	if p.narrative, err = structured.NewSpec[Narrative]("assess_synthesis"); err != nil {
		return nil, fmt.Errorf("assess: %w", err)
	}
	return p, nil
}

// StructuredAgents lists the pipeline's agents whose replies are JSON, with the
// Specs their replies are read with: the analyst's is its research plan.
func (p *Pipeline) StructuredAgents() []structured.Agent {
	return []structured.Agent{
		{Name: agentAnalyst, Spec: p.plan}, {Name: agentReviewer, Spec: p.feedback}, {Name: agentFactChecker, Spec: p.factCheck},
		{Name: agentJudge, Spec: p.judgement}, {Name: agentSynthesizer, Spec: p.narrative},
	}
}

func (p *Pipeline) mode() string {
	if p.cfg.Mock {
		return "mock"
	}
	return "live"
}

// The inputs each agent's prompt is rendered from; also what the journal
// hashes and the mock answers.
type (
	source struct {
		N                   int
		Title, URL, Snippet string
	}
	researchInput struct {
		Idea     string
		Max      int
		Sections []Section
	}
	analystInput struct {
		Idea      string
		Iteration int
		MinWords  int
		Sections  []Section
		Sources   []source
		// Previous, Feedback and FactIssues are set for a revision.
		Previous   string
		Feedback   *Feedback
		FactIssues []Claim
	}
	reviewInput struct {
		Idea                     string
		Iteration, MaxIterations int
		Strictness               string
		Analysis                 string
		Words, MinWords          int
		Sections                 []Section
		Previous                 *Feedback
	}
	factCheckInput struct {
		Idea      string
		Iteration int
		Analysis  string
		Sources   []source
	}
	judgeInput struct {
		Idea       string
		Analysis   string
		Iterations int
		Approved   bool
		Sources    []source
		Criteria   []Criterion
	}
)

// researchPlan is the analyst's plan of web searches.
type researchPlan struct {
	Queries []plannedQuery `json:"queries" jsonschema:"minItems=1,maxItems=20"`
}

type plannedQuery struct {
	Query   string `json:"query" jsonschema:"minLength=3,maxLength=300"`
	Purpose string `json:"purpose" jsonschema:"minLength=1"`
}

// stepInput is what a step's journal entry is keyed on: the agent's input
// and its prompts' fingerprint.
type stepInput struct {
	Input  any    `json:"input"`
	Prompt string `json:"prompt"`
}

// Run assesses in.Idea as run r: research, the analyst ⇄ reviewer loop, the
// judge, as in.Mode asks, writing each file as soon as it is known.
func (p *Pipeline) Run(ctx context.Context, r *engine.Run, in Params) (_ *Result, err error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	agents, err := loadRoster(in)
	if err != nil {
		return nil, err
	}
	s, err := p.open(r, in, agents)
	if err != nil {
		return nil, err
	}
	defer func() { err = s.close(err) }()
	return s.run(ctx)
}

// session is one run in progress: what it has done and where it writes.
type session struct {
	p      *Pipeline
	r      *engine.Run
	in     Params
	agents *roster
	ws     *workspace
	rec    *recorder
	out    *writer // the run's files, written off the critical path
	marked uint64  // the files given before the step under way began
	meta   Metadata
	res    *Result
	start  time.Time

	sources []source
	urls    []string // every URL the searches returned
	units   int      // progress: stages in all
	done    int      // progress: stages done
}

// run is the pipeline, top to bottom.
func (s *session) run(ctx context.Context) (*Result, error) {
	// 1. Web research, when there are web tools.
	if err := s.research(ctx); err != nil {
		return nil, err
	}

	// 2. The analyst ⇄ reviewer loop.
	for n := 1; n <= s.iterations(); n++ {
		it, err := s.analyse(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", n, err)
		}
		if !s.in.Mode.Reviews() {
			s.res.StopReason = StopNoReview
			break
		}
		if err := s.review(ctx, it); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", n, err)
		}
		if it.Approved(s.in.FactCheck) {
			s.res.Approved, s.res.StopReason = true, StopApproved
			break
		}
		s.res.StopReason = StopMaxIterations
	}
	s.meta.Approved, s.meta.StopReason = s.res.Approved, s.res.StopReason

	// 3. The judge.
	if s.in.Mode.Judges() {
		if err := s.judge(ctx); err != nil {
			return nil, err
		}
	}
	s.res.Repairs = s.r.Repairs()
	s.r.Emit("done", 100, "done")
	return s.res, nil
}

// iterations is how many times the loop may run.
func (s *session) iterations() int {
	if !s.in.Mode.Reviews() {
		return 1
	}
	return s.in.MaxIterations
}

// open claims the idea's analysis directory, creates the run's log
// directory and writes the first metadata.json.
func (p *Pipeline) open(r *engine.Run, in Params, agents *roster) (*session, error) {
	start := p.cfg.Now()
	p.mu.Lock()
	slug, dir, err := claimDir(in.OutputDir, in.Idea, func(d string) bool { return p.busy[d] }, start)
	if err == nil {
		p.busy[dir] = true
	}
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	release := func() {
		p.mu.Lock()
		delete(p.busy, dir)
		p.mu.Unlock()
	}
	logDir, err := makeLogDir(in.OutputDir, slug, start)
	if err != nil {
		release()
		return nil, err
	}
	ws := &workspace{root: in.OutputDir, slug: slug, dir: dir, logDir: logDir, symlink: p.cfg.Symlink}
	out := newWriter()
	s := &session{p: p, r: r, in: in, agents: agents, ws: ws, start: start, out: out,
		rec: newRecorder(filepath.Join(logDir, messagesFile), p.cfg.Now, func(path string, data []byte) error {
			out.write(path, bytes.Clone(data))
			return nil
		})}
	s.res = &Result{Idea: in.Idea, Slug: slug, Mode: in.Mode, FactCheck: in.FactCheck, Strictness: in.Strictness,
		Mock: p.cfg.Mock, Iterations: []Iteration{}, Repairs: []llm.Repair{}, OutputDir: in.OutputDir, Files: Files{
			Dir: ws.rel(dir), Analysis: ws.rel(ws.path(analysisFile)), Metadata: ws.rel(ws.path(metadataFile)),
			LogDir: ws.rel(logDir), Messages: ws.rel(filepath.Join(logDir, messagesFile)), Summary: ws.rel(filepath.Join(logDir, summaryFile)),
		}}
	s.meta = Metadata{Idea: in.Idea, Slug: slug, RunID: r.ID(), PipelineMode: in.Mode, FactCheck: in.FactCheck,
		Mode: p.mode(), Status: "running", CreatedAt: start.UTC(), Iterations: []IterationMeta{},
		LogDir: s.res.Files.LogDir, Prompts: agents.sources, Params: in}
	s.units = s.iterations()
	if in.Mode.Reviews() {
		s.units *= 2
	}
	if in.Mode.Judges() {
		s.units++
	}
	if !in.NoWebTools && p.cfg.Searcher != nil {
		s.units += 2
	}
	// The first metadata.json is written before any call, so that an
	// output directory that cannot be written fails the run at once.
	s.meta.UpdatedAt = p.cfg.Now().UTC()
	if err := atomicfile.WriteJSON(s.ws.path(metadataFile), s.meta); err != nil {
		release()
		return nil, err
	}
	s.ws.release = release
	return s, nil
}

// close records the run's outcome in metadata.json and run_summary.json,
// waits until every file is written, and releases the analysis directory.
// It returns runErr, or the first error writing the files.
func (s *session) close(runErr error) error {
	defer s.ws.release()
	s.meta.Status = "succeeded"
	if runErr != nil {
		s.meta.Status, s.meta.Error = "failed", runErr.Error()
	}
	errs := []error{runErr, s.saveMeta(), s.rec.flush()}
	agents, total := s.rec.stats()
	end := s.p.cfg.Now()
	sum := RunSummary{RunID: s.r.ID(), Idea: s.in.Idea, Slug: s.ws.slug, PipelineMode: string(s.in.Mode), Mode: s.p.mode(),
		Status: s.meta.Status, Error: s.meta.Error, StartedAt: s.start.UTC(), FinishedAt: end.UTC(),
		DurationMS: end.Sub(s.start).Milliseconds(), Iterations: len(s.res.Iterations), Approved: s.res.Approved,
		StopReason: s.res.StopReason, Agents: agents, Total: total}
	errs = append(errs, s.out.writeJSON(filepath.Join(s.ws.logDir, summaryFile), sum), s.out.flush())
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// saveMeta schedules metadata.json to be written as it is now, and
// returns the first error of the files written so far, so that a run whose
// files cannot be written stops before its next call.
func (s *session) saveMeta() error {
	s.meta.UpdatedAt = s.p.cfg.Now().UTC()
	if err := s.out.writeJSON(s.ws.path(metadataFile), s.meta); err != nil {
		return err
	}
	return s.out.failed()
}

// beginStep waits until the files of the step before the previous one are
// written, and returns the first error of a write. The files of a step are
// written while the next step's call is under way, so a run whose files
// cannot be written stops at most one step later, whatever the speed of
// the disk.
func (s *session) beginStep() error {
	if err := s.out.settled(s.marked); err != nil {
		return err
	}
	s.marked = s.out.mark()
	return nil
}

// progress reports one more stage done.
func (s *session) progress(stage, message string) {
	s.r.Emit(stage, min(99, s.done*100/max(1, s.units)), message)
}

// research has the analyst plan its searches, runs them concurrently and
// keeps their results as the sources the analysis may cite. Without web
// tools it notes why; a failed search is noted and the others are used.
func (s *session) research(ctx context.Context) error {
	switch {
	case s.in.NoWebTools:
		s.res.WebNote = "web tools turned off for this run"
	case s.p.cfg.Searcher == nil:
		s.res.WebNote = s.p.cfg.NoSearchNote
	}
	if s.res.WebNote != "" {
		s.meta.WebNote = s.res.WebNote
		return nil
	}
	s.progress("research", "the analyst plans its web searches")
	ri := researchInput{Idea: s.in.Idea, Max: s.in.MaxWebsearches, Sections: Sections}
	const key = "research/queries"
	plan, err := engine.Step(ctx, s.r, key, stepInput{ri, s.agents.fingerprint[s.agents.research]}, func(ctx context.Context, c llm.Client) (researchPlan, error) {
		return agent.JSON(ctx, s.rec.client(c, key), s.agents.research, s.p.plan, ri,
			agent.Options{Temperature: tempResearch, Timeout: stageTimeout}, func(pl *researchPlan, p *structured.Problems) { pl.check(p, ri.Max) })
	})
	if err != nil {
		return fmt.Errorf("research: %w", err)
	}
	s.done++
	s.progress("research", fmt.Sprintf("%d web searches", len(plan.Queries)))

	results := make([][]search.Result, len(plan.Queries))
	failed := make([]error, len(plan.Queries))
	var g errgroup.Group
	g.SetLimit(searchConcurrency)
	for i, q := range plan.Queries {
		s.res.Queries = append(s.res.Queries, q.Query)
		g.Go(func() error {
			key := fmt.Sprintf("research/search_%d", i+1)
			start := s.p.cfg.Now()
			res, err := engine.Step(ctx, s.r, key, q.Query, func(ctx context.Context, _ llm.Client) ([]search.Result, error) {
				return s.p.cfg.Searcher.Search(ctx, q.Query, resultsPerQuery)
			})
			s.rec.search(key, agentAnalyst, q.Query, start, res, err)
			results[i], failed[i] = res, err
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("research: %w", err)
	}
	var merged []search.Result
	seen := map[string]bool{}
	nFailed := 0
	var firstErr error
	for i := range plan.Queries {
		if failed[i] != nil {
			nFailed++
			if firstErr == nil {
				firstErr = failed[i]
			}
			continue
		}
		for _, r := range results[i] {
			if k := urlKey(r.URL); r.URL != "" && !seen[k] && len(merged) < maxSources {
				seen[k] = true
				merged = append(merged, r)
			}
		}
	}
	if nFailed > 0 {
		s.p.cfg.Logger.Warn("web searches failed; the analysis uses the others", "failed", nFailed, "of", len(plan.Queries), "err", firstErr)
		s.res.WebNote = fmt.Sprintf("%d of %d web searches failed: %s", nFailed, len(plan.Queries), oneLine(firstErr.Error()))
	}
	if len(merged) == 0 && s.res.WebNote == "" {
		s.res.WebNote = "the web searches returned nothing"
	}
	s.res.WebTools = len(merged) > 0
	s.res.Sources = merged
	s.sources = sourcesOf(merged)
	for _, r := range merged {
		s.urls = append(s.urls, r.URL)
	}
	s.meta.WebTools, s.meta.WebNote, s.meta.Searches = s.res.WebTools, s.res.WebNote, len(plan.Queries)
	s.done++
	return nil
}

// check limits the plan to max distinct queries: a repeated query is
// dropped, and the queries past max are cut, the first ones kept.
func (pl *researchPlan) check(p *structured.Problems, max int) {
	seen := map[string]bool{}
	var dups []string
	for _, q := range pl.Queries {
		k := normalise(q.Query)
		if seen[k] {
			dups = append(dups, q.Query)
		}
		seen[k] = true
	}
	if len(dups) > 0 {
		p.Fix("count", fmt.Sprintf("the query %q is proposed twice", dups[0]), func() string {
			seen := map[string]bool{}
			kept := pl.Queries[:0]
			for _, q := range pl.Queries {
				if k := normalise(q.Query); !seen[k] {
					seen[k] = true
					kept = append(kept, q)
				}
			}
			pl.Queries = kept
			return fmt.Sprintf("%d repeated quer%s dropped", len(dups), map[bool]string{true: "y", false: "ies"}[len(dups) == 1])
		})
	}
	// Counted after the repeats go, so that the budget keeps distinct ones.
	if distinct := len(pl.Queries) - len(dups); distinct > max {
		p.Fix("budget", fmt.Sprintf("%d queries proposed; at most %d are allowed", distinct, max), func() string {
			pl.Queries = pl.Queries[:max]
			return fmt.Sprintf("%d queries → the first %d (--max-websearches)", distinct, max)
		})
	}
}

// analyse has the analyst write iteration n — a revision of the previous
// one with its feedback from n = 2 on — and writes it to
// iterations/iteration_n.md, pointing analysis.md at it.
func (s *session) analyse(ctx context.Context, n int) (*Iteration, error) {
	if err := s.beginStep(); err != nil {
		return nil, err
	}
	s.progress(fmt.Sprintf("iteration %d", n), "the analyst writes")
	in := analystInput{Idea: s.in.Idea, Iteration: n, MinWords: s.in.MinWords, Sections: Sections, Sources: s.sources}
	a := s.agents.analyst
	if prev := s.res.Final(); prev != nil {
		a = s.agents.revise
		in.Previous, in.Feedback, in.FactIssues = prev.Analysis, prev.Feedback, prev.FactCheck.Problems()
	}
	key := fmt.Sprintf("i%d/analyst", n)
	opts := agent.Options{Temperature: tempAnalyst, Timeout: analystTimeout, MaxTokens: analystMaxTokens(s.in.MinWords)}
	text, err := engine.Step(ctx, s.r, key, stepInput{in, s.agents.fingerprint[a]}, func(ctx context.Context, c llm.Client) (string, error) {
		return a.CheckedText(ctx, s.rec.client(c, key), in, opts, func(t *string, p *structured.Problems) {
			checkAnalysis(t, p, in.MinWords, s.urls)
		})
	})
	if err != nil {
		return nil, err
	}
	file := s.ws.path(iterDir, iterationFile(n))
	s.out.write(file, []byte(text+"\n"))
	s.ws.pointLatest(s.out, n, text+"\n")
	words := CountWords(text)
	s.res.Iterations = append(s.res.Iterations, Iteration{Number: n, Analysis: text, Words: words, Short: words < in.MinWords, File: s.ws.rel(file)})
	it := s.res.Final()
	s.meta.Iterations = append(s.meta.Iterations, IterationMeta{Number: n, File: s.ws.rel(file), Words: it.Words})
	s.meta.LatestIteration = n
	s.done++
	return it, s.saveMeta()
}

// review has the reviewer, and the fact checker beside it, judge iteration
// it, and writes their verdicts.
func (s *session) review(ctx context.Context, it *Iteration) error {
	if err := s.beginStep(); err != nil {
		return err
	}
	n := it.Number
	reading := "the reviewer reads"
	if s.in.FactCheck {
		reading = "the reviewer and the fact checker read"
	}
	s.progress(fmt.Sprintf("iteration %d", n), reading)
	var prev *Feedback
	if n > 1 {
		prev = s.res.Iterations[len(s.res.Iterations)-2].Feedback
	}
	g, gctx := errgroup.WithContext(ctx)
	var fb Feedback
	var fc FactCheck
	g.Go(func() error {
		ri := reviewInput{Idea: s.in.Idea, Iteration: n, MaxIterations: s.in.MaxIterations, Strictness: s.in.Strictness,
			Analysis: it.Analysis, Words: it.Words, MinWords: s.in.MinWords, Sections: Sections, Previous: prev}
		key := fmt.Sprintf("i%d/review", n)
		var err error
		fb, err = engine.Step(gctx, s.r, key, stepInput{ri, s.agents.fingerprint[s.agents.reviewer]}, func(ctx context.Context, c llm.Client) (Feedback, error) {
			return agent.JSON(ctx, s.rec.client(c, key), s.agents.reviewer, s.p.feedback, ri,
				agent.Options{Temperature: tempReviewer, Timeout: stageTimeout}, nil)
		})
		return err
	})
	if s.in.FactCheck {
		g.Go(func() error {
			fi := factCheckInput{Idea: s.in.Idea, Iteration: n, Analysis: it.Analysis, Sources: s.sources}
			key := fmt.Sprintf("i%d/fact_check", n)
			var err error
			fc, err = engine.Step(gctx, s.r, key, stepInput{fi, s.agents.fingerprint[s.agents.factChecker]}, func(ctx context.Context, c llm.Client) (FactCheck, error) {
				return agent.JSON(ctx, s.rec.client(c, key), s.agents.factChecker, s.p.factCheck, fi,
					agent.Options{Temperature: tempFactChecker, Timeout: stageTimeout}, func(f *FactCheck, p *structured.Problems) { f.checkSources(p, s.urls) })
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	it.Feedback = &fb
	file := s.ws.path(iterDir, feedbackFile(n))
	if err := s.out.writeJSON(file, fb); err != nil {
		return err
	}
	it.FeedbackFile = s.ws.rel(file)
	m := &s.meta.Iterations[len(s.meta.Iterations)-1]
	m.FeedbackFile, m.Recommendation = it.FeedbackFile, fb.IterationRecommendation
	if s.in.FactCheck {
		it.FactCheck = &fc
		file := s.ws.path(iterDir, factFile(n))
		if err := s.out.writeJSON(file, fc); err != nil {
			return err
		}
		it.FactCheckFile = s.ws.rel(file)
		m.FactCheckFile, m.FactCheckVerdict = it.FactCheckFile, fc.Verdict
	}
	s.done++
	verdict := fb.IterationRecommendation
	if s.in.FactCheck {
		verdict += ", fact check " + fc.Verdict
	}
	s.progress(fmt.Sprintf("iteration %d", n), "reviewer: "+verdict)
	return s.saveMeta()
}

// checkSources requires every claim's source to be a URL the searches
// returned: another source is removed from the claim, which then rests on
// no listed source.
func (f *FactCheck) checkSources(p *structured.Problems, returned []string) {
	ok := map[string]bool{}
	for _, u := range returned {
		ok[urlKey(u)] = true
	}
	for i := range f.Claims {
		c := &f.Claims[i]
		if c.Source != "" && !ok[urlKey(c.Source)] {
			p.Fix("reference", fmt.Sprintf("claim %q cites %s, which is not one of the listed sources", short(c.Claim, 60), c.Source), func() string {
				was := c.Source
				c.Source = ""
				return fmt.Sprintf("source %s of claim %q removed: no search returned it", was, short(c.Claim, 40))
			})
		}
	}
}

// judge grades the final analysis and writes evaluation.json.
func (s *session) judge(ctx context.Context) error {
	if err := s.beginStep(); err != nil {
		return err
	}
	s.progress("judge", "the judge grades the analysis")
	final := s.res.Final()
	ji := judgeInput{Idea: s.in.Idea, Analysis: final.Analysis, Iterations: len(s.res.Iterations), Approved: s.res.Approved,
		Sources: s.sources, Criteria: Criteria}
	j, err := engine.Step(ctx, s.r, "judge", stepInput{ji, s.agents.fingerprint[s.agents.judge]}, func(ctx context.Context, c llm.Client) (Judgement, error) {
		return agent.JSON(ctx, s.rec.client(c, "judge"), s.agents.judge, s.p.judgement, ji,
			agent.Options{Temperature: tempJudge, Timeout: stageTimeout}, nil)
	})
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	score, grade, err := Score(j.Grades)
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	file := s.ws.path(evalFile)
	ev := &Evaluation{Idea: s.in.Idea, Slug: s.ws.slug, Judgement: j, WeightedScore: score, OverallGrade: grade,
		Weights: Criteria, Iterations: len(s.res.Iterations), Approved: s.res.Approved, Analysis: final.File,
		RunID: s.r.ID(), Mode: s.p.mode(), JudgedAt: s.p.cfg.Now().UTC()}
	if err := s.out.writeJSON(file, ev); err != nil {
		return err
	}
	s.res.Evaluation = ev
	s.res.Files.Evaluation = s.ws.rel(file)
	s.meta.Evaluation, s.meta.WeightedScore = s.res.Files.Evaluation, &score
	s.done++
	return s.saveMeta()
}

// oneLine makes s one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
