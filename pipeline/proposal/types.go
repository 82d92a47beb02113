package proposal

import (
	"fmt"
	"math"
	"strings"

	"github.com/madspark/madspark/structured"
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
	SecondaryQuestions   []string   `json:"secondary_questions,omitempty" jsonschema:"maxItems=4"`
	KeyVariables         []string   `json:"key_variables" jsonschema:"minItems=1,maxItems=10"`
	Literature           []citation `json:"preliminary_literature,omitempty" jsonschema:"maxItems=10"`
	SearchSummary        string     `json:"search_summary,omitempty"`
}

// citation cites a search result by its number.
type citation struct {
	ID            int    `json:"id" jsonschema:"minimum=1"`
	RelevanceNote string `json:"relevance_note" jsonschema:"minLength=1"`
}

// Check drops the empty secondary questions.
func (r *problemReply) Check(p *structured.Problems) {
	if n := countEmpty(r.SecondaryQuestions); n > 0 {
		p.Fix("count", fmt.Sprintf("%d secondary question(s) are empty", n), func() string {
			r.SecondaryQuestions = dropEmpty(r.SecondaryQuestions)
			return fmt.Sprintf("%d empty secondary question(s) dropped", n)
		})
	}
}

func countEmpty(list []string) int {
	n := 0
	for _, s := range list {
		if strings.TrimSpace(s) == "" {
			n++
		}
	}
	return n
}

func dropEmpty(list []string) []string {
	out := list[:0]
	for _, s := range list {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// searchPlan is what the literature-review agent returns: the queries to
// search.
type searchPlan struct {
	Queries   []string `json:"queries" jsonschema:"minItems=3,maxItems=5"`
	Rationale string   `json:"rationale,omitempty"`
}

// maxQuery is the longest query searched, in characters.
const maxQuery = 200

// Check keeps the queries distinct and of a searchable length: spaces are
// collapsed, empty and repeated queries dropped, a long one cut at a word
// to maxQuery characters. A plan with no query left is unusable.
func (s *searchPlan) Check(p *structured.Problems) {
	var kept []string
	var empty, dups, long int
	seen := map[string]bool{}
	for _, q := range s.Queries {
		q = strings.Join(strings.Fields(q), " ")
		if len([]rune(q)) > maxQuery {
			q = cutWords(q, maxQuery)
			long++
		}
		switch k := strings.ToLower(q); {
		case q == "":
			empty++
		case seen[k]:
			dups++
		default:
			seen[k] = true
			kept = append(kept, q)
		}
	}
	if len(kept) == 0 {
		p.Hard("count", "queries holds no query: list 3-5 distinct keyword queries")
		return
	}
	if empty+dups+long == 0 {
		s.Queries = kept // spaces collapsed: not worth a repair of its own
		return
	}
	p.Fix("count", fmt.Sprintf("queries: %d empty, %d repeated, %d too long", empty, dups, long), func() string {
		s.Queries = kept
		var parts []string
		if empty > 0 {
			parts = append(parts, fmt.Sprintf("%d empty dropped", empty))
		}
		if dups > 0 {
			parts = append(parts, fmt.Sprintf("%d repeated dropped", dups))
		}
		if long > 0 {
			parts = append(parts, fmt.Sprintf("%d cut to %d characters", long, maxQuery))
		}
		return "queries: " + strings.Join(parts, ", ")
	})
}

// cutWords cuts s to at most n runes, at a space when there is one.
func cutWords(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut)
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
	FeasibilityNotes   string              `json:"feasibility_notes,omitempty"`
}

// check enforces the rules that depend on the problem and the timeline.
// The ids are positions, so they are renumbered SO1..SOn; a deadline after
// the project's end moves to its last week; an objective mapped to a
// question that does not exist, or none answering the main question RQ1,
// is asked about once, then mapped to RQ1 (the main question, which every
// objective serves).
func (o *ResearchObjectives) check(p *structured.Problems, questions []Question, weeks int) {
	known := map[string]bool{}
	var ids []string
	for _, q := range questions {
		known[q.ID] = true
		ids = append(ids, q.ID)
	}
	var renumber []string
	var unknown []int
	mainCovered := false
	for i := range o.SpecificObjectives {
		so := &o.SpecificObjectives[i]
		if want := fmt.Sprintf("SO%d", i+1); so.ID != want {
			renumber = append(renumber, fmt.Sprintf("%q → %s", so.ID, want))
		}
		if !known[so.ResearchQuestion] {
			unknown = append(unknown, i)
		}
		mainCovered = mainCovered || so.ResearchQuestion == "RQ1"
		if so.DueWeek > weeks {
			p.Fix("budget", fmt.Sprintf("%s is due in week %d, after the project's %d weeks", so.ID, so.DueWeek, weeks), func() string {
				was := so.DueWeek
				so.DueWeek = weeks
				return fmt.Sprintf("objective %d due week %d → %d", i+1, was, weeks)
			})
		}
	}
	if len(renumber) > 0 {
		p.Fix("id", "the specific objectives are numbered SO1, SO2, ... in order", func() string {
			for i := range o.SpecificObjectives {
				o.SpecificObjectives[i].ID = fmt.Sprintf("SO%d", i+1)
			}
			return "ids renumbered by position: " + strings.Join(renumber, ", ")
		})
	}
	for _, i := range unknown {
		so := &o.SpecificObjectives[i]
		p.Ask("reference", fmt.Sprintf("specific objective %d maps to %q, which is not a research question (there are %s)", i+1, so.ResearchQuestion, strings.Join(ids, ", ")), func() string {
			was := so.ResearchQuestion
			so.ResearchQuestion = "RQ1"
			return fmt.Sprintf("objective %d: research question %q → RQ1", i+1, was)
		})
	}
	if !mainCovered && len(unknown) == 0 && len(o.SpecificObjectives) > 0 {
		p.Ask("consistency", "no specific objective answers the main research question RQ1", func() string {
			return "kept: no objective answers RQ1"
		})
	}
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
	RequiredSkills           []string        `json:"required_skills,omitempty"`
	TimelineFit              TimelineFit     `json:"timeline_fit"`
	AlternativeMethodologies []Alternative   `json:"alternative_methodologies" jsonschema:"minItems=1,maxItems=3"`
}

// check makes the phases fit in the project: phases that add up to more
// weeks than it has are scaled down to its length, each keeping at least a
// week.
func (m *MethodologyRecommendation) check(p *structured.Problems, weeks int) {
	phases := m.TimelineFit.Phases
	total := 0
	for _, ph := range phases {
		total += ph.Weeks
	}
	if total <= weeks {
		return
	}
	p.Fix("budget", fmt.Sprintf("timeline_fit.phases add up to %d weeks; the project has %d", total, weeks), func() string {
		scalePhases(phases, weeks)
		after := 0
		for _, ph := range phases {
			after += ph.Weeks
		}
		return fmt.Sprintf("phases scaled from %d weeks to %d, the project's length", total, after)
	})
}

// scalePhases shortens phases in proportion so that they add up to weeks at
// most, each keeping at least one week; the weeks left by rounding down go
// to the phases that lost most to it.
func scalePhases(phases []Phase, weeks int) {
	total := 0
	for _, ph := range phases {
		total += ph.Weeks
	}
	if total <= weeks || total == 0 {
		return
	}
	type share struct {
		i    int
		frac float64
	}
	sum := 0
	shares := make([]share, len(phases))
	for i := range phases {
		exact := float64(phases[i].Weeks) * float64(weeks) / float64(total)
		phases[i].Weeks = max(1, int(math.Floor(exact)))
		shares[i] = share{i, exact - math.Floor(exact)}
		sum += phases[i].Weeks
	}
	for sum < weeks {
		best := -1
		for j, sh := range shares {
			if best < 0 || sh.frac > shares[best].frac {
				best = j
			}
		}
		if best < 0 || shares[best].frac <= 0 {
			break
		}
		phases[shares[best].i].Weeks++
		shares[best].frac = 0
		sum++
	}
	// Phases held at one week can leave the total over; take from the
	// longest.
	for sum > weeks {
		longest := 0
		for i := range phases {
			if phases[i].Weeks > phases[longest].Weeks {
				longest = i
			}
		}
		if phases[longest].Weeks <= 1 {
			break
		}
		phases[longest].Weeks--
		sum--
	}
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
	RecommendedTools      []Tool     `json:"recommended_tools,omitempty"`
	DataSources           []string   `json:"data_sources" jsonschema:"minItems=1"`
	EstimatedSampleSize   string     `json:"estimated_sample_size" jsonschema:"minLength=1"`
	SamplingStrategy      string     `json:"sampling_strategy" jsonschema:"minLength=1"`
	TimelineBreakdown     []Activity `json:"timeline_breakdown" jsonschema:"minItems=1,maxItems=12"`
	ResourceRequirements  []string   `json:"resource_requirements,omitempty"`
	EthicalConsiderations []string   `json:"ethical_considerations,omitempty"`
}

// check keeps every activity within the project: weeks given the wrong
// way round are swapped, and an activity past the project's end is
// clamped to its last week.
func (d *DataCollectionPlan) check(p *structured.Problems, weeks int) {
	for i := range d.TimelineBreakdown {
		a := &d.TimelineBreakdown[i]
		if a.EndWeek < a.StartWeek {
			p.Fix("consistency", fmt.Sprintf("timeline_breakdown[%d] ends (week %d) before it starts (week %d)", i, a.EndWeek, a.StartWeek), func() string {
				a.StartWeek, a.EndWeek = a.EndWeek, a.StartWeek
				return fmt.Sprintf("activity %d: weeks %d-%d swapped", i+1, a.EndWeek, a.StartWeek)
			})
		}
		if max(a.StartWeek, a.EndWeek) > weeks {
			p.Fix("budget", fmt.Sprintf("timeline_breakdown[%d] ends in week %d, after the project's %d weeks", i, max(a.StartWeek, a.EndWeek), weeks), func() string {
				s, e := a.StartWeek, a.EndWeek
				a.StartWeek, a.EndWeek = min(a.StartWeek, weeks), min(a.EndWeek, weeks)
				return fmt.Sprintf("activity %d: weeks %d-%d → %d-%d", i+1, s, e, a.StartWeek, a.EndWeek)
			})
		}
	}
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
	IssuesIdentified  []Issue  `json:"issues_identified,omitempty"`
	Recommendations   []string `json:"recommendations,omitempty"`
	RefinementTargets []Stage  `json:"refinement_targets,omitempty" jsonschema:"uniqueItems=true,enum=problem_formulation,enum=objectives,enum=methodology,enum=data_collection"`
	Summary           string   `json:"summary" jsonschema:"minLength=1"`
}

// stageSynonyms map the words models use for the stages onto them.
var stageSynonyms = map[string]string{
	"problem": string(StageProblem), "problem definition": string(StageProblem), "literature": string(StageProblem),
	"objective": string(StageObjectives), "research objectives": string(StageObjectives),
	"methods": string(StageMethodology), "method": string(StageMethodology),
	"data": string(StageData), "data collection plan": string(StageData),
}

// enumSynonyms map the words models use for the enum values of the
// proposal's replies onto them.
var enumSynonyms = map[string]string{
	"blocker": string(Critical), "fatal": string(Critical), "severe": string(Critical),
	"high": string(Major), "significant": string(Major), "moderate": string(Major), "medium": string(Major),
	"low": string(Minor), "trivial": string(Minor), "cosmetic": string(Minor),
	"mixed methods": string(Mixed), "mixed method": string(Mixed), "quant": string(Quantitative), "qual": string(Qualitative),
	"fit": "fits", "tight fit": "tight", "too tight": "does_not_fit", "not feasible": "does_not_fit",
	"partial": "partially_aligned", "partly aligned": "partially_aligned", "not aligned": "misaligned",
	"institution": "institutional", "paid": "licensed", "open source": "free",
}

// Check keeps the targets consistent with the verdict. A repeated target is
// dropped, an unknown one too; a failing proposal with no target refines
// from problem formulation, as a full refinement does, and one with no
// recommendation takes its issues (or its summary) as the recommendations.
func (q *qcReply) Check(p *structured.Problems) {
	var bad []string
	dup, valid := false, false
	seen := map[Stage]bool{}
	for _, s := range q.RefinementTargets {
		switch {
		case s.order() < 0:
			bad = append(bad, string(s))
		case seen[s]:
			dup = true
		default:
			valid = true
		}
		seen[s] = true
	}
	if len(bad) > 0 || dup {
		msg := "refinement_targets repeats a stage"
		if len(bad) > 0 {
			msg = fmt.Sprintf("refinement_targets: %s is not a stage (use %s)", strings.Join(bad, ", "), stageList())
		}
		p.Fix("reference", msg, func() string {
			seen := map[Stage]bool{}
			kept := q.RefinementTargets[:0]
			for _, s := range q.RefinementTargets {
				if s.order() >= 0 && !seen[s] {
					seen[s] = true
					kept = append(kept, s)
				}
			}
			q.RefinementTargets = kept
			if len(bad) > 0 {
				return "unknown refinement targets dropped: " + strings.Join(bad, ", ")
			}
			return "repeated refinement targets dropped"
		})
	}
	if v := verdictOf(q.CoherenceScore, q.FeasibilityScore, q.IssuesIdentified); v == Fail {
		if !valid {
			p.Fix("consistency", fmt.Sprintf("the proposal fails quality control (%s), so refinement_targets must name the stages to refine (%s)", failReason(q.CoherenceScore, q.FeasibilityScore, q.IssuesIdentified), stageList()), func() string {
				q.RefinementTargets = []Stage{StageProblem}
				return "failed without refinement targets → refine from " + string(StageProblem)
			})
		}
		if len(dropEmpty(append([]string(nil), q.Recommendations...))) == 0 {
			p.Fix("consistency", "the proposal fails quality control, so recommendations must say what to change", func() string {
				var recs []string
				for _, is := range q.IssuesIdentified {
					recs = append(recs, fmt.Sprintf("Address the %s issue in %s: %s", is.Severity, is.Component, is.Description))
				}
				if len(recs) == 0 {
					recs = []string{q.Summary}
				}
				q.Recommendations = recs
				return fmt.Sprintf("failed without recommendations → %d taken from the issues and summary", len(recs))
			})
		}
	}
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
