package proposal

import (
	"fmt"

	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/scholar"
)

// Limits on the parameters.
const (
	MaxRefinements  = 10
	DefaultMaxRefs  = 3
	DefaultPerQuery = 5
)

// Params are the inputs of a proposal run.
type Params struct {
	Profile UserProfile `json:"profile" jsonschema:"required,title=Researcher profile,description=Who writes the proposal and with what time and skills"`
	// ProfileSource says where the profile came from: "interview" or the
	// profile file's name.
	ProfileSource string `json:"profile_source" jsonschema:"readOnly=true,title=Profile source,description=Where the profile came from: interview\\, a profile file's name or api"`
	// MaxRefinements caps the quality-control refinement rounds (0-10).
	MaxRefinements int `json:"max_refinements" jsonschema:"minimum=0,maximum=10,title=Refinement rounds,description=Quality-control rounds that refine the proposal at most"`
	// NoSearch writes the proposal without a literature search.
	NoSearch bool `json:"no_search" jsonschema:"title=No literature search,description=Write the proposal without searching for literature"`
	// ResultsPerQuery is how many results each source is asked for per
	// query (1-25).
	ResultsPerQuery int `json:"results_per_query" jsonschema:"minimum=1,maximum=25,title=Results per query,description=Literature results asked of each source per query"`
}

// DefaultParams returns the defaults: 3 refinements, 5 results per query
// and source, the search on.
func DefaultParams() Params {
	return Params{MaxRefinements: DefaultMaxRefs, ResultsPerQuery: DefaultPerQuery, ProfileSource: "interview"}
}

// Validate reports the first problem with p, as one line naming the
// parameter.
func (p *Params) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	if err := p.Profile.Validate(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	switch {
	case p.MaxRefinements < 0 || p.MaxRefinements > MaxRefinements:
		return fmt.Errorf("max_refinements must be 0..%d, got %d", MaxRefinements, p.MaxRefinements)
	case p.ResultsPerQuery < 1 || p.ResultsPerQuery > scholar.MaxResults:
		return fmt.Errorf("results_per_query must be 1..%d, got %d", scholar.MaxResults, p.ResultsPerQuery)
	}
	return nil
}
