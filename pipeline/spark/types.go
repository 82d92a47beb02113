package spark

import (
	"fmt"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// Agent names, as they appear in requests, logs and usage records.
const (
	agentGenerate = "spark.generate"
	agentEvaluate = "spark.evaluate"
	agentMultiDim = "spark.multidim"
	agentAdvocate = "spark.advocate"
	agentSkeptic  = "spark.skeptic"
	agentInfer    = "spark.infer"
	agentImprove  = "spark.improve"
	// agentRank names the pipeline's own ranking of the scored ideas in
	// the repairs it records.
	agentRank = "spark.rank"
)

// Idea is one generated idea.
type Idea struct {
	Title       string `json:"title" jsonschema:"minLength=1"`
	Description string `json:"description" jsonschema:"minLength=1"`
}

// String renders the idea as "Title: description".
func (i Idea) String() string {
	if i.Title == "" {
		return i.Description
	}
	return i.Title + ": " + i.Description
}

// ideaList is the IdeaGenerator's reply.
type ideaList struct {
	Ideas []Idea `json:"ideas" jsonschema:"minItems=1"`
}

// Evaluation is the Critic's verdict on one idea (the seed's schema, plus a
// one-paragraph critique).
type Evaluation struct {
	Index       int      `json:"index"`
	Score       float64  `json:"score" jsonschema:"minimum=0,maximum=10"`
	Critique    string   `json:"critique" jsonschema:"minLength=1"`
	Strengths   []string `json:"strengths,omitempty"`
	Weaknesses  []string `json:"weaknesses,omitempty"`
	Suggestions []string `json:"suggestions,omitempty"`
}

type evaluations struct {
	Evaluations []Evaluation `json:"evaluations" jsonschema:"minItems=1"`
}

// Advocacy is the Advocate's case for one idea.
type Advocacy struct {
	Index              int      `json:"index"`
	Strengths          []string `json:"strengths" jsonschema:"minItems=1"`
	Opportunities      []string `json:"opportunities,omitempty"`
	AddressingConcerns []string `json:"addressing_concerns,omitempty"`
}

type advocacies struct {
	Advocacies []Advocacy `json:"advocacies" jsonschema:"minItems=1"`
}

// Skepticism is the Skeptic's challenge to one idea.
type Skepticism struct {
	Index                   int      `json:"index"`
	CriticalFlaws           []string `json:"critical_flaws,omitempty"`
	RisksAndChallenges      []string `json:"risks_and_challenges" jsonschema:"minItems=1"`
	QuestionableAssumptions []string `json:"questionable_assumptions,omitempty"`
	MissingConsiderations   []string `json:"missing_considerations,omitempty"`
}

type skepticisms struct {
	Skepticisms []Skepticism `json:"skepticisms" jsonschema:"minItems=1"`
}

// Improvement is the IdeaGenerator's improved version of one idea.
type Improvement struct {
	Index           int      `json:"index"`
	Title           string   `json:"title" jsonschema:"minLength=1"`
	Description     string   `json:"description" jsonschema:"minLength=1"`
	KeyImprovements []string `json:"key_improvements,omitempty"`
}

type improvements struct {
	Improvements []Improvement `json:"improvements" jsonschema:"minItems=1"`
}

// Dimensions are the seven scores of the multi-dimensional evaluation, 0-10
// each; for risk_assessment 10 means the lowest risk.
type Dimensions struct {
	Innovation        float64 `json:"innovation" jsonschema:"minimum=0,maximum=10"`
	Feasibility       float64 `json:"feasibility" jsonschema:"minimum=0,maximum=10"`
	Impact            float64 `json:"impact" jsonschema:"minimum=0,maximum=10"`
	Scalability       float64 `json:"scalability" jsonschema:"minimum=0,maximum=10"`
	Sustainability    float64 `json:"sustainability" jsonschema:"minimum=0,maximum=10"`
	CostEffectiveness float64 `json:"cost_effectiveness" jsonschema:"minimum=0,maximum=10"`
	RiskAssessment    float64 `json:"risk_assessment" jsonschema:"minimum=0,maximum=10"`
}

// dimensionWeights are the weights of the weighted score; they sum to 1.
var dimensionWeights = Dimensions{
	Innovation: 0.15, Feasibility: 0.20, Impact: 0.20, Scalability: 0.10,
	Sustainability: 0.10, CostEffectiveness: 0.15, RiskAssessment: 0.10,
}

func (d Dimensions) values() []float64 {
	return []float64{d.Innovation, d.Feasibility, d.Impact, d.Scalability, d.Sustainability, d.CostEffectiveness, d.RiskAssessment}
}

// multiDimItem is the evaluator's reply for one idea.
type multiDimItem struct {
	Index     int        `json:"index"`
	Scores    Dimensions `json:"scores"`
	Rationale string     `json:"rationale,omitempty"`
}

type multiDims struct {
	Evaluations []multiDimItem `json:"evaluations" jsonschema:"minItems=1"`
}

// MultiDimensional is the multi-dimensional evaluation of one idea. The mean
// and weighted score are computed from the dimensions, not asked of the model.
type MultiDimensional struct {
	Dimensions    Dimensions `json:"dimensions"`
	Mean          float64    `json:"mean"`
	WeightedScore float64    `json:"weighted_score"`
	Rationale     string     `json:"rationale,omitempty"`
}

func newMultiDimensional(it multiDimItem) *MultiDimensional {
	vals, ws := it.Scores.values(), dimensionWeights.values()
	var sum, weighted float64
	for i, v := range vals {
		sum += v
		weighted += v * ws[i]
	}
	return &MultiDimensional{Dimensions: it.Scores, Mean: round2(sum / float64(len(vals))), WeightedScore: round2(weighted), Rationale: it.Rationale}
}

// Inference is the logical analysis of one idea.
type Inference struct {
	// Type is the kind of analysis (see InferenceTypes), set by the
	// pipeline, not asked of the model.
	Type           string   `json:"type,omitempty" jsonschema:"-"`
	Index          int      `json:"index"`
	InferenceChain []string `json:"inference_chain" jsonschema:"minItems=1"`
	Conclusion     string   `json:"conclusion" jsonschema:"minLength=1"`
	Confidence     float64  `json:"confidence" jsonschema:"minimum=0,maximum=1"`
	Contradictions []string `json:"contradictions,omitempty"`
	Improvements   []string `json:"improvements,omitempty"`
	// CausalLinks are the cause → effect links of a causal_chain analysis.
	CausalLinks []CausalLink `json:"causal_links,omitempty"`
	// Constraints are the constraints checked by a constraint_satisfaction
	// analysis.
	Constraints []ConstraintCheck `json:"constraints,omitempty"`
	// Implications are the downstream effects found by an
	// implication_analysis.
	Implications []string `json:"implications,omitempty"`
}

// CausalLink is one cause → effect step of a causal chain.
type CausalLink struct {
	Cause  string `json:"cause"`
	Effect string `json:"effect"`
}

// ConstraintCheck is one constraint and whether the idea meets it.
type ConstraintCheck struct {
	Constraint  string `json:"constraint"`
	Met         bool   `json:"met"`
	Explanation string `json:"explanation"`
}

type inferences struct {
	Inferences []Inference `json:"inferences" jsonschema:"minItems=1"`
}

// indexed is an item of a batched reply that names the input it answers;
// its pointer type can renumber it.
type indexed interface{ index() int }

type reindexable[T any] interface {
	*T
	indexed
	setIndex(i int)
}

func (e Evaluation) index() int   { return e.Index }
func (a Advocacy) index() int     { return a.Index }
func (s Skepticism) index() int   { return s.Index }
func (i Improvement) index() int  { return i.Index }
func (m multiDimItem) index() int { return m.Index }
func (i Inference) index() int    { return i.Index }

func (e *Evaluation) setIndex(n int)   { e.Index = n }
func (a *Advocacy) setIndex(n int)     { a.Index = n }
func (s *Skepticism) setIndex(n int)   { s.Index = n }
func (i *Improvement) setIndex(n int)  { i.Index = n }
func (m *multiDimItem) setIndex(n int) { m.Index = n }
func (i *Inference) setIndex(n int)    { i.Index = n }

// byIndex is the rule of a batched reply: its items answer each of the n
// inputs once, by index 0..n-1. It reports to p, in this order:
//
//   - indices counted from 1 (every index in 1..n and n among them, so the
//     reply cannot be counting from 0): renumbered, without a re-ask;
//   - an index out of range, or one answered twice: the item (the second
//     one) dropped, without a re-ask;
//   - an index with no item: asked once, then missing(i) says what the
//     pipeline does without it (left out of the ranking, the original idea
//     kept) and the item stays missing;
//   - no item left at all: hard.
//
// After the repairs, the items have distinct indices in 0..n-1; place puts
// them in input order.
func byIndex[T any, PT reindexable[T]](items *[]T, n int, missing func(i int) string, p *structured.Problems) {
	list := *items
	idx := make([]int, len(list))
	oneBased := len(list) > 0
	top := false
	for k := range list {
		idx[k] = PT(&list[k]).index()
		oneBased = oneBased && idx[k] >= 1 && idx[k] <= n
		top = top || idx[k] == n
	}
	if oneBased && top {
		p.Fix("index", fmt.Sprintf("indices run 1..%d; want 0..%d", n, n-1), func() string {
			for k := range *items {
				it := PT(&(*items)[k])
				it.setIndex(it.index() - 1)
			}
			return fmt.Sprintf("indices counted from 1 renumbered: 1..%d → 0..%d", n, n-1)
		})
		for k := range idx {
			idx[k]--
		}
	}
	seen := make([]bool, n)
	drop := make([]bool, len(list))
	dropped := 0
	for k, i := range idx {
		switch {
		case i < 0 || i >= n:
			drop[k] = true
			p.Fix("index", fmt.Sprintf("index %d is out of range 0..%d", i, n-1), func() string {
				return fmt.Sprintf("item with index %d dropped (out of range 0..%d)", i, n-1)
			})
		case seen[i]:
			drop[k] = true
			p.Fix("index", fmt.Sprintf("index %d appears twice", i), func() string {
				return fmt.Sprintf("second item for index %d dropped", i)
			})
		default:
			seen[i] = true
			continue
		}
		dropped++
	}
	if dropped > 0 {
		// The drops themselves, once, after the renumbering; the action
		// is empty, so nothing more is recorded.
		p.Fix("index", "", func() string {
			kept := (*items)[:0]
			for k, it := range *items {
				if !drop[k] {
					kept = append(kept, it)
				}
			}
			*items = kept
			return ""
		})
	}
	if dropped == len(list) {
		p.Hardf("index", "no item has an index in 0..%d; want exactly one item for each index", n-1)
		return
	}
	for i, ok := range seen {
		if !ok {
			p.Ask("index", fmt.Sprintf("want exactly one item for each index 0..%d: index %d is missing", n-1, i), func() string {
				return fmt.Sprintf("no item for index %d: %s", i, missing(i))
			})
		}
	}
}

// place returns items, whose indices are distinct and in 0..n-1, in input
// order: nil where an index has no item.
func place[T any, PT reindexable[T]](items []T, n int) []*T {
	out := make([]*T, n)
	for k := range items {
		if i := PT(&items[k]).index(); i >= 0 && i < n && out[i] == nil {
			out[i] = &items[k]
		}
	}
	return out
}

// Fallback marks a value that is not a model's answer but the seed's
// fallback, used because a stage failed and fallbacks were allowed.
type Fallback struct {
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
}

// Candidate is one top idea carried through the whole workflow.
type Candidate struct {
	Idea                               string            `json:"idea"`
	InitialScore                       float64           `json:"initial_score"`
	InitialCritique                    string            `json:"initial_critique"`
	Advocacy                           string            `json:"advocacy"`
	Skepticism                         string            `json:"skepticism"`
	ImprovedIdea                       string            `json:"improved_idea"`
	ImprovedScore                      float64           `json:"improved_score"`
	ImprovedCritique                   string            `json:"improved_critique"`
	ScoreDelta                         float64           `json:"score_delta"`
	MultiDimensionalEvaluation         *MultiDimensional `json:"multi_dimensional_evaluation,omitempty"`
	ImprovedMultiDimensionalEvaluation *MultiDimensional `json:"improved_multi_dimensional_evaluation,omitempty"`
	LogicalInference                   *Inference        `json:"logical_inference,omitempty"`
	// Details keep the structured answers the text fields summarise.
	Details   CandidateDetails `json:"details"`
	Fallback  bool             `json:"fallback,omitempty"`
	Fallbacks []Fallback       `json:"fallbacks,omitempty"`
}

// CandidateDetails are the agents' structured answers for one candidate.
type CandidateDetails struct {
	Initial     Evaluation   `json:"initial_evaluation"`
	Advocacy    *Advocacy    `json:"advocacy,omitempty"`
	Skepticism  *Skepticism  `json:"skepticism,omitempty"`
	Improvement *Improvement `json:"improvement,omitempty"`
	Improved    Evaluation   `json:"improved_evaluation"`
}

// Result is what a spark run produces.
type Result struct {
	Topic   string `json:"topic"`
	Context string `json:"context"`
	// Generated counts the ideas generated; Filtered, those the novelty
	// filter dropped as near-duplicates.
	Generated  int         `json:"generated"`
	Filtered   int         `json:"filtered"`
	Candidates []Candidate `json:"candidates"`
	// Ideas are all the ideas generated, in the order generated, the
	// candidates' originals among them.
	Ideas []GeneratedIdea `json:"ideas"`
	// Repairs are the repairs made to the models' replies and the ranking,
	// in the order they were made; empty, not nil, when there were none.
	Repairs []llm.Repair `json:"repairs"`
}

// GeneratedIdea is one idea as the IdeaGenerator produced it, with the
// Critic's verdict when it was scored.
type GeneratedIdea struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	// Score and Critique are the Critic's; absent for an idea the novelty
	// filter dropped or the Critic left unscored.
	Score    *float64 `json:"score,omitempty"`
	Critique string   `json:"critique,omitempty"`
	// Candidate is the idea's 1-based rank among the candidates; 0 when it
	// is not one of them.
	Candidate int `json:"candidate,omitempty"`
	// DuplicateOf is the title of the kept idea the novelty filter found
	// this one a near-duplicate of.
	DuplicateOf string `json:"duplicate_of,omitempty"`
}

// String renders the idea as "Title: description".
func (g GeneratedIdea) String() string {
	return Idea{Title: g.Title, Description: g.Description}.String()
}

func round2(x float64) float64 {
	if x < 0 {
		return -round2(-x)
	}
	return float64(int64(x*100+0.5)) / 100
}
