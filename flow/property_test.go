package flow_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/structured/replytest"
)

// TestOutputRepliesProperty: the replies to an agent of a pipeline file,
// whatever fields its output declares (in the short form, in
// output_schema, or for a batched for_each), are read against its schema
// as replytest expects: every usable corruption read back as the clean
// reply's value, nothing the reply lacks read as if it held it.
func TestOutputRepliesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var agent string
		switch rapid.IntRange(0, 2).Draw(t, "form") {
		case 0:
			agent = "    output: " + declaration(t, 0, "output")
		case 1:
			agent = "    output_schema: " + string(replytest.Schema(t))
		default:
			agent = "    for_each: {over: items, mode: batch}\n    output: " + declaration(t, 0, "output")
		}
		src := fmt.Sprintf("name: drawn\ninputs:\n  items: {type: \"[string]\"}\nagents:\n  a:\n    prompt: \"answer\"\n%s\nsteps: [a]\n", agent)
		p, err := flow.Parse("drawn.yaml", []byte(src), nil)
		if err != nil {
			t.Fatalf("%s\n%v", src, err)
		}
		agents := p.StructuredAgents()
		if len(agents) != 1 {
			t.Fatalf("%d agents", len(agents))
		}
		replytest.Either(t, agents[0].Spec, nil)
	})
}

var fieldNames = []string{"pitch", "score", "title", "summary", "risks", "verdict", "confidence", "steps", "owner", "budget", "notes"}

// declaration draws the short form of an output: {field: type, ...}.
func declaration(t *rapid.T, depth int, label string) string {
	names := rapid.SliceOfNDistinct(rapid.SampledFrom(fieldNames), 1, 4, rapid.ID[string]).Draw(t, label)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + fieldType(t, depth+1, label+"."+n)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func fieldType(t *rapid.T, depth int, label string) string {
	kinds := []string{"string", "number", "integer", "boolean", "[string]", "[number]"}
	if depth < 3 {
		kinds = append(kinds, "object", "[object]")
	}
	switch k := rapid.SampledFrom(kinds).Draw(t, label); k {
	case "object":
		return declaration(t, depth, label)
	case "[object]":
		return "[" + declaration(t, depth, label) + "]"
	default:
		return k
	}
}
