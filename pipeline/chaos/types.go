package chaos

import (
	"errors"
	"fmt"
	"strings"
)

// AcceptedIdea is an idea the judge kept, in the seed's schema.
type AcceptedIdea struct {
	IdeaName           string   `json:"idea_name" jsonschema:"minLength=1"`
	QualityScore       float64  `json:"quality_score" jsonschema:"minimum=0,maximum=10"`
	FeasibilityScore   float64  `json:"feasibility_score" jsonschema:"minimum=0,maximum=10"`
	ImpactScore        float64  `json:"impact_score" jsonschema:"minimum=0,maximum=10"`
	OriginalityScore   float64  `json:"originality_score" jsonschema:"minimum=0,maximum=10"`
	KeyPoints          []string `json:"key_points"`
	ImplementationPath string   `json:"implementation_path"`
	RequiredResources  []string `json:"required_resources"`
	SuccessMetrics     []string `json:"success_metrics"`
	NextSteps          []string `json:"next_steps"`
}

// RejectedIdea is an idea the judge turned down, in the seed's schema.
type RejectedIdea struct {
	IdeaName        string  `json:"idea_name" jsonschema:"minLength=1"`
	RejectionReason string  `json:"rejection_reason" jsonschema:"minLength=1"`
	QualityScore    float64 `json:"quality_score" jsonschema:"minimum=0,maximum=10"`
	FatalFlaw       string  `json:"fatal_flaw"`
}

// Judgement is the judge's verdict, exactly the seed's JSON schema.
type Judgement struct {
	AcceptedIdeas       []AcceptedIdea `json:"accepted_ideas"`
	RejectedIdeas       []RejectedIdea `json:"rejected_ideas"`
	Synthesis           string         `json:"synthesis"`
	TopRecommendations  []string       `json:"top_recommendations"`
	StrategicInsights   []string       `json:"strategic_insights"`
	UnresolvedQuestions []string       `json:"unresolved_questions"`
}

// check enforces what the schema cannot: the acceptance threshold, and one
// verdict per idea name.
func (j *Judgement) check(threshold float64) error {
	if len(j.AcceptedIdeas)+len(j.RejectedIdeas) == 0 {
		return errors.New("no idea was judged: every idea must be accepted or rejected")
	}
	var problems []string
	seen := map[string]bool{}
	note := func(name string) {
		k := strings.ToLower(strings.TrimSpace(name))
		if seen[k] {
			problems = append(problems, fmt.Sprintf("idea %q is judged twice", name))
		}
		seen[k] = true
	}
	for _, a := range j.AcceptedIdeas {
		note(a.IdeaName)
		if a.QualityScore < threshold {
			problems = append(problems, fmt.Sprintf("accepted idea %q has quality_score %g, below the acceptance threshold %g: reject it or correct the score", a.IdeaName, a.QualityScore, threshold))
		}
	}
	for _, r := range j.RejectedIdeas {
		note(r.IdeaName)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// comparison is the tournament judge's verdict on one pair.
type comparison struct {
	Pair   int    `json:"pair" jsonschema:"minimum=0"`
	Winner string `json:"winner" jsonschema:"enum=a,enum=b"`
	Reason string `json:"reason"`
}

type comparisons struct {
	Results []comparison `json:"results" jsonschema:"minItems=1"`
}

// Iteration is one pass of the workflow.
type Iteration struct {
	Number int `json:"iteration"`
	// Evolved marks the pass that refined and judged recombined ideas.
	Evolved     bool      `json:"evolved,omitempty"`
	Seeds       []string  `json:"chaos_seeds,omitempty"`
	Chaos       string    `json:"chaos,omitempty"`
	CreativeA   string    `json:"creative_a"`
	CreativeB   string    `json:"creative_b,omitempty"`
	RefinementA string    `json:"refinement_a"`
	RefinementB string    `json:"refinement_b,omitempty"`
	Judgement   Judgement `json:"judgement"`
	// Duplicates counts accepted ideas moved to rejected as near-duplicates
	// of remembered ones.
	Duplicates int `json:"duplicates"`
}

// Rating is an idea's place in the tournament.
type Rating struct {
	IdeaName string  `json:"idea_name"`
	Elo      float64 `json:"elo"`
	Wins     int     `json:"wins"`
	Losses   int     `json:"losses"`
}

// Tournament is the outcome of --tournament.
type Tournament struct {
	Ratings     []Rating `json:"ratings"`
	Rounds      int      `json:"rounds"`
	Comparisons int      `json:"comparisons"`
}

// Result is what a chaos run produces.
type Result struct {
	Prompt     string      `json:"prompt"`
	Memory     string      `json:"memory"`
	Threshold  float64     `json:"accept_threshold"`
	Iterations []Iteration `json:"iterations"`
	// SharedState is the state every stage could read, as the seed keeps
	// it: judge_results_iteration_N, total_accepted_ideas,
	// ideas_memory_file.
	SharedState map[string]any `json:"shared_state"`
	// Accepted are the ideas this run added to the memory.
	Accepted   []AcceptedIdea `json:"accepted"`
	Tournament *Tournament    `json:"tournament,omitempty"`
}
