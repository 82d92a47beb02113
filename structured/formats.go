package structured

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v4"
	"go.yaml.in/yaml/v4/plugin/loaderlimits"
)

// The formats beyond JSON that models write when they write no JSON:
// YAML, label-value text ("Score: 7", lists as bullet lines, nested
// objects as indented blocks or dotted keys), and markdown tables for
// lists of objects. Each is read into the same values as JSON (objects
// in order, lists, texts) and aligned to the schema by the same rules:
// every scalar is read as the text the reply wrote, so that a text field
// gets exactly what was written and a number field the number the text
// holds, recorded. Each reading records the format as a repair. Every
// reader is linear in the reply's length.

// formatCandidates reads a reply in the formats beyond JSON: label-value
// text or a markdown table, and YAML (a ```yaml fence's body, else the
// whole reply).
func formatCandidates(ctx context.Context, text string) []candidate {
	masked := []byte(text)
	for _, loc := range thinkRE.FindAllStringIndex(text, -1) {
		for j := loc[0]; j < loc[1]; j++ {
			masked[j] = ' '
		}
	}
	src := string(masked)
	var out []candidate
	body, _, fenced := yamlSource(src)
	// Label-value text is often YAML too, and the two may read it apart
	// ("1. title: x" is a key in YAML, an item in label-value text; a
	// quoted text is a text in YAML): both are readings of one part of
	// the reply, the one that sets less aside taken, YAML's on a tie.
	if v, fixes, ok := readLabels(src); ok {
		out = append(out, candidate{v: v, start: 0, end: len(src), fixes: fixes, format: true, labels: true})
	}
	if v, err := readYAML(body); err == nil {
		// The fence's marks, and text around them, are around the
		// reading, as for label-value text: the two read one part.
		c := candidate{v: v, start: 0, end: len(src), format: true}
		if n := nonSpace(src) - nonSpace(body) - nonSpace(strings.Join(fenceRE.FindAllString(src, 2), "")); fenced && n > 0 {
			c.fixes = append(c.fixes, fixed{rule: "syntax", action: fmt.Sprintf("text around the YAML set aside (%d characters)", n)})
		}
		if fenced {
			c.fixes = append(c.fixes, fixed{rule: "format", action: "YAML taken from a code fence"})
		}
		c.fixes = append(c.fixes, fixed{rule: "format", action: "read as YAML"})
		out = append(out, c)
	}
	if ctx.Err() != nil {
		return nil
	}
	return out
}

var yamlFenceRE = regexp.MustCompile("(?m)^[ \t]*```(?:yaml|yml)[ \t]*\n")

// yamlSource returns the YAML of a reply: the body of its first ```yaml
// fence, else the whole reply.
func yamlSource(text string) (body string, start int, fenced bool) {
	if loc := yamlFenceRE.FindStringIndex(text); loc != nil {
		end := strings.Index(text[loc[1]:], "```")
		if end < 0 {
			end = len(text) - loc[1]
		}
		return text[loc[1] : loc[1]+end], loc[1], true
	}
	return text, 0, false
}

// readYAML reads a YAML mapping or sequence. Aliases are refused (no
// value of a reply is written twice by reference, and expanding them is
// how a small text becomes a huge value); depth is bounded.
func readYAML(text string) (any, error) {
	var doc yaml.Node
	limits := loaderlimits.New(loaderlimits.DepthValue(maxDepth), loaderlimits.AliasValue(0))
	if err := yaml.Load([]byte(text), &doc, yaml.WithPlugin(limits)); err != nil {
		return nil, err
	}
	n := &doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("no YAML document")
		}
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("YAML that is not a mapping or a list")
	}
	return yamlValue(n, 0)
}

func yamlValue(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("YAML nested more than %d deep", maxDepth)
	}
	switch n.Kind {
	case yaml.MappingNode:
		o := &object{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("a YAML key that is not a text")
			}
			if k.Style == 0 && itemRE.MatchString(k.Value) {
				// "1. title: x" is a numbered item of label-value text,
				// which YAML reads as the key "1. title".
				return nil, fmt.Errorf("a YAML key that is a numbered list item: %.40q", k.Value)
			}
			v, err := yamlValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k.Value)
			o.vals = append(o.vals, v)
		}
		return o, nil
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.ScalarNode:
		if n.Tag == "!!null" && n.Style == 0 {
			return nil, nil
		}
		// As written: the alignment reads a number field's number, a
		// boolean field's yes or no, and a text field gets the text.
		return n.Value, nil
	case yaml.AliasNode:
		return nil, fmt.Errorf("a YAML alias (*%s): not read", n.Value)
	}
	return nil, fmt.Errorf("a YAML node of kind %v", n.Kind)
}

// fieldLabelRE is a label at the start of a line: "Score: 7", "**Score:** 7",
// "**Score**: 7", "Key points:", "scores.impact: 7". The colon is
// followed by a space or the end of the line.
var fieldLabelRE = regexp.MustCompile(`^(?:\*\*|__)?([\p{L}][\p{L}\p{N} _\-./()']{0,60}?)(?:\*\*|__)?[ \t]*:(?:\*\*|__)?(?:[ \t]+(.*))?$`)

// headingRE is a markdown heading, a label whose value is the block
// below it: "## Critique".
var headingRE = regexp.MustCompile(`^#{1,6}[ \t]+(.+?)[ \t]*#*$`)

// itemRE is the marker of a list item: "- ", "* ", "• ", "1. ", "2) ".
var itemRE = regexp.MustCompile(`^(?:[-*•‣◦▪+]|\d{1,3}[.)])[ \t]+`)

// lvLine is one line of label-value text.
type lvLine struct {
	indent int
	// item: the line starts with a list marker, taken off text.
	item bool
	text string
	// label and value, when text is "label: value".
	label, value string
	isLabel      bool
	blank        bool
}

func splitLines(text string) []lvLine {
	raw := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	out := make([]lvLine, 0, len(raw))
	for _, l := range raw {
		t := strings.TrimLeft(l, " \t")
		ln := lvLine{indent: len(l) - len(t), text: strings.TrimRight(t, " \t")}
		if ln.text == "" || strings.HasPrefix(ln.text, "```") {
			// A code fence's marks are no text of a value.
			ln.text = ""
			ln.blank = true
			out = append(out, ln)
			continue
		}
		if m := itemRE.FindString(ln.text); m != "" && !strings.HasPrefix(ln.text, "**") {
			ln.item = true
			ln.text = ln.text[len(m):]
		}
		if m := fieldLabelRE.FindStringSubmatch(ln.text); m != nil {
			ln.isLabel, ln.label, ln.value = true, strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
		} else if m := headingRE.FindStringSubmatch(ln.text); m != nil && !ln.item {
			ln.isLabel, ln.label = true, strings.Trim(strings.TrimSpace(m[1]), "*_:")
		}
		out = append(out, ln)
	}
	return out
}

// readLabels reads label-value text: one field a line ("Key: value"),
// lists as bullet or numbered lines under their label, nested objects as
// indented blocks or dotted keys, a list of objects as numbered or
// bulleted blocks of labels or as a markdown table. Lines before the
// first label, and a paragraph after the last, are prose, set aside.
func readLabels(text string) (any, []fixed, bool) {
	r := &lvReader{lines: splitLines(text)}
	first := -1
	for i, l := range r.lines {
		if l.isLabel && l.indent == 0 {
			first = i
			break
		}
	}
	if first < 0 {
		// A table alone: a list of objects.
		for i, l := range r.lines {
			if !l.blank && strings.HasPrefix(l.text, "|") {
				r.i = i
				v, ok := r.table(l.indent)
				if !ok {
					return nil, nil, false
				}
				fixes := []fixed{{rule: "format", action: "read as a markdown table"}}
				if n := r.aside(0, i) + r.aside(r.i, len(r.lines)); n > 0 {
					fixes = append(fixes, fixed{rule: "syntax", action: fmt.Sprintf("text around the table set aside (%d characters)", n)})
				}
				return v, fixes, true
			}
		}
		return nil, nil, false
	}
	r.i = first
	o, ok := r.object(0, false)
	if !ok {
		return nil, nil, false
	}
	fixes := []fixed{{rule: "format", action: "read as label-value text"}}
	switch {
	case r.tables == 1:
		fixes = append(fixes, fixed{rule: "format", action: "a list read as a markdown table"})
	case r.tables > 1:
		fixes = append(fixes, fixed{rule: "format", action: fmt.Sprintf("%d lists read as markdown tables", r.tables)})
	}
	if n := r.aside(0, first) + r.aside(r.i, len(r.lines)); n > 0 {
		fixes = append(fixes, fixed{rule: "syntax", action: fmt.Sprintf("text around the fields set aside (%d characters)", n)})
	}
	return o, fixes, true
}

type lvReader struct {
	lines []lvLine
	i     int
	// tables counts the lists read as markdown tables.
	tables int
}

// aside counts the characters of lines [from, to).
func (r *lvReader) aside(from, to int) int {
	n := 0
	for _, l := range r.lines[from:to] {
		n += len([]rune(l.text))
	}
	return n
}

// next skips blank lines and returns the next line, if any.
func (r *lvReader) next() (lvLine, bool) {
	for r.i < len(r.lines) && r.lines[r.i].blank {
		r.i++
	}
	if r.i >= len(r.lines) {
		return lvLine{}, false
	}
	return r.lines[r.i], true
}

// object reads the labels at indent, and what belongs to each, into an
// object. inItem: the object is an item of a list, its first label on
// the item's line.
func (r *lvReader) object(indent int, inItem bool) (*object, bool) {
	o := &object{}
	for {
		start := r.i
		l, ok := r.next()
		if !ok || (len(o.keys) > 0 && (l.indent != indent || l.item)) || !l.isLabel {
			r.i = start
			break
		}
		if len(o.keys) == 0 && l.item && !inItem {
			r.i = start
			break
		}
		r.i++
		var v any
		if l.value != "" {
			v = r.text(l.value, indent)
		} else {
			var ok bool
			if v, ok = r.block(indent); !ok {
				return nil, false
			}
		}
		setPath(o, l.label, v)
		if inItem && len(o.keys) == 1 {
			// The item's other labels are indented past its marker.
			indent = r.itemIndent(indent)
		}
	}
	return o, len(o.keys) > 0
}

// itemIndent is the indentation of the labels after an item's first,
// read off the next line.
func (r *lvReader) itemIndent(marker int) int {
	if l, ok := r.next(); ok && l.indent > marker && !l.item {
		return l.indent
	}
	return -1
}

// text reads a label's value on its line, with the lines that continue
// it: lines right after it, neither labels nor items nor blank. A value
// wholly in quotes, on its line or over the lines that continue it, is
// the text inside them, as YAML reads it.
func (r *lvReader) text(first string, indent int) any {
	if q, ok := unquote(first); ok {
		return q
	}
	parts := []string{first}
	for r.i < len(r.lines) {
		l := r.lines[r.i]
		if l.blank || l.isLabel || l.item || strings.HasPrefix(l.text, "|") || l.indent < indent {
			break
		}
		parts = append(parts, l.text)
		r.i++
	}
	if len(parts) > 1 {
		// The lines after the first indented, as YAML wants them.
		if q, ok := unquote(strings.Join(parts, "\n  ")); ok {
			return q
		}
	}
	return strings.Join(parts, "\n")
}

// block reads the value of a label with nothing after its colon: the
// lines below it, indented further, or list items or a table at any
// indentation; nothing is a null.
func (r *lvReader) block(indent int) (any, bool) {
	start := r.i
	l, ok := r.next()
	if !ok || (l.indent <= indent && !l.item && !strings.HasPrefix(l.text, "|")) {
		r.i = start
		return nil, true
	}
	switch {
	case strings.HasPrefix(l.text, "|"):
		return r.table(l.indent)
	case l.item:
		return r.list(l.indent)
	case l.isLabel:
		return r.object(l.indent, false)
	}
	return r.text(l.text, l.indent), true
}

// list reads the items at indent: texts, or objects whose first label is
// on the item's line.
func (r *lvReader) list(indent int) (any, bool) {
	var list []any
	for {
		start := r.i
		l, ok := r.next()
		if !ok || !l.item || l.indent != indent {
			r.i = start
			break
		}
		if l.isLabel {
			o, ok := r.object(indent, true)
			if !ok {
				return nil, false
			}
			list = append(list, o)
			continue
		}
		r.i++
		list = append(list, r.text(l.text, indent+1))
	}
	return list, true
}

// table reads a markdown table: a header row, a row of dashes, rows of
// cells; each row an object of the header's names. A row whose cells do
// not match the header's is not read.
func (r *lvReader) table(indent int) (any, bool) {
	var rows [][]string
	for r.i < len(r.lines) {
		l := r.lines[r.i]
		if l.blank || !strings.HasPrefix(l.text, "|") {
			break
		}
		rows = append(rows, cells(l.text))
		r.i++
	}
	if len(rows) < 2 || !separatorRow(rows[1]) {
		return nil, false
	}
	header := rows[0]
	r.tables++
	list := []any{}
	for _, row := range rows[2:] {
		if len(row) != len(header) {
			return nil, false
		}
		o := &object{}
		for k, name := range header {
			o.keys = append(o.keys, name)
			o.vals = append(o.vals, row[k])
		}
		list = append(list, o)
	}
	return list, true
}

// cells splits a table row at its unescaped bars.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var out []string
	var b strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			b.WriteByte('|')
			i++
		case row[i] == '|':
			out = append(out, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(row[i])
		}
	}
	return append(out, strings.TrimSpace(b.String()))
}

var separatorCellRE = regexp.MustCompile(`^:?-{3,}:?$`)

func separatorRow(row []string) bool {
	for _, c := range row {
		if !separatorCellRE.MatchString(c) {
			return false
		}
	}
	return len(row) > 0
}

// setPath sets key in o, a dotted key ("scores.impact") as a member of a
// nested object.
func setPath(o *object, key string, v any) {
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			parts = []string{key}
			break
		}
	}
	for _, p := range parts[:len(parts)-1] {
		var next *object
		if cur, ok := o.lookup(p); ok {
			next, _ = cur.(*object)
		}
		if next == nil {
			next = &object{}
			o.keys = append(o.keys, p)
			o.vals = append(o.vals, next)
		}
		o = next
	}
	o.keys = append(o.keys, parts[len(parts)-1])
	o.vals = append(o.vals, v)
}

// nonSpace counts the runes of s that are not white space.
func nonSpace(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}

// unquote reads a text wholly in double or single quotes as YAML does.
func unquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != s[len(s)-1] || (s[0] != '"' && s[0] != '\'') {
		return "", false
	}
	var n yaml.Node
	if err := yaml.Load([]byte("v: "+s), &n); err != nil || len(n.Content) != 1 || len(n.Content[0].Content) != 2 {
		return "", false
	}
	v := n.Content[0].Content[1]
	if v.Kind != yaml.ScalarNode || v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		return "", false
	}
	return v.Value, true
}
