package llm

import (
	"context"
	"fmt"
)

// Repair is one deterministic change made to a model's reply that was usable
// but broke a soft rule: a count, an index, a length, a range, a type that
// could be coerced, a reference to something that does not exist, or two
// fields that contradicted each other. A repaired reply is kept; the repair
// is recorded wherever the run's result is shown.
type Repair struct {
	// Step is the journaled step whose reply was repaired; the engine sets
	// it.
	Step string `json:"step,omitempty"`
	// Agent is the agent whose reply was repaired, such as "spark.evaluate".
	Agent string `json:"agent"`
	// Rule names the rule the reply broke, such as "syntax", "shape",
	// "key", "type", "enum", "split", "extra", "count", "index", "range",
	// "length", "consistency" or "reference".
	Rule string `json:"rule"`
	// Path is where in the reply's value the repair was made, as a JSON
	// pointer ("/ideas/2/score"); empty for the reply as a whole or where
	// a rule of the agent's own made it.
	Path string `json:"path,omitempty"`
	// Action says what was done, in a few words, before → after where that
	// helps: "score 10.5 → 10", "4 ideas kept of 5 asked".
	Action string `json:"action"`
}

func (r Repair) String() string {
	if r.Path != "" {
		return fmt.Sprintf("%s: %s: %s: %s", r.Agent, r.Rule, r.Path, r.Action)
	}
	return fmt.Sprintf("%s: %s: %s", r.Agent, r.Rule, r.Action)
}

type repairSinkKey struct{}

// WithRepairSink returns a context whose repairs (see RecordRepair) are passed
// to sink. The engine installs one around each step; sink must be safe for
// concurrent use.
func WithRepairSink(ctx context.Context, sink func(Repair)) context.Context {
	return context.WithValue(ctx, repairSinkKey{}, sink)
}

// RecordRepair reports r to the sink of ctx, if there is one.
func RecordRepair(ctx context.Context, r Repair) {
	if sink, ok := ctx.Value(repairSinkKey{}).(func(Repair)); ok && sink != nil {
		sink(r)
	}
}

// RepairCount says how many repairs there were, for a summary line: "1
// repair", "3 repairs", or "" for none.
func RepairCount(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 repair"
	}
	return fmt.Sprintf("%d repairs", n)
}
