package app

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/structured"
)

// Agents lists the agents whose replies are JSON, each with the Spec its
// replies are read with: every built-in pipeline's, the eval's judge, and
// those of the pipeline files in dir (none when dir is empty).
func Agents(dir string) ([]structured.Agent, error) {
	var out []structured.Agent
	sp, err := spark.New()
	if err != nil {
		return nil, err
	}
	out = append(out, sp.StructuredAgents()...)
	ch, err := chaos.New(nil)
	if err != nil {
		return nil, err
	}
	out = append(out, ch.StructuredAgents()...)
	count, err := debate.NewTokenCounter()
	if err != nil {
		return nil, err
	}
	db, err := debate.New(count, nil, nil)
	if err != nil {
		return nil, err
	}
	out = append(out, db.StructuredAgents()...)
	as, err := assess.New(assess.Config{})
	if err != nil {
		return nil, err
	}
	out = append(out, as.StructuredAgents()...)
	pr, err := proposal.New(nil, nil)
	if err != nil {
		return nil, err
	}
	out = append(out, pr.StructuredAgents()...)
	ev, err := eval.Agents()
	if err != nil {
		return nil, err
	}
	out = append(out, ev...)
	if dir != "" {
		ps, err := flow.LoadDir(dir)
		if err != nil {
			return nil, InputError{fmt.Errorf("--pipelines: %w", err)}
		}
		for _, p := range ps {
			out = append(out, p.StructuredAgents()...)
		}
	}
	return out, nil
}

// ReplyReader returns what madspark parse reads a reply against: the
// JSON Schema in the file schemaPath, or the Spec of the agent called
// name (by its name or its schema's) among Agents(dir).
func ReplyReader(schemaPath, name, dir string) (structured.Reader, error) {
	switch {
	case schemaPath != "" && name != "":
		return nil, Inputf("give --schema or --agent, not both")
	case schemaPath != "":
		data, err := os.ReadFile(schemaPath)
		if err != nil {
			return nil, Inputf("--schema: %v", err)
		}
		s, err := structured.NewSpecFromAnySchema("schema", data)
		if err != nil {
			return nil, Inputf("--schema %s: %s", schemaPath, strings.TrimPrefix(err.Error(), "structured: schema of schema: "))
		}
		return s, nil
	case name != "":
		agents, err := Agents(dir)
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			if a.Name == name || a.Spec.Name() == name {
				return a.Spec, nil
			}
		}
		return nil, Inputf("unknown agent %q: madspark parse --agents lists them", name)
	}
	return nil, Inputf("say what to read the reply against: --schema FILE or --agent NAME (madspark parse --agents lists the agents)")
}

// SortAgents orders agents by name, for a listing.
func SortAgents(agents []structured.Agent) {
	sort.SliceStable(agents, func(i, j int) bool { return agents[i].Name < agents[j].Name })
}
