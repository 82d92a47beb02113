package spark

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/input"
)

// Limits on the pipeline's inputs.
const (
	MaxTopicLen   = 2000
	MaxContextLen = 5000
	MaxCandidates = 20
	MaxTop        = 5
	MaxSeedIdeas  = 10
	MaxSeedLen    = 2000
)

// Params are the inputs of a spark run, named as in the seed's canon.
type Params struct {
	Topic   string `json:"topic" jsonschema:"required,title=Topic,description=The main subject or theme of the ideas"`
	Context string `json:"context" jsonschema:"title=Context,description=Additional criteria or constraints the ideas must meet"`
	// NumCandidates is how many ideas are generated.
	NumCandidates int `json:"num_candidates" jsonschema:"minimum=1,maximum=20,title=Ideas to generate,description=How many ideas are generated and scored"`
	// NumTopCandidates is how many of the best are argued over and improved.
	NumTopCandidates int          `json:"num_top_candidates" jsonschema:"minimum=1,maximum=5,title=Ideas to improve,description=How many of the best ideas are argued over and improved (at most the ideas generated)"`
	Temperatures     Temperatures `json:"temperatures" jsonschema:"title=Temperatures,description=Sampling temperature of each role: higher is more varied\\, lower more focused"`
	// EnhancedReasoning adds the multi-dimensional evaluation.
	EnhancedReasoning bool `json:"enhanced_reasoning" jsonschema:"title=Enhanced reasoning,description=Multi-dimensional evaluation of the ideas (+2 calls)"`
	// LogicalInference adds a logical analysis of each top candidate.
	LogicalInference bool `json:"logical_inference" jsonschema:"title=Logical inference,description=Logical analysis of each top idea (+1 call)"`
	// InferenceType is the kind of logical analysis made with
	// LogicalInference: one of InferenceTypes; empty means full_reasoning.
	InferenceType string `json:"inference_type,omitempty" jsonschema:"enum=full_reasoning,enum=causal_chain,enum=constraint_satisfaction,enum=contradiction_detection,enum=implication_analysis,title=Inference type,description=Kind of logical analysis (with logical inference on)"`
	// NoveltyFilter drops near-duplicate ideas before evaluation.
	NoveltyFilter    bool    `json:"novelty_filter" jsonschema:"title=Novelty filter,description=Drop near-duplicate ideas before they are evaluated"`
	NoveltyThreshold float64 `json:"novelty_threshold" jsonschema:"exclusiveMinimum=0,maximum=1,title=Novelty threshold,description=Similarity above which an idea counts as a duplicate (with the novelty filter on)"`
	// AllowFallbacks lets a failed stage be replaced by the seed's fallback
	// values, each marked in the result.
	AllowFallbacks bool `json:"allow_fallbacks" jsonschema:"title=Allow fallbacks,description=Replace a failed stage with fallback values\\, marked in the result\\, instead of failing the run"`
	// SeedIdeas are ideas the generation builds on, such as bookmarked
	// ones in a remix.
	SeedIdeas []string `json:"seed_ideas,omitempty" jsonschema:"maxItems=10,title=Seed ideas,description=Ideas to build on\\, such as a remix of bookmarks"`
	// StageTimeout scales the per-stage timeouts; 0 means 1.
	StageTimeout float64 `json:"-"`
}

// DefaultParams returns the seed's defaults.
func DefaultParams() Params {
	return Params{
		NumCandidates:    5,
		NumTopCandidates: 3,
		Temperatures:     DefaultTemperatures(),
		NoveltyFilter:    true,
		NoveltyThreshold: 0.8,
		InferenceType:    FullReasoning,
	}
}

// The kinds of logical analysis, the values of Params.InferenceType.
const (
	FullReasoning          = "full_reasoning"
	CausalChain            = "causal_chain"
	ConstraintSatisfaction = "constraint_satisfaction"
	ContradictionDetection = "contradiction_detection"
	ImplicationAnalysis    = "implication_analysis"
)

// InferenceTypes lists the kinds of logical analysis, the default first.
var InferenceTypes = []string{FullReasoning, CausalChain, ConstraintSatisfaction, ContradictionDetection, ImplicationAnalysis}

// inferenceType is p's kind of logical analysis, the default when unset.
func (p *Params) inferenceType() string {
	if p.InferenceType == "" {
		return FullReasoning
	}
	return p.InferenceType
}

// Validate reports the first problem with p, as one line naming the
// parameter.
func (p *Params) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(p.Topic) == "":
		return errors.New("topic must not be empty")
	case !utf8.ValidString(p.Topic):
		return errors.New("topic is not valid UTF-8")
	case utf8.RuneCountInString(p.Topic) > MaxTopicLen:
		return fmt.Errorf("topic is %d characters; the limit is %d", utf8.RuneCountInString(p.Topic), MaxTopicLen)
	}
	return p.ValidateSettings()
}

// ValidateSettings checks every parameter but the topic, as Validate does:
// what a command can check from its flags before it knows the topic (a
// remix takes it from a bookmark).
func (p *Params) ValidateSettings() error {
	switch {
	case !utf8.ValidString(p.Context):
		return errors.New("context is not valid UTF-8")
	case utf8.RuneCountInString(p.Context) > MaxContextLen:
		return fmt.Errorf("context is %d characters; the limit is %d", utf8.RuneCountInString(p.Context), MaxContextLen)
	case p.NumCandidates < 1 || p.NumCandidates > MaxCandidates:
		return fmt.Errorf("num_candidates must be 1..%d, got %d", MaxCandidates, p.NumCandidates)
	case p.NumTopCandidates < 1 || p.NumTopCandidates > MaxTop:
		return fmt.Errorf("num_top_candidates must be 1..%d, got %d", MaxTop, p.NumTopCandidates)
	case p.NumTopCandidates > p.NumCandidates:
		return fmt.Errorf("num_top_candidates (%d) must not exceed num_candidates (%d)", p.NumTopCandidates, p.NumCandidates)
	case p.NoveltyThreshold <= 0 || p.NoveltyThreshold > 1:
		return fmt.Errorf("novelty_threshold must be in (0, 1], got %g", p.NoveltyThreshold)
	case p.InferenceType != "" && !slices.Contains(InferenceTypes, p.InferenceType):
		return fmt.Errorf("inference_type must be one of %s, got %q", strings.Join(InferenceTypes, ", "), p.InferenceType)
	case p.StageTimeout < 0:
		return fmt.Errorf("stage timeout scale must not be negative")
	case len(p.SeedIdeas) > MaxSeedIdeas:
		return fmt.Errorf("seed_ideas holds at most %d ideas, got %d", MaxSeedIdeas, len(p.SeedIdeas))
	}
	for i, s := range p.SeedIdeas {
		switch {
		case strings.TrimSpace(s) == "":
			return fmt.Errorf("seed_ideas[%d] must not be empty", i)
		case !utf8.ValidString(s):
			return fmt.Errorf("seed_ideas[%d] is not valid UTF-8", i)
		case utf8.RuneCountInString(s) > MaxSeedLen:
			return fmt.Errorf("seed_ideas[%d] is %d characters; the limit is %d", i, utf8.RuneCountInString(s), MaxSeedLen)
		}
	}
	return p.Temperatures.Validate()
}

// Temperatures are the sampling temperatures of each role.
type Temperatures struct {
	Generate float64 `json:"generate" jsonschema:"minimum=0,maximum=2,title=Generation,description=Temperature of the idea generator"`
	Evaluate float64 `json:"evaluate" jsonschema:"minimum=0,maximum=2,title=Evaluation,description=Temperature of the critic that scores ideas"`
	Advocate float64 `json:"advocate" jsonschema:"minimum=0,maximum=2,title=Advocacy,description=Temperature of the advocate who argues for an idea"`
	Skeptic  float64 `json:"skeptic" jsonschema:"minimum=0,maximum=2,title=Skepticism,description=Temperature of the skeptic who argues against an idea"`
	Improve  float64 `json:"improve" jsonschema:"minimum=0,maximum=2,title=Improvement,description=Temperature of the improver who rewrites the top ideas"`
}

// DefaultTemperatures are the seed's: generate and improve 0.9, evaluate 0.3,
// advocate and skeptic 0.5.
func DefaultTemperatures() Temperatures {
	return Temperatures{Generate: 0.9, Evaluate: 0.3, Advocate: 0.5, Skeptic: 0.5, Improve: 0.9}
}

var presets = map[string]Temperatures{
	"conservative": {Generate: 0.5, Evaluate: 0.2, Advocate: 0.3, Skeptic: 0.3, Improve: 0.5},
	"balanced":     {Generate: 0.7, Evaluate: 0.3, Advocate: 0.5, Skeptic: 0.5, Improve: 0.7},
	"creative":     {Generate: 0.9, Evaluate: 0.3, Advocate: 0.5, Skeptic: 0.5, Improve: 0.9},
	"wild":         {Generate: 1.2, Evaluate: 0.4, Advocate: 0.7, Skeptic: 0.7, Improve: 1.1},
}

// PresetNames lists the temperature presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the named temperature preset.
func Preset(name string) (Temperatures, error) {
	t, ok := presets[name]
	if !ok {
		return Temperatures{}, fmt.Errorf("unknown temperature preset %q (want %s)", name, strings.Join(PresetNames(), ", "))
	}
	return t, nil
}

// FromBase scales the seed's role temperatures so that generation runs at
// base: a base of 0.9 gives the defaults, and every role keeps its ratio to
// generation (evaluation stays the coolest).
func FromBase(base float64) Temperatures {
	d := DefaultTemperatures()
	k := base / d.Generate
	clamp := func(t float64) float64 { return min(t*k, 2) }
	return Temperatures{Generate: clamp(d.Generate), Evaluate: clamp(d.Evaluate), Advocate: clamp(d.Advocate), Skeptic: clamp(d.Skeptic), Improve: clamp(d.Improve)}
}

// Validate checks every temperature is within 0..2.
func (t Temperatures) Validate() error {
	for _, v := range []float64{t.Generate, t.Evaluate, t.Advocate, t.Skeptic, t.Improve} {
		if v < 0 || v > 2 {
			return fmt.Errorf("temperature must be within 0..2, got %g", v)
		}
	}
	return nil
}

// stage timeouts: the seed's table (30 s each, 45 s for improvement), doubled
// because one batched call does the work of every candidate at once.
var stageTimeouts = map[string]time.Duration{
	agentGenerate: 60 * time.Second,
	agentEvaluate: 60 * time.Second,
	agentMultiDim: 60 * time.Second,
	agentAdvocate: 60 * time.Second,
	agentSkeptic:  60 * time.Second,
	agentInfer:    60 * time.Second,
	agentImprove:  90 * time.Second,
}
