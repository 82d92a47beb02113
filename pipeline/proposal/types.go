package proposal

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Stage is a stage of the proposal that quality control can send back for
// refinement, in the order the stages run.
type Stage string

// The stages.
const (
	StageProblem     Stage = "problem_formulation"
	StageObjectives  Stage = "objectives"
	StageMethodology Stage = "methodology"
	StageData        Stage = "data_collection"
)

// Stages lists the refinable stages in the order they run.
var Stages = []Stage{StageProblem, StageObjectives, StageMethodology, StageData}

// order returns the stage's position in Stages, or -1.
func (s Stage) order() int {
	for i, x := range Stages {
		if x == s {
			return i
		}
	}
	return -1
}

// Severity grades a quality-control issue.
type Severity string

// The severities.
const (
	Critical Severity = "critical"
	Major    Severity = "major"
	Minor    Severity = "minor"
)

// MethodologyType is the kind of research design.
type MethodologyType string

// The methodology types.
const (
	Qualitative  MethodologyType = "qualitative"
	Quantitative MethodologyType = "quantitative"
	Mixed        MethodologyType = "mixed"
)

// Verdict is quality control's decision.
type Verdict string

// The verdicts.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
)

// Pass thresholds: a proposal passes quality control when both scores reach
// them and no issue is critical.
const (
	MinCoherence   = 0.7
	MinFeasibility = 0.7
)

// LiteratureEntry is a work the proposal cites: one a literature search
// returned, with its title, address, year, authors and venue as the search
// gave them, and the model's note on why it matters.
type LiteratureEntry struct {
	// Ref numbers the entries of a proposal from 1.
	Ref     int      `json:"ref"`
	Title   string   `json:"title"`
	URL     string   `json:"url"`
	Year    int      `json:"year,omitempty"`
	Authors []string `json:"authors"`
	Venue   string   `json:"venue,omitempty"`
	DOI     string   `json:"doi,omitempty"`
	// Sources names the search sources that returned the work.
	Sources       []string `json:"sources"`
	RelevanceNote string   `json:"relevance_note"`
}

// ProblemDefinition is the problem formulation's output (seed: the
// ProblemDefinition model), with literature filled from the search.
type ProblemDefinition struct {
	WorkingTitle          string            `json:"working_title"`
	ProblemStatement      string            `json:"problem_statement"`
	ResearchGap           string            `json:"research_gap"`
	Justification         string            `json:"justification"`
	MainResearchQuestion  string            `json:"main_research_question"`
	SecondaryQuestions    []string          `json:"secondary_questions"`
	KeyVariables          []string          `json:"key_variables"`
	PreliminaryLiterature []LiteratureEntry `json:"preliminary_literature"`
	SearchSummary         string            `json:"search_summary"`
}

// Question is a research question with its label: RQ1 is the main
// question, RQ2... the secondary ones.
type Question struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Questions returns the research questions, labelled.
func (p *ProblemDefinition) Questions() []Question {
	qs := []Question{{ID: "RQ1", Text: p.MainResearchQuestion}}
	for i, q := range p.SecondaryQuestions {
		qs = append(qs, Question{ID: fmt.Sprintf("RQ%d", i+2), Text: q})
	}
	return qs
}

// problemReply is what the problem-formulation agent returns: the problem,
// and the literature it cites by the numbers of the search results.
type problemReply struct {
	WorkingTitle         string     `json:"working_title" jsonschema:"minLength=1,maxLength=200"`
	ProblemStatement     string     `json:"problem_statement" jsonschema:"minLength=1"`
	ResearchGap          string     `json:"research_gap" jsonschema:"minLength=1"`
	Justification        string     `json:"justification" jsonschema:"minLength=1"`
	MainResearchQuestion string     `json:"main_research_question" jsonschema:"minLength=1"`
	SecondaryQuestions   []string   `json:"secondary_questions" jsonschema:"maxItems=4"`
	KeyVariables         []string   `json:"key_variables" jsonschema:"minItems=1,maxItems=10"`
	Literature           []citation `json:"preliminary_literature" jsonschema:"maxItems=10"`
	SearchSummary        string     `json:"search_summary"`
}

// citation cites a search result by its number.
type citation struct {
	ID            int    `json:"id" jsonschema:"minimum=1"`
	RelevanceNote string `json:"relevance_note" jsonschema:"minLength=1"`
}

// Validate checks what the schema cannot.
func (r *problemReply) Validate() error {
	for i, q := range r.SecondaryQuestions {
		if strings.TrimSpace(q) == "" {
			return fmt.Errorf("secondary_questions[%d] is empty", i)
		}
	}
	return nil
}

// searchPlan is what the literature-review agent returns: the queries to
// search.
type searchPlan struct {
	Queries   []string `json:"queries" jsonschema:"minItems=3,maxItems=5"`
	Rationale string   `json:"rationale"`
}

// Validate checks that the queries are distinct and of a searchable length.
func (s *searchPlan) Validate() error {
	seen := map[string]bool{}
	for i, q := range s.Queries {
		q = strings.Join(strings.Fields(q), " ")
		switch {
		case q == "":
			return fmt.Errorf("queries[%d] is empty", i)
		case len([]rune(q)) > 200:
			return fmt.Errorf("queries[%d] is longer than 200 characters; use a few keywords", i)
		case seen[strings.ToLower(q)]:
			return fmt.Errorf("queries[%d] repeats an earlier query", i)
		}
		seen[strings.ToLower(q)] = true
		s.Queries[i] = q
	}
	return nil
}

// SpecificObjective is one SMART objective, mapped to a research question.
type SpecificObjective struct {
	// ID is SO1, SO2, ... in order.
	ID        string `json:"id" jsonschema:"pattern=^SO[1-5]$"`
	Objective string `json:"objective" jsonschema:"minLength=1"`
	// ResearchQuestion is the label of the question it answers: RQ1 (the
	// main question), RQ2, ...
	ResearchQuestion string `json:"research_question" jsonschema:"pattern=^RQ[1-5]$"`
	// Indicator is how achieving it is measured.
	Indicator string `json:"indicator" jsonschema:"minLength=1"`
	// DueWeek is the week of the project by which it is met.
	DueWeek int `json:"due_week" jsonschema:"minimum=1"`
}

// AlignmentCheck is the objectives agent's own check of its objectives
// against the problem.
type AlignmentCheck struct {
	Verdict     string `json:"verdict" jsonschema:"enum=aligned,enum=partially_aligned,enum=misaligned"`
	Explanation string `json:"explanation" jsonschema:"minLength=1"`
}

// ResearchObjectives is the objectives stage's output (seed: the
// ResearchObjectives model): one general and 3-5 SMART specific
// objectives.
type ResearchObjectives struct {
	GeneralObjective   string              `json:"general_objective" jsonschema:"minLength=1"`
	SpecificObjectives []SpecificObjective `json:"specific_objectives" jsonschema:"minItems=3,maxItems=5"`
	AlignmentCheck     AlignmentCheck      `json:"alignment_check"`
	FeasibilityNotes   string              `json:"feasibility_notes"`
}

// check enforces the rules that depend on the problem and the timeline:
// numbering, existing research questions, the main question covered,
// deadlines within the project.
func (o *ResearchObjectives) check(questions []Question, weeks int) error {
	known := map[string]bool{}
	var ids []string
	for _, q := range questions {
		known[q.ID] = true
		ids = append(ids, q.ID)
	}
	var problems []string
	mainCovered := false
	for i, so := range o.SpecificObjectives {
		if want := fmt.Sprintf("SO%d", i+1); so.ID != want {
			problems = append(problems, fmt.Sprintf("specific_objectives[%d].id is %q, want %q", i, so.ID, want))
		}
		if !known[so.ResearchQuestion] {
			problems = append(problems, fmt.Sprintf("%s maps to %s, which is not a research question (there are %s)", so.ID, so.ResearchQuestion, strings.Join(ids, ", ")))
		}
		mainCovered = mainCovered || so.ResearchQuestion == "RQ1"
		if so.DueWeek > weeks {
			problems = append(problems, fmt.Sprintf("%s is due in week %d, after the project's %d weeks", so.ID, so.DueWeek, weeks))
		}
	}
	if !mainCovered {
		problems = append(problems, "no specific objective answers the main research question RQ1")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Phase is a phase of the research with its length.
type Phase struct {
	Name  string `json:"name" jsonschema:"minLength=1"`
	Weeks int    `json:"weeks" jsonschema:"minimum=1"`
}

// TimelineFit is how the methodology fits the available time.
type TimelineFit struct {
	Verdict     string  `json:"verdict" jsonschema:"enum=fits,enum=tight,enum=does_not_fit"`
	Phases      []Phase `json:"phases" jsonschema:"minItems=2,maxItems=8"`
	Explanation string  `json:"explanation" jsonschema:"minLength=1"`
}

// Alternative is a methodology considered and not chosen.
type Alternative struct {
	Name            string          `json:"name" jsonschema:"minLength=1"`
	MethodologyType MethodologyType `json:"methodology_type" jsonschema:"enum=qualitative,enum=quantitative,enum=mixed"`
	Pros            []string        `json:"pros" jsonschema:"minItems=1"`
	Cons            []string        `json:"cons" jsonschema:"minItems=1"`
	WhyNotChosen    string          `json:"why_not_chosen" jsonschema:"minLength=1"`
}

// MethodologyRecommendation is the methodology stage's output (seed: the
// MethodologyRecommendation model).
type MethodologyRecommendation struct {
	RecommendedMethodology   string          `json:"recommended_methodology" jsonschema:"minLength=1"`
	MethodologyType          MethodologyType `json:"methodology_type" jsonschema:"enum=qualitative,enum=quantitative,enum=mixed"`
	Justification            string          `json:"justification" jsonschema:"minLength=1"`
	RequiredSkills           []string        `json:"required_skills"`
	TimelineFit              TimelineFit     `json:"timeline_fit"`
	AlternativeMethodologies []Alternative   `json:"alternative_methodologies" jsonschema:"minItems=1,maxItems=3"`
}

// check enforces that the phases fit in the project.
func (m *MethodologyRecommendation) check(weeks int) error {
	total := 0
	for _, p := range m.TimelineFit.Phases {
		total += p.Weeks
	}
	if total > weeks {
		return fmt.Errorf("timeline_fit.phases add up to %d weeks; the project has %d: shorten or merge phases", total, weeks)
	}
	return nil
}

// Tool is an instrument or piece of software for collecting data.
type Tool struct {
	Name    string `json:"name" jsonschema:"minLength=1"`
	Purpose string `json:"purpose" jsonschema:"minLength=1"`
	Access  string `json:"access" jsonschema:"enum=free,enum=licensed,enum=institutional"`
}

// Activity is a dated step of data collection.
type Activity struct {
	Phase       string `json:"phase" jsonschema:"minLength=1"`
	StartWeek   int    `json:"start_week" jsonschema:"minimum=1"`
	EndWeek     int    `json:"end_week" jsonschema:"minimum=1"`
	Description string `json:"description" jsonschema:"minLength=1"`
}

// DataCollectionPlan is the data-collection stage's output (seed: the
// DataCollectionPlan model).
type DataCollectionPlan struct {
	CollectionTechniques  []string   `json:"collection_techniques" jsonschema:"minItems=1"`
	RecommendedTools      []Tool     `json:"recommended_tools"`
	DataSources           []string   `json:"data_sources" jsonschema:"minItems=1"`
	EstimatedSampleSize   string     `json:"estimated_sample_size" jsonschema:"minLength=1"`
	SamplingStrategy      string     `json:"sampling_strategy" jsonschema:"minLength=1"`
	TimelineBreakdown     []Activity `json:"timeline_breakdown" jsonschema:"minItems=1,maxItems=12"`
	ResourceRequirements  []string   `json:"resource_requirements"`
	EthicalConsiderations []string   `json:"ethical_considerations"`
}

// check enforces that every activity lies within the project.
func (d *DataCollectionPlan) check(weeks int) error {
	var problems []string
	for i, a := range d.TimelineBreakdown {
		if a.EndWeek < a.StartWeek {
			problems = append(problems, fmt.Sprintf("timeline_breakdown[%d] ends (week %d) before it starts (week %d)", i, a.EndWeek, a.StartWeek))
		}
		if a.EndWeek > weeks {
			problems = append(problems, fmt.Sprintf("timeline_breakdown[%d] ends in week %d, after the project's %d weeks", i, a.EndWeek, weeks))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Issue is a problem quality control found.
type Issue struct {
	Severity    Severity `json:"severity" jsonschema:"enum=critical,enum=major,enum=minor"`
	Component   Stage    `json:"component" jsonschema:"enum=problem_formulation,enum=objectives,enum=methodology,enum=data_collection"`
	Description string   `json:"description" jsonschema:"minLength=1"`
	Impact      string   `json:"impact" jsonschema:"minLength=1"`
}

// qcReply is what the quality-control agent returns.
type qcReply struct {
	CoherenceScore    float64  `json:"coherence_score" jsonschema:"minimum=0,maximum=1"`
	FeasibilityScore  float64  `json:"feasibility_score" jsonschema:"minimum=0,maximum=1"`
	IssuesIdentified  []Issue  `json:"issues_identified"`
	Recommendations   []string `json:"recommendations"`
	RefinementTargets []Stage  `json:"refinement_targets" jsonschema:"uniqueItems=true,enum=problem_formulation,enum=objectives,enum=methodology,enum=data_collection"`
	Summary           string   `json:"summary" jsonschema:"minLength=1"`
}

// Validate checks the targets and that a failing proposal says what to
// refine.
func (q *qcReply) Validate() error {
	for _, s := range q.RefinementTargets {
		if s.order() < 0 {
			return fmt.Errorf("refinement_targets: %q is not a stage (use %s)", s, stageList())
		}
	}
	if v := verdictOf(q.CoherenceScore, q.FeasibilityScore, q.IssuesIdentified); v == Fail {
		if len(q.RefinementTargets) == 0 {
			return fmt.Errorf("the proposal fails quality control (%s), so refinement_targets must name the stages to refine (%s)", failReason(q.CoherenceScore, q.FeasibilityScore, q.IssuesIdentified), stageList())
		}
		if len(q.Recommendations) == 0 {
			return errors.New("the proposal fails quality control, so recommendations must say what to change")
		}
	}
	return nil
}

func stageList() string {
	var s []string
	for _, st := range Stages {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// QualityValidation is quality control's assessment of one round (seed:
// the QualityValidation model). The verdict and the overall score are
// computed from the scores and issues, not taken from the model.
type QualityValidation struct {
	Round               int      `json:"round"`
	Verdict             Verdict  `json:"verdict"`
	ValidationPassed    bool     `json:"validation_passed"`
	RequiresRefinement  bool     `json:"requires_refinement"`
	CoherenceScore      float64  `json:"coherence_score"`
	FeasibilityScore    float64  `json:"feasibility_score"`
	OverallQualityScore int      `json:"overall_quality_score"`
	IssuesIdentified    []Issue  `json:"issues_identified"`
	Recommendations     []string `json:"recommendations"`
	RefinementTargets   []Stage  `json:"refinement_targets"`
	Summary             string   `json:"summary"`
	// Reason says why the proposal failed; empty when it passed.
	Reason string `json:"reason,omitempty"`
}

// verdictOf applies the pass rule: both scores at least 0.7 and no
// critical issue.
func verdictOf(coherence, feasibility float64, issues []Issue) Verdict {
	if failReason(coherence, feasibility, issues) != "" {
		return Fail
	}
	return Pass
}

// failReason says why the scores and issues fail the pass rule, "" when
// they pass.
func failReason(coherence, feasibility float64, issues []Issue) string {
	var r []string
	if coherence < MinCoherence {
		r = append(r, fmt.Sprintf("coherence %.2f < %.2f", coherence, MinCoherence))
	}
	if feasibility < MinFeasibility {
		r = append(r, fmt.Sprintf("feasibility %.2f < %.2f", feasibility, MinFeasibility))
	}
	n := 0
	for _, i := range issues {
		if i.Severity == Critical {
			n++
		}
	}
	if n > 0 {
		r = append(r, fmt.Sprintf("%d critical issue(s)", n))
	}
	return strings.Join(r, ", ")
}

// validation turns a quality-control reply into the round's assessment.
func (q *qcReply) validation(round int) QualityValidation {
	v := verdictOf(q.CoherenceScore, q.FeasibilityScore, q.IssuesIdentified)
	qv := QualityValidation{
		Round: round, Verdict: v, ValidationPassed: v == Pass, RequiresRefinement: v == Fail,
		CoherenceScore: q.CoherenceScore, FeasibilityScore: q.FeasibilityScore,
		OverallQualityScore: int(math.Round((q.CoherenceScore + q.FeasibilityScore) / 2 * 100)),
		IssuesIdentified:    q.IssuesIdentified, Recommendations: q.Recommendations,
		RefinementTargets: q.RefinementTargets, Summary: q.Summary,
		Reason: failReason(q.CoherenceScore, q.FeasibilityScore, q.IssuesIdentified),
	}
	if qv.IssuesIdentified == nil {
		qv.IssuesIdentified = []Issue{}
	}
	if qv.Recommendations == nil {
		qv.Recommendations = []string{}
	}
	if qv.RefinementTargets == nil {
		qv.RefinementTargets = []Stage{}
	}
	return qv
}

// earliest returns the first of targets in stage order.
func earliest(targets []Stage) Stage {
	best := targets[0]
	for _, t := range targets[1:] {
		if t.order() < best.order() {
			best = t
		}
	}
	return best
}
