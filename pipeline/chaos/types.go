package chaos

import (
	"fmt"
	"strings"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// AcceptedIdea is an idea the judge kept, in the seed's schema.
type AcceptedIdea struct {
	IdeaName           string   `json:"idea_name" jsonschema:"minLength=1"`
	QualityScore       float64  `json:"quality_score" jsonschema:"minimum=0,maximum=10"`
	FeasibilityScore   float64  `json:"feasibility_score" jsonschema:"minimum=0,maximum=10"`
	ImpactScore        float64  `json:"impact_score" jsonschema:"minimum=0,maximum=10"`
	OriginalityScore   float64  `json:"originality_score" jsonschema:"minimum=0,maximum=10"`
	KeyPoints          []string `json:"key_points,omitempty"`
	ImplementationPath string   `json:"implementation_path,omitempty"`
	RequiredResources  []string `json:"required_resources,omitempty"`
	SuccessMetrics     []string `json:"success_metrics,omitempty"`
	NextSteps          []string `json:"next_steps,omitempty"`
}

// RejectedIdea is an idea the judge turned down, in the seed's schema.
type RejectedIdea struct {
	IdeaName        string  `json:"idea_name" jsonschema:"minLength=1"`
	RejectionReason string  `json:"rejection_reason" jsonschema:"minLength=1"`
	QualityScore    float64 `json:"quality_score" jsonschema:"minimum=0,maximum=10"`
	FatalFlaw       string  `json:"fatal_flaw,omitempty"`
}

// Judgement is the judge's verdict, exactly the seed's JSON schema.
type Judgement struct {
	AcceptedIdeas       []AcceptedIdea `json:"accepted_ideas"`
	RejectedIdeas       []RejectedIdea `json:"rejected_ideas"`
	Synthesis           string         `json:"synthesis"`
	TopRecommendations  []string       `json:"top_recommendations,omitempty"`
	StrategicInsights   []string       `json:"strategic_insights,omitempty"`
	UnresolvedQuestions []string       `json:"unresolved_questions,omitempty"`
}

// rules are what a judgement must satisfy beyond its schema, all soft: a
// usable judgement is repaired, never refused.
//
//   - count: at least one idea is judged. A judgement of none is sent
//     back once, then kept (the iteration accepts nothing).
//   - id: each idea has one verdict. A second verdict on the same name
//     (case and spacing aside) is dropped; the first is kept.
//   - consistency: an accepted idea scores at least threshold. One below
//     it is moved to the rejected ideas, its rejection reason saying so.
func (j *Judgement) rules(threshold float64, p *structured.Problems) {
	if len(j.AcceptedIdeas)+len(j.RejectedIdeas) == 0 {
		p.Ask("count", "no idea was judged: every idea must be accepted or rejected", func() string {
			return "a judgement of no idea kept: nothing accepted"
		})
		return
	}
	seen := map[string]bool{}
	first := func(name string) bool {
		k := strings.ToLower(strings.Join(strings.Fields(name), " "))
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	var accepted []AcceptedIdea
	var rejected []RejectedIdea
	var twice []string
	for _, a := range j.AcceptedIdeas {
		if first(a.IdeaName) {
			accepted = append(accepted, a)
		} else {
			twice = append(twice, a.IdeaName)
		}
	}
	for _, r := range j.RejectedIdeas {
		if first(r.IdeaName) {
			rejected = append(rejected, r)
		} else {
			twice = append(twice, r.IdeaName)
		}
	}
	for _, name := range twice {
		p.Fix("id", fmt.Sprintf("idea %q is judged twice", name), func() string {
			return fmt.Sprintf("second verdict on %q dropped, the first kept", name)
		})
	}
	kept := accepted[:0:0]
	for _, a := range accepted {
		if a.QualityScore >= threshold {
			kept = append(kept, a)
			continue
		}
		reason := fmt.Sprintf("quality_score %g is below the acceptance threshold %g", a.QualityScore, threshold)
		rejected = append(rejected, RejectedIdea{IdeaName: a.IdeaName, RejectionReason: reason, QualityScore: a.QualityScore})
		p.Fix("consistency", fmt.Sprintf("accepted idea %q has quality_score %g, below the acceptance threshold %g", a.IdeaName, a.QualityScore, threshold), func() string {
			return fmt.Sprintf("accepted idea %q (quality %g) moved to rejected: below the threshold %g", a.IdeaName, a.QualityScore, threshold)
		})
	}
	if kept == nil {
		kept = []AcceptedIdea{}
	}
	if rejected == nil {
		rejected = []RejectedIdea{}
	}
	j.AcceptedIdeas, j.RejectedIdeas = kept, rejected
}

// comparison is the tournament judge's verdict on one pair.
type comparison struct {
	Pair   int    `json:"pair" jsonschema:"minimum=0"`
	Winner string `json:"winner" jsonschema:"enum=a,enum=b"`
	Reason string `json:"reason,omitempty"`
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
	// FailedStep names the step that failed after the iterations were
	// done ("evolve" or "tournament"), in the partial result kept when it did: the
	// run failed and resumes from that step.
	FailedStep string `json:"failed_step,omitempty"`
	// Repairs are the changes made to usable replies that broke a soft
	// rule; empty, never null, when none.
	Repairs []llm.Repair `json:"repairs"`
}
