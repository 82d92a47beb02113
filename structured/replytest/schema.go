package replytest

import (
	"encoding/json"
	"fmt"

	"pgregory.net/rapid"
)

// fieldNames are names a schema's fields may have: words, in snake case,
// the way pipeline files and model-facing schemas name them.
var fieldNames = []string{
	"title", "pitch", "score", "summary", "key_points", "confidence_score", "risk_level", "next_steps",
	"verdict", "reasons", "market_size", "target_users", "is_feasible", "cost_estimate", "tags",
	"owner_name", "rank", "notes", "evidence", "idea_name", "impact_score", "status", "priority",
}

// enumValues are values a schema's enums may take.
var enumValues = [][]string{
	{"approve", "revise", "reject"}, {"pass", "fail"}, {"low", "medium", "high"},
	{"A", "B", "C", "D", "F"}, {"qualitative", "quantitative", "mixed"}, {"partially_aligned", "aligned", "misaligned"},
}

// Schema draws the JSON Schema of an object as a pipeline file may
// declare one: nested objects and lists, numbers with and without
// ranges, integers, booleans, enums, required and optional fields, no
// other fields allowed.
func Schema(t *rapid.T) json.RawMessage {
	s := object(t, 0, "schema")
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("replytest: %v", err))
	}
	return b
}

func object(t *rapid.T, depth int, label string) map[string]any {
	names := rapid.SliceOfNDistinct(rapid.SampledFrom(fieldNames), 1, 5, rapid.ID[string]).Draw(t, label+".fields")
	props := map[string]any{}
	var req []string
	for _, name := range names {
		props[name] = field(t, depth+1, label+"."+name)
		if rapid.IntRange(0, 3).Draw(t, label+"."+name+".required") > 0 {
			req = append(req, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(req) > 0 {
		s["required"] = req
	}
	return s
}

func field(t *rapid.T, depth int, label string) map[string]any {
	kinds := []string{"string", "number", "integer", "boolean", "enum", "range", "unit", "strings"}
	if depth < 3 {
		kinds = append(kinds, "object", "objects")
	}
	switch rapid.SampledFrom(kinds).Draw(t, label) {
	case "string":
		return map[string]any{"type": "string"}
	case "number":
		return map[string]any{"type": "number"}
	case "integer":
		return map[string]any{"type": "integer", "minimum": 0, "maximum": rapid.SampledFrom([]int{5, 10, 100, 1000000}).Draw(t, label+".max")}
	case "boolean":
		return map[string]any{"type": "boolean"}
	case "enum":
		return map[string]any{"type": "string", "enum": rapid.SampledFrom(enumValues).Draw(t, label+".enum")}
	case "range":
		return map[string]any{"type": "number", "minimum": 0, "maximum": 10}
	case "unit":
		return map[string]any{"type": "number", "minimum": 0, "maximum": 1}
	case "strings":
		s := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		if rapid.Bool().Draw(t, label+".min") {
			s["minItems"] = 1
		}
		return s
	case "object":
		return object(t, depth, label)
	default:
		s := map[string]any{"type": "array", "items": object(t, depth, label+"[]")}
		if rapid.Bool().Draw(t, label+".min") {
			s["minItems"] = 1
		}
		return s
	}
}
