package structured

import (
	"fmt"
	"strings"

	"github.com/invopop/jsonschema"
)

// describe returns a compact, JSON-like description of the values s
// allows, for the prompt of a model that does not enforce schemas:
//
//	{"score": number 0-10, "verdict": "pass"|"fail", "notes": [string]}
func describe(s *jsonschema.Schema) string {
	var b strings.Builder
	writeDescription(&b, s)
	return b.String()
}

func writeDescription(b *strings.Builder, s *jsonschema.Schema) {
	if s == nil {
		b.WriteString("any")
		return
	}
	switch s.Type {
	case "object":
		if s.Properties == nil {
			b.WriteString("{string: ")
			writeDescription(b, s.AdditionalProperties)
			b.WriteString("}")
			return
		}
		b.WriteString("{")
		first := true
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(b, "%q", p.Key)
			if !required(s, p.Key) {
				b.WriteString(" (optional)")
			}
			b.WriteString(": ")
			writeDescription(b, p.Value)
		}
		b.WriteString("}")
	case "array":
		b.WriteString("[")
		writeDescription(b, s.Items)
		b.WriteString("]")
		switch {
		case s.MinItems != nil && s.MaxItems != nil && *s.MinItems == *s.MaxItems:
			fmt.Fprintf(b, " (%d items)", *s.MinItems)
		case s.MinItems != nil && s.MaxItems != nil:
			fmt.Fprintf(b, " (%d-%d items)", *s.MinItems, *s.MaxItems)
		case s.MinItems != nil && *s.MinItems > 1:
			fmt.Fprintf(b, " (at least %d items)", *s.MinItems)
		case s.MaxItems != nil:
			fmt.Fprintf(b, " (at most %d items)", *s.MaxItems)
		}
	case "string":
		if len(s.Enum) > 0 {
			for i, e := range s.Enum {
				if i > 0 {
					b.WriteString("|")
				}
				fmt.Fprintf(b, "%q", fmt.Sprint(e))
			}
			return
		}
		b.WriteString("string")
	case "number", "integer":
		b.WriteString(s.Type)
		switch {
		case s.Minimum != "" && s.Maximum != "":
			fmt.Fprintf(b, " %s-%s", s.Minimum, s.Maximum)
		case s.Minimum != "":
			fmt.Fprintf(b, " >= %s", s.Minimum)
		case s.Maximum != "":
			fmt.Fprintf(b, " <= %s", s.Maximum)
		}
	case "":
		b.WriteString("any")
	default:
		b.WriteString(s.Type)
	}
}
