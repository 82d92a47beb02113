package proposal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/search"
)

// Schema names of the agents.
const (
	schemaQueries     = "proposal_search_plan"
	schemaProblem     = "proposal_problem_definition"
	schemaObjectives  = "proposal_research_objectives"
	schemaMethodology = "proposal_methodology"
	schemaData        = "proposal_data_collection_plan"
	schemaQC          = "proposal_quality_validation"
)

var thirdResultRE = regexp.MustCompile(`(?m)^\[3\] `)

// wireProposalReply answers every proposal agent well, as a model would,
// for a 26-week project; the problem agent cites results 1-3 when the
// prompt lists search results.
func wireProposalReply(req *openaitest.ChatRequest) openaitest.Reply {
	if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
		return openaitest.Reply{Content: "no schema was sent"}
	}
	var v any
	switch name := req.ResponseFormat.JSONSchema.Name; name {
	case schemaQueries:
		v = map[string]any{"queries": []string{"peer tutoring secondary maths", "peer tutoring outcomes", "cross-age tutoring effects"}, "rationale": "Cover the field."}
	case schemaProblem:
		lit := []any{}
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content + "\n")
		}
		if thirdResultRE.MatchString(all.String()) {
			for id := 1; id <= 3; id++ {
				lit = append(lit, map[string]any{"id": id, "relevance_note": fmt.Sprintf("work %d frames the question", id)})
			}
		}
		v = map[string]any{"working_title": "Peer tutoring study", "problem_statement": "Peer tutoring outcomes are unclear in small schools.",
			"research_gap": "Few studies follow one school.", "justification": "Schools need evidence.", "main_research_question": "Does peer tutoring raise maths scores?",
			"secondary_questions": []string{"Who benefits most?"}, "key_variables": []string{"maths score"}, "preliminary_literature": lit, "search_summary": "Three relevant works."}
	case schemaObjectives:
		so := func(i int, rq string, week int) map[string]any {
			return map[string]any{"id": fmt.Sprintf("SO%d", i), "objective": "Objective " + fmt.Sprint(i), "research_question": rq, "indicator": "a measure", "due_week": week}
		}
		v = map[string]any{"general_objective": "Measure the effect of peer tutoring.", "specific_objectives": []any{so(1, "RQ1", 8), so(2, "RQ2", 16), so(3, "RQ1", 24)},
			"alignment_check": map[string]any{"verdict": "aligned", "explanation": "All questions covered."}, "feasibility_notes": "Fits."}
	case schemaMethodology:
		v = map[string]any{"recommended_methodology": "A quasi-experiment in two classes.", "methodology_type": "quantitative", "justification": "It measures the effect.",
			"required_skills": []string{"statistics"}, "timeline_fit": map[string]any{"verdict": "fits", "phases": []any{map[string]any{"name": "Set-up", "weeks": 6}, map[string]any{"name": "Study", "weeks": 16}}, "explanation": "22 of 26 weeks."},
			"alternative_methodologies": []any{map[string]any{"name": "Case study", "methodology_type": "qualitative", "pros": []string{"depth"}, "cons": []string{"no effect size"}, "why_not_chosen": "The question asks for an effect."}}}
	case schemaData:
		v = map[string]any{"collection_techniques": []string{"tests"}, "recommended_tools": []any{map[string]any{"name": "R", "purpose": "analysis", "access": "free"}},
			"data_sources": []string{"school records"}, "estimated_sample_size": "60 pupils", "sampling_strategy": "two intact classes",
			"timeline_breakdown":    []any{map[string]any{"phase": "Testing", "start_week": 6, "end_week": 22, "description": "Pre and post tests."}},
			"resource_requirements": []string{"school access"}, "ethical_considerations": []string{"parental consent"}}
	case schemaQC:
		v = map[string]any{"coherence_score": 0.86, "feasibility_score": 0.8, "issues_identified": []any{}, "recommendations": []string{}, "refinement_targets": []string{}, "summary": "Sound."}
	default:
		return openaitest.Reply{Content: "unexpected schema " + name}
	}
	b, _ := json.Marshal(v)
	return openaitest.Reply{Content: string(b), PromptTokens: 200, CompletionTokens: 80}
}

// wireProposal runs a proposal through the OpenAI provider against the wire
// fake, its replies changed by flaws, and returns the result, its error and
// the calls by schema name.
func wireProposal(t *testing.T, respond func(*openaitest.ChatRequest) openaitest.Reply, flaws map[string][]openaitest.Flaw, sources []search.Provider, p Params) (*Result, map[string]int, error) {
	t.Helper()
	srv := openaitest.NewServer(t, openaitest.Imperfect(respond, flaws))
	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test", HTTPClient: srv.Client()})
	res, err := proposalOver(t, client, sources, p)
	calls := map[string]int{}
	for _, req := range srv.Requests() {
		calls[req.ResponseFormat.JSONSchema.Name]++
	}
	return res, calls, err
}

// proposalOver runs a proposal over client.
func proposalOver(t *testing.T, client llm.Client, sources []search.Provider, p Params) (*Result, error) {
	t.Helper()
	pipe, err := New(sources, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: newDB(t), Client: client}
	r, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "proposal", Mode: "live", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pipe.Run(context.Background(), r, p)
}

// TestAgentsRepairImperfectReplies drives every agent of the proposal
// through the OpenAI wire with each kind of imperfect but usable reply it
// can get, and checks the repair recorded, the value kept and the calls
// made: a deterministic repair costs no second call, a problem only the
// model can fix costs one.
func TestAgentsRepairImperfectReplies(t *testing.T) {
	oneEach := map[string]int{schemaQueries: 1, schemaProblem: 1, schemaObjectives: 1, schemaMethodology: 1, schemaData: 1, schemaQC: 1}
	with := func(schema string, n int) map[string]int {
		m := map[string]int{}
		for k, v := range oneEach {
			m[k] = v
		}
		m[schema] = n
		return m
	}
	for _, tc := range []struct {
		name                string
		noSearch            bool
		flaws               map[string][]openaitest.Flaw
		agent, rule, action string
		calls               map[string]int
		check               func(t *testing.T, res *Result)
	}{{
		name:  "two queries of three asked: asked once, then kept",
		flaws: map[string][]openaitest.Flaw{schemaQueries: {openaitest.Keep("queries", 2), openaitest.Always}},
		agent: agentQueries, rule: "count", action: "kept as sent: queries has 2 items; at least 3",
		calls: with(schemaQueries, 2),
		check: func(t *testing.T, res *Result) {
			if len(res.LiteratureSearch.Queries) != 2 {
				t.Errorf("queries %v", res.LiteratureSearch.Queries)
			}
		},
	}, {
		name:  "a repeated query is dropped",
		flaws: map[string][]openaitest.Flaw{schemaQueries: {openaitest.Set("queries/2", "Peer  tutoring outcomes")}},
		agent: agentQueries, rule: "count", action: "1 repeated dropped",
		calls: oneEach,
	}, {
		name:     "a citation without search results is dropped",
		noSearch: true,
		flaws:    map[string][]openaitest.Flaw{schemaProblem: {openaitest.Set("preliminary_literature", []any{map[string]any{"id": 1, "relevance_note": "x"}})}},
		agent:    agentProblem, rule: "reference", action: "citations of ids that no search returned dropped: 1",
		calls: map[string]int{schemaProblem: 1, schemaObjectives: 1, schemaMethodology: 1, schemaData: 1, schemaQC: 1},
		check: func(t *testing.T, res *Result) {
			if len(res.ProblemDefinition.PreliminaryLiterature) != 0 {
				t.Errorf("literature %+v", res.ProblemDefinition.PreliminaryLiterature)
			}
		},
	}, {
		name: "a citation of an unknown result is dropped",
		flaws: map[string][]openaitest.Flaw{schemaProblem: {openaitest.Map("preliminary_literature", func(v any) any {
			return append(v.([]any), map[string]any{"id": 99, "relevance_note": "made up"}, map[string]any{"id": 2, "relevance_note": "again"})
		})}},
		agent: agentProblem, rule: "reference", action: "citations of ids that no search returned dropped: 99; repeated citations dropped: 2",
		calls: oneEach,
		check: func(t *testing.T, res *Result) {
			if n := len(res.ProblemDefinition.PreliminaryLiterature); n != 3 {
				t.Errorf("%d works cited", n)
			}
		},
	}, {
		name:  "too few citations: asked once, then kept",
		flaws: map[string][]openaitest.Flaw{schemaProblem: {openaitest.Keep("preliminary_literature", 1), openaitest.Always}},
		agent: agentProblem, rule: "count", action: "kept with 1 cited works of the 3 asked for",
		calls: with(schemaProblem, 2),
	}, {
		name:  "an empty secondary question is dropped",
		flaws: map[string][]openaitest.Flaw{schemaProblem: {openaitest.Set("secondary_questions", []string{"Who benefits most?", " "})}},
		agent: agentProblem, rule: "missing", action: "an empty item dropped",
		calls: oneEach,
	}, {
		name:  "objective ids renumbered by position",
		flaws: map[string][]openaitest.Flaw{schemaObjectives: {openaitest.Set("specific_objectives/*/id", "Objective A")}},
		agent: agentObjectives, rule: "id", action: `"Objective A" → SO2`,
		calls: oneEach,
		check: func(t *testing.T, res *Result) {
			for i, so := range res.ResearchObjectives.SpecificObjectives {
				if so.ID != fmt.Sprintf("SO%d", i+1) {
					t.Errorf("objective %d id %q", i, so.ID)
				}
			}
		},
	}, {
		name:  "two objectives of three asked: asked once, then kept",
		flaws: map[string][]openaitest.Flaw{schemaObjectives: {openaitest.Keep("specific_objectives", 2), openaitest.Always}},
		agent: agentObjectives, rule: "count", action: "kept as sent",
		calls: with(schemaObjectives, 2),
		check: func(t *testing.T, res *Result) {
			if n := len(res.ResearchObjectives.SpecificObjectives); n != 2 {
				t.Errorf("%d objectives", n)
			}
		},
	}, {
		name:  "an objective due after the project ends moves to its last week",
		flaws: map[string][]openaitest.Flaw{schemaObjectives: {openaitest.Set("specific_objectives/2/due_week", 40)}},
		agent: agentObjectives, rule: "budget", action: "objective 3 due week 40 → 26",
		calls: oneEach,
	}, {
		name:  "an objective mapped to no question: asked once, then RQ1",
		flaws: map[string][]openaitest.Flaw{schemaObjectives: {openaitest.Set("specific_objectives/1/research_question", "RQ5"), openaitest.Always}},
		agent: agentObjectives, rule: "reference", action: `research question "RQ5" → RQ1`,
		calls: with(schemaObjectives, 2),
	}, {
		name:  "phases longer than the project are scaled to it",
		flaws: map[string][]openaitest.Flaw{schemaMethodology: {openaitest.Set("timeline_fit/phases/1/weeks", 24)}},
		agent: agentMethodology, rule: "budget", action: "phases scaled from 30 weeks to 26",
		calls: oneEach,
		check: func(t *testing.T, res *Result) {
			ph := res.Methodology.TimelineFit.Phases
			if len(ph) != 2 || ph[0].Weeks+ph[1].Weeks != 26 || ph[0].Weeks != 5 {
				t.Errorf("phases %+v", ph)
			}
		},
	}, {
		name:  "one phase of two asked: asked once, then kept",
		flaws: map[string][]openaitest.Flaw{schemaMethodology: {openaitest.Keep("timeline_fit/phases", 1), openaitest.Always}},
		agent: agentMethodology, rule: "count", action: "kept as sent: timeline_fit/phases has 1 items",
		calls: with(schemaMethodology, 2),
	}, {
		name:  "a methodology type in other words",
		flaws: map[string][]openaitest.Flaw{schemaMethodology: {openaitest.Set("methodology_type", "Mixed Methods")}},
		agent: agentMethodology, rule: "enum", action: `"Mixed Methods" → "mixed"`,
		calls: oneEach,
	}, {
		name:  "an activity past the project's end is clamped",
		flaws: map[string][]openaitest.Flaw{schemaData: {openaitest.Set("timeline_breakdown/0/end_week", 30)}},
		agent: agentData, rule: "budget", action: "activity 1: weeks 6-30 → 6-26",
		calls: oneEach,
	}, {
		name:  "an activity's weeks the wrong way round are swapped",
		flaws: map[string][]openaitest.Flaw{schemaData: {openaitest.Set("timeline_breakdown/0/start_week", 22), openaitest.Set("timeline_breakdown/0/end_week", 6)}},
		agent: agentData, rule: "consistency", action: "weeks 22-6 swapped",
		calls: oneEach,
	}, {
		name: "a failing review without targets refines from problem formulation",
		flaws: map[string][]openaitest.Flaw{schemaQC: {openaitest.Set("coherence_score", 0.5), openaitest.Set("recommendations", []string{"Sharpen the question."}),
			openaitest.Set("refinement_targets", []string{}), openaitest.Always}},
		agent: agentQC, rule: "consistency", action: "refine from problem_formulation",
		calls: map[string]int{schemaQueries: 2, schemaProblem: 2, schemaObjectives: 2, schemaMethodology: 2, schemaData: 2, schemaQC: 2},
		check: func(t *testing.T, res *Result) {
			if res.Passed || res.Refinements != 1 || res.Rounds[0].QualityValidation.RefinementTargets[0] != StageProblem || res.Rounds[1].From != StageProblem {
				t.Errorf("passed %v, refinements %d, rounds %+v", res.Passed, res.Refinements, res.Rounds)
			}
		},
	}, {
		name: "a failing review without recommendations takes its issues",
		flaws: map[string][]openaitest.Flaw{schemaQC: {openaitest.Set("issues_identified", []any{map[string]any{"severity": "Blocker", "component": "methods",
			"description": "No control group.", "impact": "No effect size."}}), openaitest.Set("refinement_targets", []string{"methodology"})}},
		agent: agentQC, rule: "consistency", action: "1 taken from the issues",
		calls: map[string]int{schemaQueries: 1, schemaProblem: 1, schemaObjectives: 1, schemaMethodology: 2, schemaData: 2, schemaQC: 2},
		check: func(t *testing.T, res *Result) {
			qv := res.Rounds[0].QualityValidation
			if len(qv.Recommendations) != 1 || !strings.Contains(qv.Recommendations[0], "No control group.") || qv.IssuesIdentified[0].Severity != Critical || qv.IssuesIdentified[0].Component != StageMethodology {
				t.Errorf("review %+v", qv)
			}
		},
	}, {
		name:  "a score sent as text and out of range",
		flaws: map[string][]openaitest.Flaw{schemaQC: {openaitest.Set("coherence_score", "1.2")}},
		agent: agentQC, rule: "range", action: "1.2 → 1 (the maximum)",
		calls: oneEach,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := params(10, func(p *Params) { p.NoSearch, p.MaxRefinements = tc.noSearch, 1 })
			res, calls, err := wireProposal(t, wireProposalReply, tc.flaws, offline(), p)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(calls) != fmt.Sprint(tc.calls) {
				t.Errorf("calls %v, want %v", calls, tc.calls)
			}
			if !hasRepair(res.Repairs, tc.agent, tc.rule, tc.action) {
				t.Errorf("repairs %+v, want %s %s %q", res.Repairs, tc.agent, tc.rule, tc.action)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// TestFailedQualityControlKeepsTheStages: a review with nothing usable in
// it fails the run at that step, and the result keeps every stage before
// it, saying which step failed; the run resumes from there.
func TestFailedQualityControlKeepsTheStages(t *testing.T) {
	flaws := map[string][]openaitest.Flaw{schemaQC: {openaitest.Prose("I think it is a fine proposal overall."), openaitest.Always}}
	res, calls, err := wireProposal(t, wireProposalReply, flaws, offline(), params(10, nil))
	var se *StepError
	if !errors.As(err, &se) || se.Step != "r0/quality_control" || !strings.Contains(err.Error(), "proposal.qc") {
		t.Fatalf("err %v", err)
	}
	if calls[schemaQC] != 2 || calls[schemaData] != 1 {
		t.Errorf("calls %v", calls)
	}
	if res == nil || res.FailedStep != "r0/quality_control" || res.Title != "Peer tutoring study" || len(res.ResearchObjectives.SpecificObjectives) != 3 ||
		res.DataCollectionPlan.EstimatedSampleSize != "60 pupils" || res.Passed || res.Transitions[len(res.Transitions)-1].To != Failed {
		t.Fatalf("partial result %+v", res)
	}
	if n := res.Notice(Meta{}); !strings.Contains(n, "INCOMPLETE: the step r0/quality_control failed") {
		t.Errorf("notice %q", n)
	}
	if _, err := res.Render(Meta{}, nil); err != nil {
		t.Errorf("the partial proposal does not render: %v", err)
	}
}

// TestMockRunHasNoRepairs: the mock provider's replies are well formed, so
// a mock run, through a refinement, repairs nothing.
func TestMockRunHasNoRepairs(t *testing.T) {
	r := runProposal(t, mock.New(MockResponders()), offline(), params(4, nil))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.Refinements != 1 || r.res.Repairs == nil || len(r.res.Repairs) != 0 {
		t.Errorf("repairs %#v", r.res.Repairs)
	}
}
