package proposal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/store/sqlite"
)

func newDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// prompts returns the prompts of agent's requests, in order.
func prompts(rec *mock.Recorder, agent string) []string {
	var out []string
	for _, q := range rec.Of(agent) {
		out = append(out, q.Prompt())
	}
	return out
}

// responders returns the mock responders with some replaced.
func responders(over map[string]mock.Responder) map[string]mock.Responder {
	rs := MockResponders()
	for k, v := range over {
		rs[k] = v
	}
	return rs
}

// profile is a Master's student with hours a week for 6 months.
func profile(hours int) UserProfile {
	return UserProfile{
		AcademicProgram: "Master's", FieldOfStudy: "Education", ResearchArea: "peer tutoring in secondary schools",
		WeeklyHours: hours, TotalTimeline: Timeline{Value: 6, Unit: Months},
		ExistingSkills: []string{"surveys"}, MissingSkills: []string{"statistics"}, Constraints: []string{"no travel budget"},
		AdditionalContext: "Café-style study groups, naïve learners.",
	}
}

func params(hours int, mod func(*Params)) Params {
	p := DefaultParams()
	p.Profile = profile(hours)
	p.ProfileSource = "test.yaml"
	if mod != nil {
		mod(&p)
	}
	return p
}

type run struct {
	res   *Result
	rec   *mock.Recorder
	db    *sqlite.DB
	runID string
	err   error
}

func runProposal(t *testing.T, client llm.Client, sources []search.Provider, p Params) run {
	t.Helper()
	db := newDB(t)
	rec := &mock.Recorder{Next: client}
	pipe, err := New(sources, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: db, Client: rec}
	r, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "proposal", Mode: "mock", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(context.Background(), r, p)
	return run{res: res, rec: rec, db: db, runID: r.ID(), err: err}
}

func offline() []search.Provider { return []search.Provider{scholar.NewOffline()} }

func stepKeys(t *testing.T, db *sqlite.DB, id string) []string {
	t.Helper()
	steps, err := db.Steps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range steps {
		if s.Status == madspark.StepDone {
			keys = append(keys, s.Key)
		}
	}
	return keys
}

func states(ts []Transition) string {
	var s []string
	for _, t := range ts {
		s = append(s, string(t.To))
	}
	return strings.Join(s, " ")
}

// TestMockRunThroughOneRefinement runs the mock end to end for a profile
// whose hours (4 a week for 6 months, 104) are too few for the first data
// plan: quality control fails it, names methodology and data collection,
// and the second round re-runs those two stages only, with the
// recommendations, and passes.
func TestMockRunThroughOneRefinement(t *testing.T) {
	r := runProposal(t, mock.New(MockResponders()), offline(), params(4, nil))
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.res
	if !res.Passed || res.Refinements != 1 || len(res.Rounds) != 2 {
		t.Fatalf("passed %v, %d refinements, %d rounds", res.Passed, res.Refinements, len(res.Rounds))
	}
	first, second := res.Rounds[0], res.Rounds[1]
	if first.QualityValidation.Verdict != Fail || first.QualityValidation.FeasibilityScore >= MinFeasibility ||
		!reflect.DeepEqual(first.QualityValidation.RefinementTargets, []Stage{StageData, StageMethodology}) {
		t.Errorf("first review %+v", first.QualityValidation)
	}
	if second.From != StageMethodology || !reflect.DeepEqual(second.Stages, []Stage{StageMethodology, StageData}) || second.QualityValidation.Verdict != Pass {
		t.Errorf("second round from %s, stages %v, verdict %s", second.From, second.Stages, second.QualityValidation.Verdict)
	}
	if res.QualityValidation.Round != 1 || !res.QualityValidation.ValidationPassed || res.QualityValidation.OverallQualityScore < 70 {
		t.Errorf("final assessment %+v", res.QualityValidation)
	}

	// Journal: distinct keys per round; the stages before the earliest
	// target were not run again.
	want := []string{"r0/queries", "r0/literature", "r0/problem", "r0/objectives", "r0/methodology", "r0/data_collection", "r0/quality_control",
		"r1/methodology", "r1/data_collection", "r1/quality_control"}
	if got := stepKeys(t, r.db, r.runID); !reflect.DeepEqual(got, want) {
		t.Errorf("steps\n got %v\nwant %v", got, want)
	}
	if c := r.rec.Calls(); !reflect.DeepEqual(c, map[string]int{"queries": 1, "problem": 1, "objectives": 1, "methodology": 2, "data": 2, "qc": 2}) {
		t.Errorf("calls %v", c)
	}

	// The feedback reached the stages that ran again, with their previous
	// output; the data plan shrank to fit.
	meth := prompts(r.rec, agentMethodology)
	data := prompts(r.rec, agentData)
	if strings.Contains(meth[0], "Quality control reviewed") || !strings.Contains(meth[1], "Reduce the sample to about 9 participants") ||
		!strings.Contains(meth[1], "The earlier methodology was") {
		t.Errorf("methodology prompts do not carry the feedback as they should:\n%s", meth[1])
	}
	if !strings.Contains(data[1], `"estimated_sample_size": "40 participants"`) || res.DataCollectionPlan.EstimatedSampleSize != "9 participants" {
		t.Errorf("data plan: %q; second prompt lacks the previous plan", res.DataCollectionPlan.EstimatedSampleSize)
	}

	// The state machine went through every state, refinement included.
	wantStates := "INTERVIEWING PF_START LIT_REVIEW PF_REVISE PF_DONE OBJECTIVES METHODOLOGY DATA_COLLECTION QUALITY_CONTROL " +
		"REFINEMENT METHODOLOGY DATA_COLLECTION QUALITY_CONTROL COMPLETE"
	if got := states(res.Transitions); got != wantStates {
		t.Errorf("transitions\n got %s\nwant %s", got, wantStates)
	}
	if tr := res.Transitions[0]; tr.From != Init || tr.Detail != "profile from test.yaml" {
		t.Errorf("first transition %+v", tr)
	}
	last := res.Transitions[len(res.Transitions)-1]
	if last.Round != 1 || !strings.HasPrefix(last.Detail, "passed quality control") {
		t.Errorf("last transition %+v", last)
	}
	checkLiterature(t, res)
}

// checkLiterature asserts every cited work is one the offline source
// returns for the run's queries, with its title, URL, year and authors.
func checkLiterature(t *testing.T, res *Result) {
	t.Helper()
	returned := map[string]search.Result{}
	for _, q := range res.LiteratureSearch.Queries {
		rs, err := scholar.NewOffline().Search(context.Background(), q, DefaultPerQuery)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			returned[r.URL] = r
		}
	}
	lit := res.ProblemDefinition.PreliminaryLiterature
	if len(lit) < 3 {
		t.Fatalf("%d works cited", len(lit))
	}
	for i, e := range lit {
		r, ok := returned[e.URL]
		if !ok || r.Title != e.Title || r.Year != e.Year || !reflect.DeepEqual(r.Authors, e.Authors) || e.Ref != i+1 || e.RelevanceNote == "" {
			t.Errorf("entry %+v is not the search result %+v", e, r)
		}
	}
}

func TestMockRunPassesFirstTime(t *testing.T) {
	r := runProposal(t, mock.New(MockResponders()), offline(), params(10, nil))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.res.Passed || r.res.Refinements != 0 || len(r.rec.Requests()) != 6 {
		t.Errorf("passed %v, %d refinements, %d calls", r.res.Passed, r.res.Refinements, len(r.rec.Requests()))
	}
	if r.res.Notice(Meta{}) != "" || !strings.Contains(r.res.Notice(Meta{Mock: true}), "MOCK DATA") {
		t.Errorf("notice %q", r.res.Notice(Meta{Mock: true}))
	}
	if v := r.res.Verdict(); v == nil || !v.Passed || v.Check != "quality control" || !strings.HasPrefix(v.Note, "coherence ") {
		t.Errorf("verdict %+v", v)
	}
}

// TestRefinementCapStillProduces gives a profile too short for any study:
// every review fails with a critical issue on the problem, every round
// starts over from problem formulation, and after the cap the proposal is
// produced, marked as not passed.
func TestRefinementCapStillProduces(t *testing.T) {
	p := params(2, func(p *Params) { p.MaxRefinements = 2; p.Profile.TotalTimeline = Timeline{Value: 4, Unit: Weeks} })
	r := runProposal(t, mock.New(MockResponders()), offline(), p)
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.res
	if res.Passed || res.Refinements != 2 || len(res.Rounds) != 3 || len(r.rec.Requests()) != 18 {
		t.Fatalf("passed %v, %d refinements, %d rounds, %d calls", res.Passed, res.Refinements, len(res.Rounds), len(r.rec.Requests()))
	}
	for _, rd := range res.Rounds {
		if rd.From != StageProblem || len(rd.Stages) != 4 || rd.QualityValidation.Verdict != Fail {
			t.Errorf("round %+v", rd)
		}
	}
	if !strings.Contains(res.QualityValidation.Reason, "1 critical issue(s)") {
		t.Errorf("reason %q", res.QualityValidation.Reason)
	}
	last := res.Transitions[len(res.Transitions)-1]
	if last.To != Complete || !strings.Contains(last.Detail, "not passed after 2 refinement(s)") {
		t.Errorf("last transition %+v", last)
	}
	if n := res.Notice(Meta{}); !strings.Contains(n, "NOT PASSED") {
		t.Errorf("notice %q", n)
	}
	if v := res.Verdict(); v == nil || v.Passed || v.Note != "not passed after 2 refinements: "+res.QualityValidation.Reason {
		t.Errorf("verdict %+v", v)
	}
	if stopped := (Result{FailedStep: "r1/objectives"}); stopped.Verdict() != nil {
		t.Error("a proposal stopped at a failed step has a verdict")
	}
	// The refined problem formulation planned new searches from the
	// feedback.
	if q := prompts(r.rec, agentQueries); len(q) != 3 || !strings.Contains(q[1], "Narrow the research question") {
		t.Errorf("queries prompts %d", len(q))
	}
	if !strings.Contains(res.ProblemDefinition.ProblemStatement, "narrowed") {
		t.Errorf("problem not revised: %q", res.ProblemDefinition.ProblemStatement)
	}
	// Zero refinements allowed: one round, not passed.
	r = runProposal(t, mock.New(MockResponders()), offline(), params(2, func(p *Params) { p.MaxRefinements = 0; p.Profile.TotalTimeline = Timeline{Value: 4, Unit: Weeks} }))
	if r.err != nil || r.res.Passed || len(r.res.Rounds) != 1 {
		t.Errorf("max 0: %v", r.err)
	}
}

// TestRefinementStartsAtTheEarliestTarget overrides quality control: the
// first review names data collection and objectives; the second round
// starts at objectives.
func TestRefinementStartsAtTheEarliestTarget(t *testing.T) {
	n := 0
	var mu sync.Mutex
	qc := func(req *llm.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == 1 {
			return qcReply{CoherenceScore: 0.6, FeasibilityScore: 0.9, IssuesIdentified: []Issue{{Severity: Major, Component: StageObjectives, Description: "SO2 does not answer a question", Impact: "gap"}},
				Recommendations: []string{"Tie SO2 to RQ2"}, RefinementTargets: []Stage{StageData, StageObjectives}, Summary: "Incoherent."}, nil
		}
		return mockQC(req)
	}
	r := runProposal(t, mock.New(responders(map[string]mock.Responder{agentQC: qc})), offline(), params(10, nil))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if rd := r.res.Rounds[1]; rd.From != StageObjectives || len(rd.Stages) != 3 {
		t.Errorf("second round %+v", rd)
	}
	if r.res.Rounds[0].QualityValidation.Reason != "coherence 0.60 < 0.70" {
		t.Errorf("reason %q", r.res.Rounds[0].QualityValidation.Reason)
	}
	if !strings.Contains(prompts(r.rec, agentObjectives)[1], "Tie SO2 to RQ2") {
		t.Error("objectives did not get the feedback")
	}
}

// hasRepair reports whether repairs holds one by agent under rule whose
// action contains action.
func hasRepair(repairs []llm.Repair, agent, rule, action string) bool {
	for _, r := range repairs {
		if r.Agent == agent && r.Rule == rule && strings.Contains(r.Action, action) {
			return true
		}
	}
	return false
}

// TestCitationsMustBeSearchResults: a citation of a number that no search
// returned is dropped without a second call, and recorded.
func TestCitationsMustBeSearchResults(t *testing.T) {
	bad := func(req *llm.Request) (any, error) {
		v, err := mockProblem(req)
		rep := v.(problemReply)
		rep.Literature = append(rep.Literature, citation{ID: 999, RelevanceNote: "made up"})
		return rep, err
	}
	r := runProposal(t, mock.New(responders(map[string]mock.Responder{agentProblem: bad})), offline(), params(10, nil))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if c := r.rec.Calls()["problem"]; c != 1 {
		t.Errorf("%d problem calls, want 1", c)
	}
	checkLiterature(t, r.res)
	if !hasRepair(r.res.Repairs, agentProblem, "reference", "citations of ids that no search returned dropped: 999") {
		t.Errorf("repairs %+v", r.res.Repairs)
	}
}

func TestNoSearch(t *testing.T) {
	r := runProposal(t, mock.New(MockResponders()), offline(), params(10, func(p *Params) { p.NoSearch = true }))
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.res
	if len(res.ProblemDefinition.PreliminaryLiterature) != 0 || res.LiteratureSearch.Enabled || !strings.Contains(res.LiteratureSearch.Note, "--no-search") {
		t.Errorf("literature %+v", res.LiteratureSearch)
	}
	if c := r.rec.Calls(); c["queries"] != 0 || len(r.rec.Requests()) != 5 {
		t.Errorf("calls %v", c)
	}
	if got := states(res.Transitions[:4]); got != "INTERVIEWING PF_START PF_REVISE PF_DONE" {
		t.Errorf("transitions %s", got)
	}
	// A citation without search results is dropped.
	cite := func(req *llm.Request) (any, error) {
		v, err := mockProblem(req)
		rep := v.(problemReply)
		rep.Literature = []citation{{ID: 1, RelevanceNote: "x"}}
		return rep, err
	}
	r = runProposal(t, mock.New(responders(map[string]mock.Responder{agentProblem: cite})), offline(), params(10, func(p *Params) { p.NoSearch = true }))
	if r.err != nil || len(r.res.ProblemDefinition.PreliminaryLiterature) != 0 || !hasRepair(r.res.Repairs, agentProblem, "reference", "dropped: 1") {
		t.Errorf("err %v, repairs %+v", r.err, r.res.Repairs)
	}
}

type failingSource struct{ name string }

func (f failingSource) Name() string { return f.name }
func (f failingSource) Search(context.Context, string, int) ([]search.Result, error) {
	return nil, &llm.Error{Provider: f.name, Status: 403, Message: "Forbidden"}
}

func TestSearchFailures(t *testing.T) {
	// One source down: the others are used and the note says so.
	r := runProposal(t, mock.New(MockResponders()), []search.Provider{failingSource{"semanticscholar"}, scholar.NewOffline()}, params(10, nil))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if n := r.res.LiteratureSearch.Note; !strings.Contains(n, "some searches failed: semanticscholar") {
		t.Errorf("note %q", n)
	}
	checkLiterature(t, r.res)
	// Every source down: the run fails, saying what to do.
	r = runProposal(t, mock.New(MockResponders()), []search.Provider{failingSource{"openalex"}}, params(10, nil))
	if r.err == nil || !strings.Contains(r.err.Error(), "every search failed") || !strings.Contains(r.err.Error(), "--no-search") {
		t.Errorf("err %v", r.err)
	}
}

// TestResumeReplaysEveryRound interrupts a run in its refinement round and
// resumes it: the steps of both rounds that had finished are replayed from
// the journal with no model call.
func TestResumeReplaysEveryRound(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	pipe, err := New(offline(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := params(4, nil)
	// The second data-collection call (round 1) fails.
	var mu sync.Mutex
	dataCalls := 0
	rs := responders(map[string]mock.Responder{agentData: func(req *llm.Request) (any, error) {
		mu.Lock()
		dataCalls++
		n := dataCalls
		mu.Unlock()
		if n == 2 {
			return nil, errors.New("provider down")
		}
		return mockData(req)
	}})
	first := &mock.Recorder{Next: mock.New(rs)}
	e := &engine.Engine{Store: db, Client: first}
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "proposal", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipe.Run(ctx, r, p); err == nil || !strings.Contains(err.Error(), "proposal.data") {
		t.Fatalf("first attempt: %v", err)
	}
	if err := r.Finish(ctx, nil, errors.New("interrupted")); err != nil {
		t.Fatal(err)
	}
	second := &mock.Recorder{Next: mock.New(MockResponders())}
	e2 := &engine.Engine{Store: db, Client: second}
	r2, err := e2.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(ctx, r2, p)
	if err != nil {
		t.Fatal(err)
	}
	if c := second.Calls(); !reflect.DeepEqual(c, map[string]int{"data": 1, "qc": 1}) {
		t.Errorf("resumed run called %v; want only r1's data collection and review", c)
	}
	if !res.Passed || res.Refinements != 1 {
		t.Errorf("resumed result: passed %v, %d refinements", res.Passed, res.Refinements)
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Params)
		want string
	}{
		{func(p *Params) { p.MaxRefinements = 11 }, "max_refinements must be 0..10"},
		{func(p *Params) { p.MaxRefinements = -1 }, "max_refinements"},
		{func(p *Params) { p.ResultsPerQuery = 0 }, "results_per_query must be 1..25"},
		{func(p *Params) { p.Profile.WeeklyHours = 0 }, "profile: weekly_hours"},
	} {
		p := params(10, tc.mod)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v", tc.want, err)
		}
	}
	p := params(10, nil)
	if err := p.Validate(); err != nil {
		t.Errorf("valid params: %v", err)
	}
}

func TestStageChecks(t *testing.T) {
	phases := []Phase{{"a", 20}, {"b", 10}}
	scalePhases(phases, 26)
	if phases[0].Weeks+phases[1].Weeks != 26 || phases[0].Weeks != 17 {
		t.Errorf("30 weeks scaled to 26: %+v", phases)
	}
	ones := []Phase{{"a", 1}, {"b", 1}, {"c", 9}}
	scalePhases(ones, 5)
	if ones[0].Weeks != 1 || ones[1].Weeks != 1 || ones[2].Weeks != 3 {
		t.Errorf("11 weeks scaled to 5, each at least 1: %+v", ones)
	}
	if got := cutWords("alpha beta gamma", 12); got != "alpha beta" {
		t.Errorf("cutWords %q", got)
	}
	if v := verdictOf(0.7, 0.7, []Issue{{Severity: Major}}); v != Pass {
		t.Errorf("0.7/0.7 with a major issue: %s", v)
	}
	if got := earliest([]Stage{StageData, StageObjectives, StageMethodology}); got != StageObjectives {
		t.Errorf("earliest %s", got)
	}
}

func TestMockResponderRejectsWrongInput(t *testing.T) {
	for name, fn := range MockResponders() {
		if _, err := fn(&llm.Request{Agent: name, Input: 42}); err == nil {
			t.Errorf("%s accepted an int input", name)
		}
	}
	if fmt.Sprint(len(MockResponders())) != "6" {
		t.Error("not one responder per agent")
	}
}
