package openaitest

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/madspark/madspark/structured/replytest"
)

// The slips of a SmallModel that small models make beyond the shapes of
// JSON's values and syntax: numbers in list items with a unit or an
// ordinal, placeholders for texts, keys under other names, wrappers with
// status fields, unescaped quotes, drafts before the answer.

// eachOne applies f to one of the values of the reply, with its schema,
// that ok accepts, drawn; it reports whether there was one.
func (s *shaper) eachOne(ok func(x any, sc map[string]any) bool, f func(x any, sc map[string]any) any) bool {
	n := 0
	s.each(func(x any, sc map[string]any) (any, bool) {
		if ok(x, sc) {
			n++
		}
		return x, false
	})
	if n == 0 {
		return false
	}
	pick, i := s.rng.IntN(n), 0
	return s.each(func(x any, sc map[string]any) (any, bool) {
		if !ok(x, sc) {
			return x, false
		}
		i++
		if i-1 != pick {
			return x, false
		}
		return f(x, sc), true
	})
}

// itemNumber reports whether x is a number of a list item, for a number.
func (s *shaper) itemNumber(x any, sc map[string]any) bool {
	_, ok := x.(json.Number)
	return ok && s.inItem > 0 && s.isOnly(sc, "number", "integer")
}

// unitForm writes n, a value of sc, as a text holding it and no other
// number: with a unit, an ordinal, a sign or a leading point.
func (s *shaper) unitForm(n json.Number, sc map[string]any) any {
	x, err := n.Float64()
	if err != nil {
		return n
	}
	str := strconv.FormatFloat(x, 'f', -1, 64)
	forms := []string{str + " points"}
	if x == math.Trunc(x) && x >= 1 && x < 1e6 {
		forms = append(forms, "#"+str, replytest.Ordinal(int(x)), "No. "+str)
	}
	if x > 0 && x < 1 {
		forms = append(forms, strings.TrimPrefix(str, "0"))
	}
	if x > 0 {
		forms = append(forms, "+"+str)
	}
	if hi, ok := sc["maximum"].(float64); ok && hi > 0 && x >= 0 && x <= hi {
		if lo, ok := sc["minimum"].(float64); !ok || lo <= x {
			forms = append(forms, str+"/"+strconv.FormatFloat(hi, 'f', -1, 64))
		}
	}
	return forms[s.rng.IntN(len(forms))]
}

// requiredKeys returns the keys of x that its schema sc requires, sorted.
func (s *shaper) requiredKeys(x any, sc map[string]any) []string {
	o, ok := x.(map[string]any)
	if !ok {
		return nil
	}
	req, _ := sc["required"].([]any)
	var out []string
	for _, r := range req {
		if k, ok := r.(string); ok {
			if _, present := o[k]; present {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// placeholderKeys returns the keys of x whose values are required texts
// of sc, neither enum values nor placeholders already, that can be given
// a placeholder while another member of x keeps a value: x is not left
// an empty item.
func (s *shaper) placeholderKeys(x any, sc map[string]any) []string {
	o, ok := x.(map[string]any)
	if !ok {
		return nil
	}
	props, _ := sc["properties"].(map[string]any)
	valued := 0
	for _, v := range o {
		if t, ok := v.(string); v != nil && (!ok || !placeholder(t)) {
			valued++
		}
	}
	if valued < 2 {
		return nil
	}
	var out []string
	for _, k := range s.requiredKeys(x, sc) {
		ps, _ := props[k].(map[string]any)
		t, isText := o[k].(string)
		if ps == nil || !isText || placeholder(t) || !s.isOnly(ps, "string") || ps["enum"] != nil {
			continue
		}
		out = append(out, k)
	}
	return out
}

// placeholder reports whether t is a word for no value.
func placeholder(t string) bool {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "", "n/a", "na", "tbd", "-", "unknown", "none", "null", "nil":
		return true
	}
	return false
}

// statusFree reports whether the schema names none of the fields of
// ShapeStatusWrappers.
func (s *shaper) statusFree() bool {
	for _, w := range []string{"status", "data", "success", "code", "response"} {
		if s.names[w] {
			return false
		}
	}
	return true
}

// rawQuotable reports whether x holds a text in a list item (an item, or
// a text of an item's) that can be written with its double quotes
// unescaped.
func rawQuotable(x any, inList bool) bool {
	switch y := x.(type) {
	case string:
		_, ok := replytest.RawQuoted(y)
		return inList && ok
	case []any:
		for _, v := range y {
			if rawQuotable(v, true) {
				return true
			}
		}
	case map[string]any:
		for _, v := range y {
			if rawQuotable(v, inList) {
				return true
			}
		}
	}
	return false
}

// redraft makes d, a copy of the reply's value, a draft of it: each text
// that is no enum value begins with "Draft: ", each number moves by one
// within its bounds. It reports whether anything changed.
func (s *shaper) redraft(d any) bool {
	saved, cut, in := s.v, s.cut, s.inItem
	s.v, s.cut = d, false
	changed := s.each(func(x any, sc map[string]any) (any, bool) {
		switch y := x.(type) {
		case string:
			if s.isOnly(sc, "string") && sc["enum"] == nil && !placeholder(y) {
				return "Draft: " + y, true
			}
		case json.Number:
			f, err := y.Float64()
			if err != nil || !s.isOnly(sc, "number", "integer") {
				return x, false
			}
			hi, hasHi := sc["maximum"].(float64)
			lo, hasLo := sc["minimum"].(float64)
			switch {
			case !hasHi || f+1 <= hi:
				f++
			case !hasLo || f-1 >= lo:
				f--
			default:
				return x, false
			}
			return json.Number(strconv.FormatFloat(f, 'f', -1, 64)), true
		}
		return x, false
	})
	s.v, s.cut, s.inItem = saved, cut, in
	return changed
}

// positive reports whether x is a number above zero: one that JSON5
// writes another way.
func positive(x any) bool {
	n, ok := x.(json.Number)
	if !ok {
		return false
	}
	f, err := n.Float64()
	return err == nil && f > 0
}

// copyValue copies a decoded JSON value.
func copyValue(x any) any {
	switch y := x.(type) {
	case map[string]any:
		out := make(map[string]any, len(y))
		for k, v := range y {
			out[k] = copyValue(v)
		}
		return out
	case []any:
		out := make([]any, len(y))
		for i, v := range y {
			out[i] = copyValue(v)
		}
		return out
	}
	return x
}
