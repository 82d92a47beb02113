package structured

import "encoding/json"

// relaxed returns a copy of schema (JSON) without the soft keywords: the
// counts, lengths, ranges and patterns that the normalizer and the type's
// rules repair, and the ban on additional properties (unknown fields are
// dropped when decoding). What is left is hard: types, required fields,
// enums.
func relaxed(schema []byte) ([]byte, error) {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, err
	}
	var strip func(v any, props bool)
	strip = func(v any, props bool) {
		switch x := v.(type) {
		case map[string]any:
			if props {
				// Property names, not keywords.
				for _, c := range x {
					strip(c, false)
				}
				return
			}
			for _, k := range []string{"minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
				"exclusiveMinimum", "exclusiveMaximum", "pattern", "uniqueItems", "multipleOf"} {
				delete(x, k)
			}
			if ap, ok := x["additionalProperties"].(bool); ok && !ap {
				delete(x, "additionalProperties")
			}
			for k, c := range x {
				strip(c, k == "properties" || k == "patternProperties" || k == "$defs")
			}
		case []any:
			for _, c := range x {
				strip(c, false)
			}
		}
	}
	strip(doc, false)
	return json.Marshal(doc)
}
