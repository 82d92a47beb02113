package chaos

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/madspark/madspark/input"
)

// Limits on the pipeline's inputs.
const (
	MaxPromptLen  = 4000
	MaxIterations = 10
	MaxSeeds      = 50
)

// Params are the inputs of a chaos run.
type Params struct {
	Prompt string `json:"prompt" jsonschema:"required,title=Prompt,description=What to generate ideas for"`
	// Iterations is how many times the workflow runs, each building on the
	// ideas accepted before.
	Iterations int `json:"iterations" jsonschema:"minimum=1,maximum=10,title=Iterations,description=Rounds of the workflow\\, each building on the ideas accepted before"`
	// ChaosSeeds is how many random concepts seed the chaos generator.
	ChaosSeeds int `json:"chaos_seeds" jsonschema:"minimum=1,maximum=50,title=Chaos seeds,description=Random concepts that seed the chaos generator"`
	// Seed makes the sampling of seed concepts reproducible.
	Seed uint64 `json:"seed" jsonschema:"title=Random seed,description=Makes the sampling of seed concepts repeatable; leave empty for a random one"`
	// IdeasPerTrack is how many ideas each creative track is asked for (5-20).
	IdeasPerTrack int `json:"ideas_per_track" jsonschema:"minimum=5,maximum=20,title=Ideas per track,description=Ideas each creative track is asked for"`
	// ModelA and ModelB override the provider's model for each creative
	// track; TempA and TempB are their temperatures (A hot, B cooler).
	ModelA string  `json:"model_a,omitempty" jsonschema:"title=Track A model,description=Model of the first creative track; empty for the provider's model"`
	ModelB string  `json:"model_b,omitempty" jsonschema:"title=Track B model,description=Model of the second creative track; empty for the provider's model"`
	TempA  float64 `json:"temp_a" jsonschema:"minimum=0,maximum=2,title=Track A temperature,description=Sampling temperature of the first (hotter) creative track"`
	TempB  float64 `json:"temp_b" jsonschema:"minimum=0,maximum=2,title=Track B temperature,description=Sampling temperature of the second (cooler) creative track"`
	// AcceptThreshold is the lowest quality_score of an accepted idea; the
	// judge's prompt and its validation use the same number.
	AcceptThreshold float64 `json:"accept_threshold" jsonschema:"minimum=0,maximum=10,title=Acceptance threshold,description=Lowest quality score (0-10) of an accepted idea"`
	// Memory names the idea memory; empty means one per prompt.
	Memory string `json:"memory" jsonschema:"title=Idea memory,description=Name of the idea memory to read and extend; empty for one per prompt"`
	// Tournament ranks the accepted ideas by pairwise comparison into Elo
	// ratings.
	Tournament bool `json:"tournament" jsonschema:"title=Tournament,description=Rank the accepted ideas by pairwise comparison into Elo ratings"`
	// Evolve recombines the best ideas into new candidates that are refined
	// and judged like the others.
	Evolve bool `json:"evolve" jsonschema:"title=Evolve,description=Recombine the best ideas into new candidates\\, refined and judged like the others"`
	// MemoryFile is where the caller exports the memory (ideas.json); it is
	// recorded in the shared state.
	MemoryFile string `json:"-"`
}

// DefaultParams returns the defaults: one iteration, 10 seeds, 10 ideas per
// track, track A at 1.0 and B at 0.6, threshold 6.0.
func DefaultParams() Params {
	return Params{Iterations: 1, ChaosSeeds: 10, IdeasPerTrack: 10, TempA: 1.0, TempB: 0.6, AcceptThreshold: 6.0}
}

// Validate reports the first problem with p, as one line naming the
// parameter.
func (p *Params) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(p.Prompt) == "":
		return errors.New("prompt must not be empty")
	case !utf8.ValidString(p.Prompt):
		return errors.New("prompt is not valid UTF-8")
	case utf8.RuneCountInString(p.Prompt) > MaxPromptLen:
		return fmt.Errorf("prompt is %d characters; the limit is %d", utf8.RuneCountInString(p.Prompt), MaxPromptLen)
	case p.Iterations < 1 || p.Iterations > MaxIterations:
		return fmt.Errorf("iterations must be 1..%d, got %d", MaxIterations, p.Iterations)
	case p.ChaosSeeds < 1 || p.ChaosSeeds > MaxSeeds:
		return fmt.Errorf("chaos_seeds must be 1..%d, got %d", MaxSeeds, p.ChaosSeeds)
	case p.IdeasPerTrack < 5 || p.IdeasPerTrack > 20:
		return fmt.Errorf("ideas_per_track must be 5..20, got %d", p.IdeasPerTrack)
	case p.TempA < 0 || p.TempA > 2 || p.TempB < 0 || p.TempB > 2:
		return fmt.Errorf("track temperatures must be within 0..2")
	case p.AcceptThreshold < 0 || p.AcceptThreshold > 10:
		return fmt.Errorf("accept_threshold must be within 0..10, got %g", p.AcceptThreshold)
	case !utf8.ValidString(p.Memory) || utf8.RuneCountInString(p.Memory) > 200:
		return errors.New("memory name must be valid UTF-8 of at most 200 characters")
	}
	return nil
}

// MemoryName is the memory the run reads and extends: Params.Memory, or the
// prompt lower-cased with its white space collapsed.
func (p Params) MemoryName() string {
	if p.Memory != "" {
		return p.Memory
	}
	return "chaos:" + strings.Join(strings.Fields(strings.ToLower(p.Prompt)), " ")
}
