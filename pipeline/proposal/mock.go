package proposal

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"

	"github.com/madspark/madspark/llm"
)

// MockResponders returns deterministic answers for each of the pipeline's
// agents, built from the profile so that they fit it.
//
// The mock quality control is a small rule-based reviewer: it estimates the
// hours the data collection plan needs (60 hours of design, analysis and
// writing, plus 3 hours per unit of the sample) and scores feasibility as
// the share of them the profile's hours cover. A tight profile therefore
// fails the first review; the mock data agent, given the feedback, shrinks
// the sample to what the hours allow, and the next review passes. A
// profile with fewer hours than the smallest study needs (84) never passes,
// and its proposal comes out marked as not passed.
func MockResponders() map[string]func(*llm.Request) (any, error) {
	return map[string]func(*llm.Request) (any, error){
		agentQueries:     mockQueries,
		agentProblem:     mockProblem,
		agentObjectives:  mockObjectives,
		agentMethodology: mockMethodology,
		agentData:        mockData,
		agentQC:          mockQC,
	}
}

// Mock effort model.
const (
	mockOverheadHours = 60
	mockHoursPerUnit  = 3
	mockFirstSample   = 40
	mockMinSample     = 8
)

func mockHash(parts ...string) uint32 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

func unexpected(req *llm.Request) error { return fmt.Errorf("unexpected input %T", req.Input) }

func mockQueries(req *llm.Request) (any, error) {
	in, ok := req.Input.(queriesInput)
	if !ok {
		return nil, unexpected(req)
	}
	area, field := in.Profile.ResearchArea, in.Profile.FieldOfStudy
	qs := []string{area, area + " " + field, area + " methods evaluation"}
	if in.Feedback != nil {
		qs = append(qs, area+" feasibility small sample")
	}
	return searchPlan{Queries: qs, Rationale: "The queries cover the topic, its field and the methods used to study it."}, nil
}

func mockProblem(req *llm.Request) (any, error) {
	in, ok := req.Input.(problemInput)
	if !ok {
		return nil, unexpected(req)
	}
	pr := in.Profile
	scope := "in one setting the researcher can reach"
	if in.Feedback != nil {
		scope = "narrowed to a single site and one cohort, as quality control asked"
	}
	rep := problemReply{
		WorkingTitle:         fmt.Sprintf("%s: a study in %s", titleCase(pr.ResearchArea), pr.FieldOfStudy),
		ProblemStatement:     fmt.Sprintf("Work on %s in %s rarely reaches the people it is meant to help: findings from large studies do not say what works in small settings. This project examines %s %s.", pr.ResearchArea, pr.FieldOfStudy, pr.ResearchArea, scope),
		ResearchGap:          fmt.Sprintf("The literature on %s reports outcomes at scale but little on how practice changes in small settings over one term.", pr.ResearchArea),
		Justification:        fmt.Sprintf("A %s project of %d hours a week can produce evidence a practitioner can act on.", pr.AcademicProgram, pr.WeeklyHours),
		MainResearchQuestion: fmt.Sprintf("How does %s affect outcomes in a small setting over %s?", pr.ResearchArea, pr.TotalTimeline),
		SecondaryQuestions:   []string{fmt.Sprintf("Which factors explain differences in how %s is taken up?", pr.ResearchArea), "What do participants report as the main barriers?"},
		KeyVariables:         []string{"uptake", "outcome change", "participant experience"},
		Literature:           []citation{},
		SearchSummary:        fmt.Sprintf("The works found treat %s from several angles; few follow one setting over time.", pr.ResearchArea),
	}
	for i, w := range in.Works {
		if i == 5 {
			break
		}
		rep.Literature = append(rep.Literature, citation{ID: w.ID, RelevanceNote: fmt.Sprintf("Frames %s and the outcomes to measure.", pr.ResearchArea)})
	}
	return rep, nil
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	return strings.ToUpper(string(r[0])) + string(r[1:])
}

func mockObjectives(req *llm.Request) (any, error) {
	in, ok := req.Input.(objectivesInput)
	if !ok {
		return nil, unexpected(req)
	}
	area, w := in.Profile.ResearchArea, in.Weeks
	due := func(k int) int { return max(1, w*k/4) }
	qs := in.Problem.Questions()
	rq := func(i int) string { return qs[i%len(qs)].ID }
	return ResearchObjectives{
		GeneralObjective: fmt.Sprintf("To determine how %s affects outcomes in a small setting within %s.", area, in.Profile.TotalTimeline),
		SpecificObjectives: []SpecificObjective{
			{ID: "SO1", Objective: fmt.Sprintf("Review the literature on %s and fix the outcome measures.", area), ResearchQuestion: rq(0), Indicator: "an outcome framework approved by the supervisor", DueWeek: due(1)},
			{ID: "SO2", Objective: "Collect data from the planned sample in the chosen setting.", ResearchQuestion: rq(1), Indicator: "the planned sample reached and the data checked", DueWeek: due(2)},
			{ID: "SO3", Objective: "Analyse the data and answer the research questions.", ResearchQuestion: rq(0), Indicator: "findings for each research question", DueWeek: due(3)},
		},
		AlignmentCheck:   AlignmentCheck{Verdict: "aligned", Explanation: "Each objective answers a research question and the main question is covered."},
		FeasibilityNotes: fmt.Sprintf("The objectives are spread over the %d weeks available.", w),
	}, nil
}

func mockMethodology(req *llm.Request) (any, error) {
	in, ok := req.Input.(methodologyInput)
	if !ok {
		return nil, unexpected(req)
	}
	w := in.Weeks
	kinds := []MethodologyType{Mixed, Quantitative, Qualitative}
	kind := kinds[mockHash(in.Profile.ResearchArea)%3]
	design := map[MethodologyType]string{
		Mixed:        "An explanatory sequential mixed-methods design: a survey, then interviews with a subset",
		Quantitative: "A pre-post quantitative study with validated questionnaires",
		Qualitative:  "A qualitative case study with semi-structured interviews and observation",
	}[kind]
	fit := "fits"
	if in.Feedback != nil {
		design += ", scaled down to the hours available"
		fit = "tight"
	}
	setup, collect := max(1, w/4), max(1, w/3)
	analyse := max(1, w/4)
	write := max(1, w-setup-collect-analyse)
	if setup+collect+analyse+write > w { // only for the shortest timelines
		setup, collect, analyse, write = 1, 1, 0, 0
	}
	phases := []Phase{{Name: "Set-up and ethics", Weeks: setup}, {Name: "Data collection", Weeks: collect}}
	if analyse > 0 {
		phases = append(phases, Phase{Name: "Analysis", Weeks: analyse}, Phase{Name: "Writing", Weeks: write})
	}
	return MethodologyRecommendation{
		RecommendedMethodology: design + ".",
		MethodologyType:        kind,
		Justification:          fmt.Sprintf("It answers the main question with the %s's skills and in %d weeks.", strings.ToLower(in.Profile.AcademicProgram)+" student", w),
		RequiredSkills:         append([]string{"research design"}, in.Profile.MissingSkills...),
		TimelineFit:            TimelineFit{Verdict: fit, Phases: phases, Explanation: fmt.Sprintf("The phases take %d weeks in all.", setup+collect+analyse+write)},
		AlternativeMethodologies: []Alternative{{
			Name: "Large-scale survey", MethodologyType: Quantitative, Pros: []string{"generalisable"}, Cons: []string{"needs a large sample"},
			WhyNotChosen: "The time available does not allow a large sample.",
		}},
	}, nil
}

// mockSample is the sample the mock data plan proposes: 40 units, or, once
// quality control asked for changes, what the profile's hours allow.
func mockSample(pr UserProfile, fb *Feedback) int {
	if fb == nil {
		return mockFirstSample
	}
	n := (pr.HoursAvailable()*85/100 - mockOverheadHours) / mockHoursPerUnit
	return max(mockMinSample, min(mockFirstSample, n))
}

func mockData(req *llm.Request) (any, error) {
	in, ok := req.Input.(dataInput)
	if !ok {
		return nil, unexpected(req)
	}
	n := mockSample(in.Profile, in.Feedback)
	w := in.Weeks
	start, end := max(1, w/4), max(1, w/4+w/3)
	end = min(end, w)
	return DataCollectionPlan{
		CollectionTechniques: []string{"online questionnaire", "semi-structured interviews"},
		RecommendedTools: []Tool{
			{Name: "LimeSurvey", Purpose: "questionnaires", Access: "free"},
			{Name: "Audio recorder", Purpose: "interviews", Access: "institutional"},
		},
		DataSources:           []string{fmt.Sprintf("participants in %s", in.Profile.ResearchArea)},
		EstimatedSampleSize:   fmt.Sprintf("%d participants", n),
		SamplingStrategy:      "purposive sampling within one setting",
		TimelineBreakdown:     []Activity{{Phase: "Data collection", StartWeek: start, EndWeek: end, Description: fmt.Sprintf("Recruit and survey %d participants; interview a subset.", n)}},
		ResourceRequirements:  []string{"access to one setting", "a recorder"},
		EthicalConsiderations: []string{"informed consent", "anonymised data"},
	}, nil
}

var leadingNumber = regexp.MustCompile(`\d+`)

func mockQC(req *llm.Request) (any, error) {
	in, ok := req.Input.(qcInput)
	if !ok {
		return nil, unexpected(req)
	}
	n, _ := strconv.Atoi(leadingNumber.FindString(in.Data.EstimatedSampleSize))
	need := mockOverheadHours + mockHoursPerUnit*n
	have := in.Hours
	feasibility := min(0.95, float64(have)/float64(need))
	feasibility = float64(int(feasibility*100)) / 100
	coherence := 0.8 + float64(mockHash(in.Problem.WorkingTitle)%10)/100
	rep := qcReply{
		CoherenceScore: coherence, FeasibilityScore: feasibility,
		IssuesIdentified: []Issue{}, Recommendations: []string{}, RefinementTargets: []Stage{},
		Summary: fmt.Sprintf("The proposal is coherent; the plan needs about %d hours and the profile has %d.", need, have),
	}
	minNeed := mockOverheadHours + mockHoursPerUnit*mockMinSample
	switch {
	case have < minNeed:
		rep.IssuesIdentified = append(rep.IssuesIdentified, Issue{Severity: Critical, Component: StageProblem,
			Description: fmt.Sprintf("The %d hours available are fewer than the %d the smallest empirical study needs.", have, minNeed),
			Impact:      "The project cannot be completed as scoped."})
		rep.Recommendations = append(rep.Recommendations, "Narrow the research question to what a desk study can answer, or find more time.")
		rep.RefinementTargets = []Stage{StageProblem}
	case feasibility < MinFeasibility:
		fit := max(mockMinSample, (have*85/100-mockOverheadHours)/mockHoursPerUnit)
		rep.IssuesIdentified = append(rep.IssuesIdentified, Issue{Severity: Major, Component: StageData,
			Description: fmt.Sprintf("Collecting data from %d participants needs about %d hours; only %d are available.", n, need, have),
			Impact:      "Data collection would overrun the timeline."})
		rep.Recommendations = append(rep.Recommendations, fmt.Sprintf("Reduce the sample to about %d participants so the study fits the %d hours available.", fit, have),
			"Scale the methodology down to match the smaller sample.")
		rep.RefinementTargets = []Stage{StageData, StageMethodology}
	default:
		rep.IssuesIdentified = append(rep.IssuesIdentified, Issue{Severity: Minor, Component: StageObjectives,
			Description: "The indicators could name their target values.", Impact: "Progress is harder to judge."})
		rep.Recommendations = append(rep.Recommendations, "Give each indicator a target value.")
	}
	return rep, nil
}
