package replytest

import (
	"encoding/json"
	"sort"
)

// Write writes x, a JSON value as encoding/json decodes it into an any
// (numbers as float64 or json.Number, objects with their keys in sorted
// order), in format: FormatYAML, FormatLabelValue or FormatTable (label-
// value text with a list of objects as a markdown table, or a list of
// objects alone as one). ok is false when the format cannot write x so
// that it reads back as x (a text over two lines, a text that reads as a
// list line, a label or YAML's marks, a list of lists as label-value
// text; no list of objects for a table), and for any other format.
func Write(x any, format string) (text string, ok bool) {
	v, ok := fromJSON(x)
	if !ok {
		return "", false
	}
	switch format {
	case FormatYAML:
		return renderYAML(v)
	case FormatLabelValue, FormatTable:
		return renderLabels(v, func(k string) string { return k }, format == FormatTable)
	}
	return "", false
}

// JSON5Number writes f in a JSON5 form where it has one: a whole number
// of 10 or more in hexadecimal, a fraction between 0 and 1 with a leading
// point, any other positive number with a leading +; other numbers as
// JSON writes them.
func JSON5Number(f float64) string {
	return style{json5: true}.number(f)
}

// RawQuoted writes s between double quotes with its own double quotes
// left unescaped, as models write them, where a reader can tell them
// from the closing one; ok is false where it cannot, and for a text
// without double quotes.
func RawQuoted(s string) (string, bool) {
	if !unescapable(s) {
		return "", false
	}
	return `"` + s + `"`, true
}

// fromJSON makes a val of x.
func fromJSON(x any) (*val, bool) {
	switch y := x.(type) {
	case nil:
		return &val{kind: 'z'}, true
	case bool:
		return &val{kind: 'b', b: y}, true
	case string:
		return &val{kind: 's', str: y}, true
	case float64:
		return &val{kind: 'n', num: y}, true
	case json.Number:
		f, err := y.Float64()
		if err != nil || f != f {
			return nil, false
		}
		return &val{kind: 'n', num: f}, true
	case []any:
		v := &val{kind: 'a', items: []*val{}}
		for _, it := range y {
			c, ok := fromJSON(it)
			if !ok {
				return nil, false
			}
			v.items = append(v.items, c)
		}
		return v, true
	case map[string]any:
		keys := make([]string, 0, len(y))
		for k := range y {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		v := &val{kind: 'o'}
		for _, k := range keys {
			c, ok := fromJSON(y[k])
			if !ok {
				return nil, false
			}
			v.keys = append(v.keys, k)
			v.vals = append(v.vals, c)
		}
		return v, true
	}
	return nil, false
}
