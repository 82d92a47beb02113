package mock

import (
	"encoding/json"
	"fmt"
	"sort"
)

// FromSchema is the generic mock answer for an agent without a responder
// that asks for JSON (a pipeline file's agents): a value of the JSON Schema
// schema, built deterministically. Strings say what they stand for
// ("mock pitch for writer"), numbers are mid-range (5 without a range),
// integers too, booleans true, an enum takes its first value, a list has
// two items (within its bounds), an object has every declared property.
func FromSchema(agent string, schema []byte) (any, error) {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", agent, err)
	}
	return schemaValue(agent, agent, s, 0), nil
}

func schemaValue(agent, field string, s map[string]any, depth int) any {
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	typ, _ := s["type"].(string)
	if list, ok := s["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	num := func(key string) (float64, bool) { f, ok := s[key].(float64); return f, ok }
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ps, _ := props[k].(map[string]any)
			if depth < 8 {
				out[k] = schemaValue(agent, k, ps, depth+1)
			}
		}
		return out
	case "array":
		n := 2
		if lo, ok := num("minItems"); ok && int(lo) > n {
			n = int(lo)
		}
		if hi, ok := num("maxItems"); ok && int(hi) < n {
			n = int(hi)
		}
		items, _ := s["items"].(map[string]any)
		out := make([]any, 0, n)
		for i := range n {
			v := schemaValue(agent, field, items, depth+1)
			if str, ok := v.(string); ok {
				v = fmt.Sprintf("%s %d", str, i+1)
			}
			out = append(out, v)
		}
		return out
	case "number", "integer":
		lo, okLo := num("minimum")
		hi, okHi := num("maximum")
		v := 5.0
		switch {
		case okLo && okHi:
			v = (lo + hi) / 2
		case okLo:
			v = lo + 5
		case okHi:
			v = hi - 5
		}
		if typ == "integer" {
			return int(v)
		}
		return v
	case "boolean":
		return true
	case "null":
		return nil
	}
	return fmt.Sprintf("mock %s for %s", field, agent)
}
