package structured

import (
	"fmt"
	"strings"
)

// describe returns a compact, JSON-like description of the values n
// allows, for the prompt of a model that does not enforce schemas:
//
//	{"score": number 0-10, "verdict": "pass"|"fail", "notes": [string]}
func describe(n *node) string {
	var b strings.Builder
	writeDescription(&b, n, 0)
	return b.String()
}

func writeDescription(b *strings.Builder, n *node, depth int) {
	if b.Len() > MaxHintBytes {
		return // refused by newSpec
	}
	if n == nil || depth > 8 {
		b.WriteString("any")
		return
	}
	if len(n.anyOf) > 0 {
		for i, alt := range n.anyOf {
			if i > 0 {
				b.WriteString(" or ")
			}
			writeDescription(b, alt, depth+1)
		}
		return
	}
	if len(n.enum) > 0 {
		for i, e := range n.enum {
			if i > 0 {
				b.WriteString("|")
			}
			if s, ok := e.(string); ok {
				fmt.Fprintf(b, "%q", s)
			} else {
				fmt.Fprint(b, plain(e))
			}
		}
		return
	}
	switch n.main() {
	case "object":
		if len(n.props) == 0 {
			b.WriteString("{string: ")
			writeDescription(b, n.extra, depth+1)
			b.WriteString("}")
			return
		}
		b.WriteString("{")
		for i, p := range n.props {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%q", p.name)
			if !n.required[p.name] {
				b.WriteString(" (optional)")
			}
			b.WriteString(": ")
			writeDescription(b, p.n, depth+1)
		}
		b.WriteString("}")
	case "array":
		b.WriteString("[")
		writeDescription(b, n.items, depth+1)
		b.WriteString("]")
		switch {
		case n.minItems != nil && n.maxItems != nil && *n.minItems == *n.maxItems:
			fmt.Fprintf(b, " (%d items)", *n.minItems)
		case n.minItems != nil && n.maxItems != nil:
			fmt.Fprintf(b, " (%d-%d items)", *n.minItems, *n.maxItems)
		case n.minItems != nil && *n.minItems > 1:
			fmt.Fprintf(b, " (at least %d items)", *n.minItems)
		case n.maxItems != nil:
			fmt.Fprintf(b, " (at most %d items)", *n.maxItems)
		}
	case "number", "integer":
		b.WriteString(n.main())
		switch {
		case n.min != nil && n.max != nil:
			fmt.Fprintf(b, " %s-%s", fmtNum(*n.min), fmtNum(*n.max))
		case n.min != nil:
			fmt.Fprintf(b, " >= %s", fmtNum(*n.min))
		case n.max != nil:
			fmt.Fprintf(b, " <= %s", fmtNum(*n.max))
		}
	case "":
		if len(n.types) == 0 {
			b.WriteString("any")
			return
		}
		b.WriteString(strings.Join(n.types, "|"))
	default:
		b.WriteString(n.main())
	}
	if n.allows("null") && len(n.types) > 1 {
		b.WriteString(" or null")
	}
}
