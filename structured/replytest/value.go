package replytest

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/invopop/jsonschema"
	"pgregory.net/rapid"
)

// val is a JSON value as a model may write it: objects keep their members
// in order and under the names written, numbers and booleans may be
// written as text, lists as text. s is the schema the value was made
// for.
type val struct {
	kind  byte // 'o' object, 'a' list, 's' text, 'n' number, 'b' boolean, 'z' null
	keys  []string
	vals  []*val
	items []*val
	str   string
	num   float64
	b     bool
	s     *jsonschema.Schema
	// raw, when set, is written instead of the value (a number as text,
	// an enum value decorated, a list as bullet lines): a JSON string.
	raw *string
}

// generate makes a valid value of s.
func generate(t *rapid.T, s *jsonschema.Schema, label string) *val {
	if s == nil {
		return &val{kind: 's', str: "free", s: s}
	}
	if len(s.AnyOf) > 0 {
		for _, alt := range s.AnyOf {
			if alt.Type != "null" {
				return generate(t, alt, label)
			}
		}
	}
	switch s.Type {
	case "object":
		v := &val{kind: 'o', s: s}
		if s.Properties == nil {
			return v
		}
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			if !required(s, p.Key) && !rapid.Bool().Draw(t, label+"."+p.Key+"?") {
				continue
			}
			v.keys = append(v.keys, p.Key)
			v.vals = append(v.vals, generate(t, p.Value, label+"."+p.Key))
		}
		return v
	case "array":
		lo, hi := 0, 3
		if s.MinItems != nil {
			lo = int(*s.MinItems)
			hi = lo + 3
		}
		if s.MaxItems != nil && int(*s.MaxItems) < hi {
			hi = int(*s.MaxItems)
		}
		n := rapid.IntRange(lo, hi).Draw(t, label+"#")
		v := &val{kind: 'a', s: s, items: []*val{}}
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			it := generate(t, s.Items, label+"[]")
			if s.UniqueItems {
				k := render(it, style{})
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			v.items = append(v.items, it)
		}
		return v
	case "string":
		if len(s.Enum) > 0 {
			return &val{kind: 's', s: s, str: rapid.SampledFrom(s.Enum).Draw(t, label).(string)}
		}
		return &val{kind: 's', s: s, str: text(t, s, label)}
	case "integer":
		lo, hi := bounds(s, -1000, 100000)
		n := rapid.IntRange(int(math.Ceil(lo)), int(math.Floor(hi))).Draw(t, label)
		return &val{kind: 'n', s: s, num: float64(n)}
	case "number":
		lo, hi := bounds(s, -1000, 1000)
		// Numbers a model writes: tenths, or hundredths on a 0-1 scale.
		step := 10.0
		if hi <= 1 {
			step = 100
		}
		k := rapid.IntRange(int(math.Ceil(lo*step)), int(math.Floor(hi*step))).Draw(t, label)
		return &val{kind: 'n', s: s, num: float64(k) / step}
	case "boolean":
		return &val{kind: 'b', s: s, b: rapid.Bool().Draw(t, label)}
	}
	return &val{kind: 's', s: s, str: "any"}
}

func bounds(s *jsonschema.Schema, lo, hi float64) (float64, float64) {
	if f, err := s.Minimum.Float64(); err == nil && s.Minimum != "" {
		lo = f
	}
	if f, err := s.Maximum.Float64(); err == nil && s.Maximum != "" {
		hi = f
	}
	return lo, hi
}

// text makes a text of 1-6 words within s's lengths.
func text(t *rapid.T, s *jsonschema.Schema, label string) string {
	parts := rapid.SliceOfN(rapid.SampledFrom(vocabulary), 1, 6).Draw(t, label)
	out := join(parts)
	if s.MaxLength != nil && uint64(utf8.RuneCountInString(out)) > *s.MaxLength {
		out = strings.TrimSpace(string([]rune(out)[:*s.MaxLength]))
	}
	for s.MinLength != nil && uint64(utf8.RuneCountInString(out)) < *s.MinLength {
		out += " farm"
	}
	return out
}

func required(s *jsonschema.Schema, name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// walk calls fn on v and every value inside it, with whether it is
// inside a list item.
func walk(v *val, inList bool, fn func(v *val, inList bool)) {
	fn(v, inList)
	for _, c := range v.vals {
		walk(c, inList, fn)
	}
	for _, c := range v.items {
		walk(c, true, fn)
	}
}
