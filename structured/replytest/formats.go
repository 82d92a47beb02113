package replytest

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v4"
)

// The formats a value is written in: JSON (with the slips of corrupt),
// and the formats beyond JSON that models write.
const (
	FormatJSON       = "JSON"
	FormatJSON5      = "JSON5 numbers"
	FormatYAML       = "YAML"
	FormatLabelValue = "label-value text"
	FormatTable      = "markdown table"
)

// Formats lists every format, in the order the counts are reported.
var Formats = []string{FormatJSON, FormatJSON5, FormatYAML, FormatLabelValue, FormatTable}

// renderYAML writes v as YAML, keys in their order; texts are quoted
// where YAML needs it, and read back as written.
func renderYAML(v *val) (string, bool) {
	n, ok := yamlNode(v)
	if !ok {
		return "", false
	}
	out, err := yaml.Dump(n)
	if err != nil {
		return "", false
	}
	return string(out), true
}

func yamlNode(v *val) (*yaml.Node, bool) {
	if v.raw != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: *v.raw}, true
	}
	switch v.kind {
	case 'o':
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for i, k := range v.keys {
			c, ok := yamlNode(v.vals[i])
			if !ok {
				return nil, false
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, c)
		}
		return n, true
	case 'a':
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if len(v.items) == 0 {
			n.Style = yaml.FlowStyle
		}
		for _, it := range v.items {
			c, ok := yamlNode(it)
			if !ok {
				return nil, false
			}
			n.Content = append(n.Content, c)
		}
		return n, true
	case 's':
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.str}, true
	case 'n':
		tag := "!!float"
		if v.num == math.Trunc(v.num) {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: fmtNum(v.num)}, true
	case 'b':
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.b)}, true
	case 'z':
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, true
	}
	return nil, false
}

// renderLabels writes an object as label-value text: "Key: value" lines,
// lists as "- " lines under their label, nested objects indented, lists
// of objects as numbered blocks, or, with tables, as markdown tables
// where every item's fields are single values. ok is false for what the
// format cannot write plainly (a list of lists, a text over two lines, a
// text that reads as a list line or a label).
func renderLabels(v *val, keyStyle func(string) string, tables bool) (string, bool) {
	if v.kind != 'o' || v.raw != nil || len(v.keys) == 0 {
		if tables && v.kind == 'a' && v.raw == nil {
			var b strings.Builder
			if !writeTable(&b, v, "", keyStyle) {
				return "", false
			}
			return b.String(), true
		}
		return "", false
	}
	var b strings.Builder
	w := &labelWriter{b: &b, key: keyStyle, tables: tables, ok: true}
	w.object(v, "")
	return b.String(), w.ok && (!tables || w.tabled)
}

type labelWriter struct {
	b      *strings.Builder
	key    func(string) string
	tables bool
	ok     bool
	// tabled: a list was written as a table.
	tabled bool
}

func (w *labelWriter) object(v *val, indent string) {
	for i, k := range v.keys {
		w.member(indent, w.key(k), v.vals[i], indent)
		_ = i
	}
}

// member writes "label: value" at indent; first is the prefix of the
// first line (an item's marker), indent that of the lines after.
func (w *labelWriter) member(first, label string, x *val, indent string) {
	if !plainLabel(label) {
		w.ok = false
		return
	}
	if s, ok := scalarText(x); ok {
		if !plainValue(s) {
			w.ok = false
		}
		fmt.Fprintf(w.b, "%s%s: %s\n", first, label, s)
		return
	}
	switch x.kind {
	case 'o':
		if len(x.keys) == 0 {
			fmt.Fprintf(w.b, "%s%s: {}\n", first, label)
			return
		}
		fmt.Fprintf(w.b, "%s%s:\n", first, label)
		w.object(x, indent+"  ")
	case 'a':
		if len(x.items) == 0 {
			fmt.Fprintf(w.b, "%s%s: []\n", first, label)
			return
		}
		fmt.Fprintf(w.b, "%s%s:\n", first, label)
		if w.tables && writeTable(w.b, x, indent, w.key) {
			w.tabled = true
			return
		}
		for i, it := range x.items {
			if s, ok := scalarText(it); ok {
				if !plainValue(s) {
					w.ok = false
				}
				fmt.Fprintf(w.b, "%s- %s\n", indent, s)
				continue
			}
			if it.kind != 'o' || it.raw != nil || len(it.keys) == 0 {
				w.ok = false
				return
			}
			marker := fmt.Sprintf("%d. ", i+1)
			inner := indent + strings.Repeat(" ", len(marker))
			for j, k := range it.keys {
				prefix := inner
				if j == 0 {
					prefix = indent + marker
				}
				w.member(prefix, w.key(k), it.vals[j], inner)
			}
		}
	default:
		w.ok = false
	}
}

// writeTable writes a list of objects whose fields are single values as
// a markdown table, a field an item lacks as an empty cell.
func writeTable(b *strings.Builder, x *val, indent string, key func(string) string) bool {
	if len(x.items) == 0 {
		return false
	}
	// A column a field, however each item spells its key.
	var cols []string
	seen := map[string]bool{}
	for _, it := range x.items {
		if it.kind != 'o' || it.raw != nil {
			return false
		}
		for _, k := range it.keys {
			if !seen[normal(k)] {
				seen[normal(k)] = true
				cols = append(cols, k)
			}
		}
	}
	if len(cols) == 0 {
		return false
	}
	rows := [][]string{}
	for _, it := range x.items {
		row := make([]string, len(cols))
		for i, c := range cols {
			for j, k := range it.keys {
				if normal(k) != normal(c) {
					continue
				}
				s, ok := scalarText(it.vals[j])
				if !ok || s == "" || strings.ContainsAny(s, "|\n") || strings.TrimSpace(s) != s {
					return false
				}
				row[i] = s
			}
		}
		if strings.Join(row, "") == "" {
			// An item without fields: an empty row, which reads as none.
			return false
		}
		rows = append(rows, row)
	}
	head := make([]string, len(cols))
	sep := make([]string, len(cols))
	for i, c := range cols {
		head[i] = key(c)
		sep[i] = "---"
	}
	fmt.Fprintf(b, "%s| %s |\n%s| %s |\n", indent, strings.Join(head, " | "), indent, strings.Join(sep, " | "))
	for _, row := range rows {
		fmt.Fprintf(b, "%s| %s |\n", indent, strings.Join(row, " | "))
	}
	return true
}

// scalarText is a text, number, boolean or null as label-value text
// writes it.
func scalarText(x *val) (string, bool) {
	if x.raw != nil {
		return *x.raw, true
	}
	switch x.kind {
	case 's':
		return x.str, true
	case 'n':
		return fmtNum(x.num), true
	case 'b':
		return strconv.FormatBool(x.b), true
	case 'z':
		return "null", true
	}
	return "", false
}

// plainLabel reports whether a key can be written as a label.
func plainLabel(k string) bool {
	return labelKey.MatchString(k)
}

// plainValue reports whether a text reads back as itself after a label
// or a list marker: one line, no list marker or label of its own, no
// list written as JSON, no placeholder.
func plainValue(s string) bool {
	t := strings.TrimSpace(s)
	// Quotes around the whole text, and YAML's marks, read another way.
	if strings.ContainsAny(t[:min(1, len(t))], `"'&*!%@`+"`"+`>|?-`) || strings.Contains(s, " #") || strings.Contains(s, ": ") {
		return false
	}
	return t == s && t != "" && !strings.ContainsAny(s, "\n\r") && !bulletLike.MatchString(s+" ") &&
		!(strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]")) && !(strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}")) &&
		!strings.HasPrefix(t, "|") && !strings.HasPrefix(t, "#")
}

// labelKey is a key that label-value text can write as it is.
var labelKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9 _'-]{0,59}$`)

// normal is a key in lower case, letters and digits only.
func normal(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127 {
			b.WriteRune(r)
		}
	}
	return b.String()
}
