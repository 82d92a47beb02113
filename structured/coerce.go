package structured

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/invopop/jsonschema"
)

// normalizer applies the generic soft rules of a schema to a decoded JSON
// value (from encoding/json with UseNumber): it coerces values whose type
// is wrong but whose meaning is plain ("7" for 7, "Approve" or a synonym
// for "approve", one string for a list of strings), clamps numbers into
// their range, drops the items beyond a list's maximum and fills a missing
// or null list with an empty one. What it changes it records as fixes; what
// only the model can supply (a list shorter than its minimum, an empty
// required text) it records as asks. What it cannot make sense of it leaves
// alone, for the hard schema check to report.
type normalizer struct {
	synonyms map[string]string
	fixes    []fixed
	asks     []fixed
}

func (n *normalizer) fix(rule, path, format string, args ...any) {
	n.fixes = append(n.fixes, fixed{rule: rule, action: at(path) + fmt.Sprintf(format, args...)})
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// value normalises v against s at path and returns the result.
func (n *normalizer) value(s *jsonschema.Schema, v any, path string) any {
	if s == nil {
		return v
	}
	switch s.Type {
	case "object":
		return n.object(s, v, path)
	case "array":
		return n.array(s, v, path)
	case "string":
		return n.str(s, v, path)
	case "number", "integer":
		return n.number(s, v, path)
	case "boolean":
		return n.boolean(v, path)
	}
	return v
}

func (n *normalizer) object(s *jsonschema.Schema, v any, path string) any {
	if str, ok := v.(string); ok {
		// An object sent as a string of JSON.
		var inner any
		d := json.NewDecoder(strings.NewReader(str))
		d.UseNumber()
		if d.Decode(&inner) == nil {
			if m, ok := inner.(map[string]any); ok {
				n.fix("type", path, "object sent as a string, decoded")
				v = m
			}
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if s.Properties == nil {
		if s.AdditionalProperties != nil {
			for k, pv := range m {
				m[k] = n.value(s.AdditionalProperties, pv, path+"/"+k)
			}
		}
		return m
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		name, ps := pair.Key, pair.Value
		pv, present := m[name]
		if !present || pv == nil {
			if ps != nil && ps.Type == "array" {
				// A list left out or null is an empty list.
				m[name] = []any{}
				if required(s, name) {
					n.fix("missing", path+"/"+name, "missing list → empty")
				}
				continue
			}
			if present {
				// null for a value that is not a list: absent.
				delete(m, name)
			}
			continue
		}
		m[name] = n.value(ps, pv, path+"/"+name)
	}
	return m
}

func required(s *jsonschema.Schema, name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

func (n *normalizer) array(s *jsonschema.Schema, v any, path string) any {
	list, ok := v.([]any)
	if !ok {
		switch v.(type) {
		case nil:
			list = []any{}
		case string, map[string]any, json.Number, bool:
			if str, isStr := v.(string); isStr && strings.TrimSpace(str) == "" {
				list = []any{}
				n.fix("type", path, "empty text for a list → empty list")
				break
			}
			list = []any{v}
			n.fix("type", path, "one value for a list → list of one")
		default:
			return v
		}
	}
	for i := range list {
		list[i] = n.value(s.Items, list[i], fmt.Sprintf("%s/%d", path, i))
	}
	if s.MaxItems != nil && uint64(len(list)) > *s.MaxItems {
		n.fix("count", path, "%d items → the first %d", len(list), *s.MaxItems)
		list = list[:*s.MaxItems]
	}
	if s.MinItems != nil && uint64(len(list)) < *s.MinItems {
		n.asks = append(n.asks, fixed{rule: "count", action: fmt.Sprintf("%s has %d items; at least %d are required", pathName(path), len(list), *s.MinItems)})
	}
	return list
}

func (n *normalizer) str(s *jsonschema.Schema, v any, path string) any {
	var str string
	switch x := v.(type) {
	case string:
		str = x
	case json.Number:
		str = x.String()
		n.fix("type", path, "number %s → text", str)
	case bool:
		str = strconv.FormatBool(x)
		n.fix("type", path, "%t → text", x)
	default:
		return v
	}
	if len(s.Enum) > 0 {
		str = n.enum(s, str, path)
	}
	if s.MaxLength != nil && uint64(utf8.RuneCountInString(str)) > *s.MaxLength {
		cut := truncateRunes(str, int(*s.MaxLength))
		n.fix("length", path, "%d characters → %d", utf8.RuneCountInString(str), utf8.RuneCountInString(cut))
		str = cut
	}
	if s.MinLength != nil && uint64(utf8.RuneCountInString(strings.TrimSpace(str))) < *s.MinLength {
		if strings.TrimSpace(str) == "" {
			n.asks = append(n.asks, fixed{rule: "length", action: pathName(path) + " is empty"})
		} else {
			n.asks = append(n.asks, fixed{rule: "length", action: fmt.Sprintf("%s is shorter than %d characters", pathName(path), *s.MinLength)})
		}
	}
	return str
}

// enum maps str onto one of s's values: exactly, then ignoring case,
// spaces, hyphens and underscores, then through the spec's synonyms.
func (n *normalizer) enum(s *jsonschema.Schema, str, path string) string {
	var values []string
	for _, e := range s.Enum {
		if es, ok := e.(string); ok {
			if es == str {
				return str
			}
			values = append(values, es)
		}
	}
	key := enumKey(str)
	for _, es := range values {
		if enumKey(es) == key {
			n.fix("enum", path, "%q → %q", str, es)
			return es
		}
	}
	for from, to := range n.synonyms {
		if enumKey(from) != key {
			continue
		}
		for _, es := range values {
			if es == to {
				n.fix("enum", path, "%q → %q", str, es)
				return es
			}
		}
	}
	return str
}

func enumKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer(" ", "", "-", "", "_", "", ".", "").Replace(s)
}

func (n *normalizer) number(s *jsonschema.Schema, v any, path string) any {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return v
		}
	case string:
		g, ok := parseNumber(x)
		if !ok {
			return v
		}
		n.fix("type", path, "text %q → number", x)
		f = g
	default:
		return v
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return v
	}
	if s.Type == "integer" && f != math.Trunc(f) {
		r := math.Round(f)
		n.fix("type", path, "%s → %s", fmtNum(f), fmtNum(r))
		f = r
	}
	if s.Minimum != "" {
		if lo, err := s.Minimum.Float64(); err == nil && f < lo {
			n.fix("range", path, "%s → %s (the minimum)", fmtNum(f), fmtNum(lo))
			f = lo
		}
	}
	if s.Maximum != "" {
		if hi, err := s.Maximum.Float64(); err == nil && f > hi {
			n.fix("range", path, "%s → %s (the maximum)", fmtNum(f), fmtNum(hi))
			f = hi
		}
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// parseNumber reads a number a model wrote as text: "7", " 7.5 ", "7/10",
// "80%" (as 80).
func parseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, "%")
	if i := strings.Index(s, "/"); i > 0 {
		s = strings.TrimSpace(s[:i])
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func (n *normalizer) boolean(v any, path string) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes":
		n.fix("type", path, "text %q → true", s)
		return true
	case "false", "no":
		n.fix("type", path, "text %q → false", s)
		return false
	}
	return v
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// pathName turns a JSON pointer into words for a message: "/ideas" →
// "ideas", "" → "the reply".
func pathName(path string) string {
	if path == "" {
		return "the reply"
	}
	return strings.TrimPrefix(path, "/")
}

// truncateRunes cuts s to at most n runes, at a word boundary when one is
// near.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	cut := string(r)
	if i := strings.LastIndexAny(cut, " \n\t"); i > len(cut)*3/4 {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut)
}

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
