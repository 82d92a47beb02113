// Package proposal is seed 002's research-proposal workflow:
//
//	interview → UserProfile (Interview, or ParseProfile for a file)
//	  → problem formulation: the literature-review agent plans 3-5 queries,
//	    the scholarly sources (and the web, with a key) are searched
//	    concurrently, and the problem agent defines the problem, citing
//	    search results by their numbers only
//	  → objectives (one general, 3-5 SMART, each mapped to a research
//	    question) → methodology → data collection plan
//	  → quality control: coherence and feasibility 0-1, issues by severity,
//	    recommendations, refinement targets; pass when both scores reach
//	    0.7 and no issue is critical
//	  → on fail, refinement: the stages from the earliest target on run
//	    again with the recommendations as feedback, up to MaxRefinements
//	    times; a proposal that never passes is still produced, marked so
//
// An explicit state machine (Machine) with the seed's states drives it and
// records every transition. Every agent call is a journaled engine.Step
// whose key carries the round (r0/problem, r1/objectives, ...), rendered
// afresh from the typed outputs of the stages it depends on: nothing is
// carried over in a conversation. Document turns the result into a
// document.Document for Markdown and PDF.
package proposal

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/structured"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// Agent names.
const (
	agentQueries     = "proposal.queries"
	agentProblem     = "proposal.problem"
	agentObjectives  = "proposal.objectives"
	agentMethodology = "proposal.methodology"
	agentData        = "proposal.data"
	agentQC          = "proposal.qc"
)

// Temperatures: planning and writing a little warm, review cold.
const (
	tempQueries = 0.4
	tempWrite   = 0.5
	tempPlan    = 0.4
	tempQC      = 0.1
)

// stageTimeout bounds each call.
const stageTimeout = 2 * time.Minute

// maxWorks caps the search results shown to the problem agent.
const maxWorks = 30

// Pipeline writes research proposals. It is safe for concurrent use.
type Pipeline struct {
	sources []search.Provider
	logger  *slog.Logger

	queries, problem, objectives, methodology, data, qc *agent.Agent

	planSpec        *structured.Spec[searchPlan]
	problemSpec     *structured.Spec[problemReply]
	objectivesSpec  *structured.Spec[ResearchObjectives]
	methodologySpec *structured.Spec[MethodologyRecommendation]
	dataSpec        *structured.Spec[DataCollectionPlan]
	qcSpec          *structured.Spec[qcReply]
}

// New prepares the pipeline. sources are the literature sources searched
// (typically scholar.FromEnv's, and a web search.Provider, each wrapped in
// search.Cached; scholar.NewOffline in mock mode); none means no
// literature search. logger may be nil.
func New(sources []search.Provider, logger *slog.Logger) (*Pipeline, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{sources: sources, logger: logger}
	var errs []error
	for _, a := range []struct {
		dst  **agent.Agent
		name string
	}{{&p.queries, agentQueries}, {&p.problem, agentProblem}, {&p.objectives, agentObjectives},
		{&p.methodology, agentMethodology}, {&p.data, agentData}, {&p.qc, agentQC}} {
		var err error
		*a.dst, err = agent.New(promptFS, a.name, "prompts/"+strings.TrimPrefix(a.name, "proposal.")+".tmpl")
		errs = append(errs, err)
	}
	var err error
	p.planSpec, err = structured.NewSpec[searchPlan]("proposal_search_plan")
	errs = append(errs, err)
	p.problemSpec, err = structured.NewSpec[problemReply]("proposal_problem_definition")
	errs = append(errs, err)
	p.objectivesSpec, err = structured.NewSpec[ResearchObjectives]("proposal_research_objectives")
	errs = append(errs, err)
	p.methodologySpec, err = structured.NewSpec[MethodologyRecommendation]("proposal_methodology")
	errs = append(errs, err)
	p.dataSpec, err = structured.NewSpec[DataCollectionPlan]("proposal_data_collection_plan")
	errs = append(errs, err)
	p.qcSpec, err = structured.NewSpec[qcReply]("proposal_quality_validation")
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("proposal: %w", err)
	}
	synonyms := map[string]string{}
	maps.Copy(synonyms, enumSynonyms)
	maps.Copy(synonyms, stageSynonyms)
	p.objectivesSpec.WithSynonyms(synonyms)
	p.methodologySpec.WithSynonyms(synonyms)
	p.dataSpec.WithSynonyms(synonyms)
	p.qcSpec.WithSynonyms(synonyms)
	return p, nil
}

// StructuredAgents lists the pipeline's agents whose replies are JSON, with the
// Specs their replies are read with.
func (p *Pipeline) StructuredAgents() []structured.Agent {
	return []structured.Agent{
		{Name: agentQueries, Spec: p.planSpec}, {Name: agentProblem, Spec: p.problemSpec},
		{Name: agentObjectives, Spec: p.objectivesSpec}, {Name: agentMethodology, Spec: p.methodologySpec},
		{Name: agentData, Spec: p.dataSpec}, {Name: agentQC, Spec: p.qcSpec},
	}
}

// Feedback is what quality control asked for, passed to every stage that
// runs again, with that stage's previous output.
type Feedback struct {
	// Round is the round whose review asked for the changes.
	Round           int      `json:"round"`
	Summary         string   `json:"summary"`
	Recommendations []string `json:"recommendations"`
	Issues          []Issue  `json:"issues"`
	// Previous is the stage's previous output, as JSON.
	Previous string `json:"previous,omitempty"`
}

// The inputs each agent's prompt is rendered from; also what the journal
// hashes and the mock answers.
type (
	queriesInput struct {
		Profile  UserProfile
		Feedback *Feedback
		Previous []string
	}
	problemInput struct {
		Profile    UserProfile
		Works      []scholar.Work
		SearchNote string
		Feedback   *Feedback
	}
	objectivesInput struct {
		Profile  UserProfile
		Problem  ProblemDefinition
		Weeks    int
		Feedback *Feedback
	}
	methodologyInput struct {
		Profile    UserProfile
		Problem    ProblemDefinition
		Objectives ResearchObjectives
		Weeks      int
		Feedback   *Feedback
	}
	dataInput struct {
		Profile     UserProfile
		Problem     ProblemDefinition
		Objectives  ResearchObjectives
		Methodology MethodologyRecommendation
		Weeks       int
		Feedback    *Feedback
	}
	qcInput struct {
		Profile                      UserProfile
		Problem                      ProblemDefinition
		Objectives                   ResearchObjectives
		Methodology                  MethodologyRecommendation
		Data                         DataCollectionPlan
		Weeks, Hours                 int
		MinCoherence, MinFeasibility float64
	}
	// literatureInput identifies a literature search for the journal.
	literatureInput struct {
		Queries  []string
		Sources  []string
		PerQuery int
	}
)

// Candidates renders the search results for the prompt.
func (in problemInput) Candidates() string { return candidates(in.Works) }

// LiteratureSearch records how the literature was searched.
type LiteratureSearch struct {
	Enabled   bool     `json:"enabled"`
	Queries   []string `json:"queries"`
	Rationale string   `json:"rationale,omitempty"`
	Sources   []string `json:"sources"`
	// Attempts lists every query sent to every source and its outcome.
	Attempts []scholar.Attempt `json:"attempts"`
	// WorksFound is the number of distinct works the searches returned.
	WorksFound int `json:"works_found"`
	// Note says why there is no search, or which searches failed.
	Note string `json:"note,omitempty"`
}

// Round is one pass of the workflow: the stages that ran and quality
// control's assessment.
type Round struct {
	Round int `json:"round"`
	// From is the first stage that ran.
	From              Stage             `json:"from"`
	Stages            []Stage           `json:"stages"`
	QualityValidation QualityValidation `json:"quality_validation"`
}

// Result is a finished proposal.
type Result struct {
	Title              string                    `json:"title"`
	Profile            UserProfile               `json:"user_profile"`
	ProblemDefinition  ProblemDefinition         `json:"problem_definition"`
	ResearchObjectives ResearchObjectives        `json:"research_objectives"`
	Methodology        MethodologyRecommendation `json:"methodology"`
	DataCollectionPlan DataCollectionPlan        `json:"data_collection_plan"`
	// QualityValidation is the last round's assessment.
	QualityValidation QualityValidation `json:"quality_validation"`
	// Passed reports whether the proposal passed quality control; false
	// when the refinements allowed ran out first.
	Passed           bool             `json:"passed_quality_control"`
	Refinements      int              `json:"refinements"`
	MaxRefinements   int              `json:"max_refinements"`
	Rounds           []Round          `json:"rounds"`
	LiteratureSearch LiteratureSearch `json:"literature_search"`
	Transitions      []Transition     `json:"transitions"`
	// Repairs lists the changes made to replies that were usable but broke
	// a soft rule; empty when there were none.
	Repairs []llm.Repair `json:"repairs"`
	// FailedStep names the step that failed, for a run that stopped before
	// the proposal was finished: the stages before it are kept, and
	// resuming the run starts from it. Empty for a finished proposal.
	FailedStep string `json:"failed_step,omitempty"`
	// Error is why it failed.
	Error string `json:"error,omitempty"`
}

// Run writes a proposal for in.Profile as run r.
func (p *Pipeline) Run(ctx context.Context, r *engine.Run, in Params) (*Result, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	m := NewMachine(in.MaxRefinements, func(t Transition) {
		p.logger.Info("proposal transition", "run", r.ID(), "from", t.From, "to", t.To, "round", t.Round, "detail", t.Detail)
	})
	res := &Result{Profile: in.Profile, MaxRefinements: in.MaxRefinements, Rounds: []Round{}, Repairs: []llm.Repair{}}
	w := &work{p: p, r: r, in: in, m: m, res: res, weeks: in.Profile.TotalTimeline.Weeks()}
	// A failed step keeps what the steps before it produced: the result
	// says which step failed, and resuming the run replays the others.
	fail := func(err error) (*Result, error) {
		_ = m.To(Failed, oneLine(err.Error()))
		if w.current == "" {
			return nil, err
		}
		err = &StepError{Step: w.current, Err: err}
		if res.ProblemDefinition.WorkingTitle == "" {
			return nil, err // nothing finished to keep
		}
		res.Title = res.ProblemDefinition.WorkingTitle
		res.Transitions = m.History()
		res.Repairs = r.Repairs()
		res.FailedStep, res.Error = w.current, oneLine(errors.Unwrap(err).Error())
		return res, err
	}
	if err := m.To(Interviewing, "profile from "+in.ProfileSource); err != nil {
		return nil, err
	}
	from := StageProblem
	var fb *Feedback
	for {
		round := m.Round()
		rr := Round{Round: round, From: from}
		enter := fmt.Sprintf("round %d", round)
		if round == 0 {
			enter = "profile validated"
		}
		for i := from.order(); i < len(Stages); i++ {
			stage := Stages[i]
			detail := ""
			if i == from.order() {
				detail = enter
			}
			if err := m.To(stageState[stage], detail); err != nil {
				return fail(err)
			}
			if err := w.stage(ctx, stage, round, fb); err != nil {
				return fail(err)
			}
			rr.Stages = append(rr.Stages, stage)
		}
		if err := m.To(QualityControl, ""); err != nil {
			return fail(err)
		}
		qv, err := w.review(ctx, round)
		if err != nil {
			return fail(err)
		}
		rr.QualityValidation = qv
		res.Rounds = append(res.Rounds, rr)
		res.QualityValidation = qv
		if qv.Verdict == Pass {
			res.Passed = true
			if err := m.To(Complete, fmt.Sprintf("passed quality control (coherence %.2f, feasibility %.2f)", qv.CoherenceScore, qv.FeasibilityScore)); err != nil {
				return fail(err)
			}
			break
		}
		if !m.CanRefine() {
			if err := m.To(Complete, fmt.Sprintf("not passed after %d refinement(s): %s", res.Refinements, qv.Reason)); err != nil {
				return fail(err)
			}
			break
		}
		from = earliest(qv.RefinementTargets)
		fb = &Feedback{Round: round, Summary: qv.Summary, Recommendations: qv.Recommendations, Issues: qv.IssuesIdentified}
		if err := m.To(Refinement, fmt.Sprintf("%s; refining from %s", qv.Reason, from)); err != nil {
			return fail(err)
		}
		res.Refinements++
		r.Emit("refinement", 10, fmt.Sprintf("round %d: %s; refining from %s", m.Round(), qv.Reason, from))
	}
	res.Title = res.ProblemDefinition.WorkingTitle
	res.Transitions = m.History()
	res.Repairs = r.Repairs()
	r.Emit("done", 100, "done")
	return res, nil
}

// StepError is the error of a run that failed in one step, after others had
// finished: Run returns it with the partial Result.
type StepError struct {
	// Step is the journal key of the step that failed, such as
	// "r0/quality_control".
	Step string
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }

func (e *StepError) Unwrap() error { return e.Err }

// work is one run's state: the latest output of each stage.
type work struct {
	p     *Pipeline
	r     *engine.Run
	in    Params
	m     *Machine
	res   *Result
	weeks int
	// current is the key of the step under way, or of the last one.
	current string
}

// stageProgress is the progress reported when each stage starts.
var stageProgress = map[Stage]int{StageProblem: 5, StageObjectives: 40, StageMethodology: 55, StageData: 70}

func key(round int, name string) string { return fmt.Sprintf("r%d/%s", round, name) }

// withPrevious returns fb with the stage's previous output, or nil for the
// first round.
func withPrevious(fb *Feedback, previous any) *Feedback {
	if fb == nil {
		return nil
	}
	c := *fb
	b, err := json.MarshalIndent(previous, "", "  ")
	if err == nil {
		c.Previous = string(b)
	}
	return &c
}

// stage runs one refinable stage of round and keeps its output.
func (w *work) stage(ctx context.Context, s Stage, round int, fb *Feedback) error {
	p, res, prof := w.p, w.res, w.in.Profile
	msg := string(s)
	if round > 0 {
		msg = fmt.Sprintf("%s (round %d)", s, round)
	}
	w.r.Emit(string(s), stageProgress[s], msg)
	switch s {
	case StageProblem:
		return w.problemFormulation(ctx, round, fb)
	case StageObjectives:
		in := objectivesInput{Profile: prof, Problem: res.ProblemDefinition, Weeks: w.weeks, Feedback: withPrevious(fb, res.ResearchObjectives)}
		out, err := step(ctx, w, key(round, "objectives"), p.objectives, p.objectivesSpec, in, tempPlan, func(o *ResearchObjectives, pr *structured.Problems) {
			o.check(pr, res.ProblemDefinition.Questions(), w.weeks)
		})
		res.ResearchObjectives = out
		return err
	case StageMethodology:
		in := methodologyInput{Profile: prof, Problem: res.ProblemDefinition, Objectives: res.ResearchObjectives, Weeks: w.weeks, Feedback: withPrevious(fb, res.Methodology)}
		out, err := step(ctx, w, key(round, "methodology"), p.methodology, p.methodologySpec, in, tempPlan, func(m *MethodologyRecommendation, pr *structured.Problems) {
			m.check(pr, w.weeks)
		})
		res.Methodology = out
		return err
	case StageData:
		in := dataInput{Profile: prof, Problem: res.ProblemDefinition, Objectives: res.ResearchObjectives, Methodology: res.Methodology, Weeks: w.weeks, Feedback: withPrevious(fb, res.DataCollectionPlan)}
		out, err := step(ctx, w, key(round, "data_collection"), p.data, p.dataSpec, in, tempPlan, func(d *DataCollectionPlan, pr *structured.Problems) {
			d.check(pr, w.weeks)
		})
		res.DataCollectionPlan = out
		return err
	}
	return fmt.Errorf("proposal: unknown stage %q", s)
}

// step runs one structured agent call as a journaled step of w's run.
func step[T any](ctx context.Context, w *work, key string, a *agent.Agent, spec *structured.Spec[T], in any, temp float64, check func(*T, *structured.Problems)) (T, error) {
	w.current = key
	return engine.Step(ctx, w.r, key, in, func(ctx context.Context, c llm.Client) (T, error) {
		return agent.JSON(ctx, c, a, spec, in, agent.Options{Temperature: temp, Timeout: stageTimeout}, check)
	})
}

// problemFormulation runs PROBLEM_FORMULATION: PF_START → LIT_REVIEW (the
// queries, then the searches) → PF_REVISE (the problem agent) → PF_DONE.
func (w *work) problemFormulation(ctx context.Context, round int, fb *Feedback) error {
	p, res, prof := w.p, w.res, w.in.Profile
	ls := LiteratureSearch{Enabled: !w.in.NoSearch && len(p.sources) > 0, Queries: []string{}, Sources: []string{}, Attempts: []scholar.Attempt{}}
	for _, s := range p.sources {
		ls.Sources = append(ls.Sources, s.Name())
	}
	var works []scholar.Work
	switch {
	case w.in.NoSearch:
		ls.Note = "literature search off (--no-search)"
	case len(p.sources) == 0:
		ls.Note = "no literature source configured"
	}
	if ls.Enabled {
		qin := queriesInput{Profile: prof, Feedback: fb}
		if fb != nil {
			qin.Previous = res.LiteratureSearch.Queries
		}
		plan, err := step(ctx, w, key(round, "queries"), p.queries, p.planSpec, qin, tempQueries, nil)
		if err != nil {
			return err
		}
		ls.Queries, ls.Rationale = plan.Queries, plan.Rationale
		if err := w.m.To(LitReview, strings.Join(plan.Queries, "; ")); err != nil {
			return err
		}
		w.r.Emit("literature", 15, fmt.Sprintf("searching %s for %d queries", strings.Join(ls.Sources, ", "), len(plan.Queries)))
		lin := literatureInput{Queries: plan.Queries, Sources: ls.Sources, PerQuery: w.in.ResultsPerQuery}
		w.current = key(round, "literature")
		found, err := engine.Step(ctx, w.r, w.current, lin, func(ctx context.Context, _ llm.Client) (*scholar.Findings, error) {
			s := &scholar.Searcher{Sources: p.sources, PerQuery: w.in.ResultsPerQuery, Limit: maxWorks}
			return s.Search(ctx, plan.Queries)
		})
		if err != nil {
			return fmt.Errorf("%w (run with --no-search to write the proposal without a literature review)", err)
		}
		works, ls.Attempts, ls.WorksFound = found.Works, found.Attempts, len(found.Works)
		if failed := found.Failed(); failed != "" {
			ls.Note = "some searches failed: " + failed
			p.logger.Warn("literature searches failed; the others are used", "run", w.r.ID(), "failed", failed)
		}
	}
	if err := w.m.To(PFRevise, fmt.Sprintf("%d works found", len(works))); err != nil {
		return err
	}
	w.r.Emit("problem", 25, "problem definition")
	pin := problemInput{Profile: prof, Works: works, SearchNote: ls.Note, Feedback: withPrevious(fb, res.ProblemDefinition)}
	w.current = key(round, "problem")
	def, err := engine.Step(ctx, w.r, w.current, pin, func(ctx context.Context, c llm.Client) (ProblemDefinition, error) {
		rep, err := agent.JSON(ctx, c, p.problem, p.problemSpec, pin, agent.Options{Temperature: tempWrite, Timeout: stageTimeout},
			func(rep *problemReply, pr *structured.Problems) { checkCitations(rep, pr, works) })
		if err != nil {
			return ProblemDefinition{}, err
		}
		return buildProblem(&rep, works), nil
	})
	if err != nil {
		return err
	}
	res.ProblemDefinition, res.LiteratureSearch = def, ls
	return w.m.To(PFDone, fmt.Sprintf("%d works cited", len(def.PreliminaryLiterature)))
}

// checkCitations keeps the problem agent's citations to the search
// results: a number that is not one of them (with no results, any number)
// and a repeated one are dropped; too few citations are asked for once,
// then the reply is kept with those it has.
func checkCitations(rep *problemReply, p *structured.Problems, works []scholar.Work) {
	byID := map[int]bool{}
	for _, w := range works {
		byID[w.ID] = true
	}
	var stray, dups []string
	seen := map[int]bool{}
	for _, c := range rep.Literature {
		switch {
		case !byID[c.ID]:
			stray = append(stray, fmt.Sprint(c.ID))
		case seen[c.ID]:
			dups = append(dups, fmt.Sprint(c.ID))
		}
		seen[c.ID] = true
	}
	if len(stray) > 0 || len(dups) > 0 {
		var msg string
		switch {
		case len(stray) > 0 && len(works) == 0:
			msg = fmt.Sprintf("preliminary_literature cites id %s, but there are no search results: leave it empty", strings.Join(stray, ", "))
		case len(stray) > 0:
			msg = fmt.Sprintf("preliminary_literature cites id %s, which is not one of the search results (ids 1-%d): cite only the numbered results", strings.Join(stray, ", "), len(works))
		default:
			msg = fmt.Sprintf("preliminary_literature cites id %s twice", strings.Join(dups, ", "))
		}
		p.Fix("reference", msg, func() string {
			seen := map[int]bool{}
			kept := rep.Literature[:0]
			for _, c := range rep.Literature {
				if byID[c.ID] && !seen[c.ID] {
					seen[c.ID] = true
					kept = append(kept, c)
				}
			}
			rep.Literature = kept
			var parts []string
			if len(stray) > 0 {
				parts = append(parts, "citations of ids that no search returned dropped: "+strings.Join(stray, ", "))
			}
			if len(dups) > 0 {
				parts = append(parts, "repeated citations dropped: "+strings.Join(dups, ", "))
			}
			return strings.Join(parts, "; ")
		})
	}
	valid := 0
	for id := range seen {
		if byID[id] {
			valid++
		}
	}
	if want := min(3, len(works)); valid < want {
		p.Ask("count", fmt.Sprintf("preliminary_literature cites %d works; cite at least %d of the %d search results", valid, want, len(works)), func() string {
			return fmt.Sprintf("kept with %d cited works of the %d asked for", valid, want)
		})
	}
}

// buildProblem turns the problem agent's reply, its citations checked by
// checkCitations, into the problem definition, filling each cited work
// from the search results.
func buildProblem(rep *problemReply, works []scholar.Work) ProblemDefinition {
	def := ProblemDefinition{
		WorkingTitle: rep.WorkingTitle, ProblemStatement: rep.ProblemStatement, ResearchGap: rep.ResearchGap,
		Justification: rep.Justification, MainResearchQuestion: rep.MainResearchQuestion,
		SecondaryQuestions: nonNil(rep.SecondaryQuestions), KeyVariables: nonNil(rep.KeyVariables),
		PreliminaryLiterature: []LiteratureEntry{}, SearchSummary: rep.SearchSummary,
	}
	byID := map[int]scholar.Work{}
	for _, w := range works {
		byID[w.ID] = w
	}
	seen := map[int]bool{}
	for _, c := range rep.Literature {
		w, ok := byID[c.ID]
		if !ok || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		def.PreliminaryLiterature = append(def.PreliminaryLiterature, LiteratureEntry{
			Ref: len(def.PreliminaryLiterature) + 1, Title: w.Title, URL: w.URL, Year: w.Year, Authors: nonNil(w.Authors),
			Venue: w.Venue, DOI: w.DOI, Sources: nonNil(w.Sources), RelevanceNote: c.RelevanceNote,
		})
	}
	return def
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// review runs QUALITY_CONTROL for round.
func (w *work) review(ctx context.Context, round int) (QualityValidation, error) {
	res := w.res
	w.r.Emit("quality_control", 85, fmt.Sprintf("quality control (round %d)", round))
	in := qcInput{Profile: w.in.Profile, Problem: res.ProblemDefinition, Objectives: res.ResearchObjectives, Methodology: res.Methodology,
		Data: res.DataCollectionPlan, Weeks: w.weeks, Hours: w.in.Profile.HoursAvailable(), MinCoherence: MinCoherence, MinFeasibility: MinFeasibility}
	rep, err := step(ctx, w, key(round, "quality_control"), w.p.qc, w.p.qcSpec, in, tempQC, nil)
	if err != nil {
		return QualityValidation{}, err
	}
	return rep.validation(round), nil
}
