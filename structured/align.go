package structured

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// fixed is one thing done to a reply to read it (a repair), or one thing
// wrong with it (a problem): the rule, where (a JSON pointer into the
// value, "" for the whole reply) and what, in a few words. An ask (a
// problem only the model can fix) says in then what is done when a reply
// still has it.
type fixed struct {
	rule, path, action, then string
	// drop counts the values of the reply that the repair set aside.
	drop int
}

// aligned is a reply's value read against a node.
type aligned struct {
	// v is the value, as encoding/json decodes JSON into an any.
	v any
	// absent: the reply holds no value here (null, nothing, "n/a").
	absent bool
	// fixes are the alignments made; asks the soft problems only the
	// model can fix (a list too short, an empty text); hard the problems
	// that leave no value of the schema.
	fixes, asks, hard []fixed
}

// worse reports whether r is a worse reading than o: more hard problems,
// then more asks, then more of the reply set aside, then more
// alignments.
func (r *aligned) worse(o *aligned) bool {
	if len(r.hard) != len(o.hard) {
		return len(r.hard) > len(o.hard)
	}
	if len(r.asks) != len(o.asks) {
		return len(r.asks) > len(o.asks)
	}
	if a, b := drops(r.fixes), drops(o.fixes); a != b {
		return a > b
	}
	return len(r.fixes) > len(o.fixes)
}

func drops(fixes []fixed) int {
	n := 0
	for _, f := range fixes {
		n += f.drop
	}
	return n
}

// values counts v and the values inside it.
func values(v any) int {
	n := 1
	switch x := v.(type) {
	case *object:
		for _, e := range x.vals {
			n += values(e)
		}
	case []any:
		for _, e := range x {
			n += values(e)
		}
	}
	return n
}

func (r *aligned) clean() bool {
	return len(r.hard) == 0 && len(r.asks) == 0 && len(r.fixes) == 0
}

// absorb adds the findings of a part of r's value.
func (r *aligned) absorb(part *aligned) {
	r.fixes = append(r.fixes, part.fixes...)
	r.asks = append(r.asks, part.asks...)
	r.hard = append(r.hard, part.hard...)
}

func (r *aligned) fix(rule, path, format string, args ...any) {
	r.fixes = append(r.fixes, fixed{rule: rule, path: path, action: fmt.Sprintf(format, args...)})
}

// dropped records a repair that set v, part of the reply, aside.
func (r *aligned) dropped(v any, rule, path, format string, args ...any) {
	// values walks v once: the caller has spent its fuel on v already.
	r.fixes = append(r.fixes, fixed{rule: rule, path: path, action: fmt.Sprintf(format, args...), drop: values(v)})
}

func (r *aligned) problem(rule, path, format string, args ...any) {
	r.hard = append(r.hard, fixed{rule: rule, path: path, action: fmt.Sprintf(format, args...)})
}

// ask reports a problem only the model can fix; then is what is done if
// the reply keeps it ("" for keeping the value as sent).
func (r *aligned) ask(rule, path, then, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if then == "" {
		then = "kept as sent: " + msg
	}
	r.asks = append(r.asks, fixed{rule: rule, path: path, action: msg, then: then})
}

// soften adds the hard problems of a part of r that can be left out
// (an optional member, an item of a list) as asks: the part is left out
// if the reply keeps them.
func (r *aligned) soften(part *aligned, what string) {
	r.fixes = append(r.fixes, part.fixes...)
	r.asks = append(r.asks, part.asks...)
	for _, h := range part.hard {
		r.asks = append(r.asks, fixed{rule: h.rule, path: h.path, action: h.action, then: what + " left out: " + h.action})
	}
}

// aligner reads decoded replies against a schema: it walks the value and
// the schema together and brings the value into the schema's shape where
// the reply plainly means it, recording each alignment. Where several
// readings are possible (the value as it is, or inside a wrapper), the one
// with the fewest problems and then the fewest alignments wins; ties go to
// the value as it is, then to the readings in the order align tries them.
type aligner struct {
	synonyms map[string]string
	// names are the schema's property names, normalised: a key among
	// them names content, never a wrapper.
	names map[string]bool
	// fuel is the work left for reading one reply (see withFuel); nil
	// for no bound.
	fuel *int
}

// withFuel returns a copy of al that reads one reply of n bytes with a
// bound on its work in proportion to n, so that however a value nests or
// can be read several ways, reading it stays linear in its length.
func (al *aligner) withFuel(n int) *aligner {
	cp := *al
	f := 16*n + 1<<14
	cp.fuel = &f
	return &cp
}

// burn spends k of the fuel and reports whether any was left.
func (al *aligner) burn(k int) bool {
	if al.fuel == nil {
		return true
	}
	*al.fuel -= k
	return *al.fuel >= 0
}

// newAligner returns the aligner of the schema n.
func newAligner(n *node, synonyms map[string]string) *aligner {
	al := &aligner{synonyms: synonyms, names: map[string]bool{}}
	seen := map[*node]bool{}
	var visit func(n *node)
	visit = func(n *node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		for _, p := range n.props {
			al.names[p.key] = true
			visit(p.n)
		}
		visit(n.items)
		visit(n.extra)
		for _, a := range n.anyOf {
			visit(a)
		}
	}
	visit(n)
	return al
}

// align reads v against n at path.
func (al *aligner) align(n *node, v any, path string) aligned {
	if !al.burn(1) {
		var r aligned
		r.problem("size", path, "the reply is too large or too deeply nested to read")
		return r
	}
	best := al.direct(n, v, path)
	if best.clean() || v == nil {
		return best
	}
	alts := al.alternatives(n, v, path)
	reads := make([]aligned, len(alts))
	for i, alt := range alts {
		reads[i] = al.align(n, alt.v, path)
		reads[i].fixes = append([]fixed{alt.why}, reads[i].fixes...)
		if j := i - 1; alt.rival && whole(&reads[i], alt) && whole(&reads[j], alts[j]) && !reflect.DeepEqual(reads[i].v, reads[j].v) {
			// Two readings of the same text, each a whole value, that
			// differ: the text does not say which it means.
			for _, k := range []int{i, j} {
				reads[k].problem("shape", path, "%s, or %s: the reply does not say which", alts[j].why.action, alt.why.action)
			}
		}
	}
	for i := range reads {
		if best.worse(&reads[i]) {
			best = reads[i]
		}
	}
	return best
}

// whole reports whether r, the reading of alt, is a whole value of the
// reply: no problem, nothing to ask, nothing set aside but what alt
// itself sets aside.
func whole(r *aligned, alt alternative) bool {
	return len(r.hard) == 0 && len(r.asks) == 0 && !r.absent && drops(r.fixes) == alt.why.drop
}

// alternative is another way to read a value: what it becomes and why.
type alternative struct {
	v   any
	why fixed
	// rival: the alternative reads the same text as the one before it
	// does, another way; where both give a whole value and the values
	// differ, neither is taken.
	rival bool
}

// alternatives returns the other ways v may be meant for n: the value inside
// a one-key wrapper or a one-item list, a bare list for an object whose
// only list it is, a value sent as a string of JSON.
func (al *aligner) alternatives(n *node, v any, path string) []alternative {
	var out []alternative
	switch x := v.(type) {
	case *object:
		if al.oneKeyWrapper(n, x) {
			// The wrapper's key is set aside: a reading that keeps every
			// key ranks above it.
			out = append(out, alternative{v: x.vals[0], why: fixed{rule: "shape", path: path, drop: 1, action: fmt.Sprintf("the value inside the wrapper {%q: …} taken", x.keys[0])}})
			if p := n.soleOf(jsonType(x.vals[0])); p != nil && values(x.vals[0]) > 1 && !al.namesLike(x.keys[0]) {
				// Or the one field of that kind, under another name (an
				// empty object or list states nothing either way).
				out = append(out, alternative{v: &object{keys: []string{p.name}, vals: []any{x.vals[0]}}, rival: true,
					why: fixed{rule: "key", path: path + "/" + escape(p.name), action: fmt.Sprintf("key %q → %q, the only field of its kind", x.keys[0], p.name)}})
			}
		} else if i, status, ok := al.statusWrapper(n, x); ok {
			out = append(out, alternative{v: x.vals[i], why: fixed{rule: "shape", path: path, drop: len(status),
				action: fmt.Sprintf("the value inside the wrapper {%q: …} taken, its status fields set aside: %s", x.keys[i], strings.Join(status, ", "))}})
		}
	case []any:
		if len(x) == 1 && !n.allows("array") {
			out = append(out, alternative{v: x[0], why: fixed{rule: "shape", path: path, action: "the value inside a list of one taken"}})
		}
		if n.is("object") {
			if p := n.soleList(); p != nil {
				out = append(out, alternative{v: &object{keys: []string{p.name}, vals: []any{x}}, why: fixed{rule: "shape", path: path, action: fmt.Sprintf("a bare list taken as %q", p.name)}})
			}
		}
	case string:
		if (n.is("object") || n.is("array")) && !n.allows("string") {
			t := strings.TrimSpace(x)
			if t != "" && (t[0] == '{' || t[0] == '[') {
				if c := readSpan(t, 0); c.err == nil && !c.truncated && c.end == len(t) {
					out = append(out, alternative{v: c.v, why: fixed{rule: "type", path: path, action: "a value sent as a string of JSON decoded"}})
				}
			}
		}
	}
	return out
}

// oneKeyWrapper reports whether o may be a wrapper around one value
// ({"result": …}): its one key is no name of the schema, nor one of n's
// fields under another name whose type its value has ({"the_title":
// {…}} for an object "title") or whose value it can be ({"the_reasons":
// "[1]"} gives "reasons").
func (al *aligner) oneKeyWrapper(n *node, o *object) bool {
	if len(o.keys) != 1 || o.vals[0] == nil || n.declares(o.keys[0]) || al.names[keyOf(o.keys[0])] {
		return false
	}
	for _, p := range n.props {
		if related(keyOf(o.keys[0]), p.key) {
			if p.n.allows(jsonType(o.vals[0])) {
				// The field under another name, its value of the field's
				// type however it reads: never a wrapper.
				return false
			}
			if m := al.align(p.n, o.vals[0], ""); len(m.hard) == 0 && !m.absent {
				return false
			}
		}
	}
	return true
}

// namesLike reports whether key is related to a name of the schema
// ("the_pitch" to "pitch"): it may be that field, wherever it is.
func (al *aligner) namesLike(key string) bool {
	k := keyOf(key)
	for name := range al.names {
		if related(k, name) {
			return true
		}
	}
	return false
}

// holdsName reports whether key holds a name of the schema and more
// ("the_title" holds "title"; "success" does not hold "success_metrics").
func (al *aligner) holdsName(key string) bool {
	k := keyOf(key)
	for name := range al.names {
		if len(k) > len(name) && related(k, name) {
			return true
		}
	}
	return false
}

// container reports whether v is an object or a list.
func container(v any) bool {
	switch v.(type) {
	case *object, []any:
		return true
	}
	return false
}

// statusWrapper reports whether o is a wrapper around one value with
// status fields beside it ({"status": "ok", "data": {…}}): none of its
// keys is a name of the schema or holds one, one value is an object or a list, the
// others are texts, numbers, booleans or null. It returns the index of
// the value and the keys of the status fields.
func (al *aligner) statusWrapper(n *node, o *object) (int, []string, bool) {
	at := -1
	var status []string
	for i, k := range o.keys {
		if n.declares(k) || al.names[keyOf(k)] || al.holdsName(k) {
			// A key that names a field of the schema, or holds its name
			// ("the_title"): content, not a wrapper's status.
			return 0, nil, false
		}
		switch o.vals[i].(type) {
		case *object, []any:
			if at >= 0 {
				return 0, nil, false
			}
			at = i
		default:
			status = append(status, k)
		}
	}
	return at, status, at >= 0 && len(status) > 0
}

// declares reports whether key names one of n's properties, as it is or
// normalised.
func (n *node) declares(key string) bool {
	k := keyOf(key)
	for _, p := range n.props {
		if p.name == key || p.key == k {
			return true
		}
	}
	return false
}

// direct reads v as it is against n.
func (al *aligner) direct(n *node, v any, path string) aligned {
	if len(n.anyOf) > 0 {
		var best *aligned
		for _, alt := range n.anyOf {
			r := al.align(alt, v, path)
			if best == nil || best.worse(&r) {
				best = &r
			}
		}
		return *best
	}
	if v == nil {
		if n.allows("null") && len(n.types) > 0 {
			return aligned{v: nil}
		}
		return aligned{absent: true}
	}
	if s, ok := v.(string); ok && noValue(s) && !n.enumHolds(s) {
		// A placeholder is no value, for a text as for a number.
		r := aligned{absent: true}
		if strings.TrimSpace(s) != "" {
			r.fix("type", path, "text %q read as no value", s)
		}
		return r
	}
	if x, ok := v.(nonFinite); ok {
		var r aligned
		r.problem("type", path, "%s is not a finite number", string(x))
		return r
	}
	var r aligned
	switch t := jsonType(v); {
	case len(n.types) == 0:
		r = untyped(v, path)
	case n.allows(t):
		r = al.as(n, t, v, path)
	default:
		// Coerce to the first of n's types that reads the value best.
		var best *aligned
		for _, want := range n.types {
			if want == "null" {
				continue
			}
			c := al.as(n, want, v, path)
			if best == nil || best.worse(&c) {
				best = &c
			}
		}
		if best == nil {
			r.problem("type", path, "want null, got %s", jsonKind(v))
			return r
		}
		r = *best
	}
	if len(n.enum) > 0 && len(r.hard) == 0 && !r.absent {
		al.checkEnum(n, &r, path)
	}
	return r
}

// as reads v as JSON type t of n.
func (al *aligner) as(n *node, t string, v any, path string) aligned {
	switch t {
	case "object":
		return al.object(n, v, path)
	case "array":
		return al.array(n, v, path)
	case "string":
		return al.str(n, v, path)
	case "number", "integer":
		return al.number(n, t == "integer" || n.is("integer"), v, path)
	case "boolean":
		return al.boolean(v, path)
	case "null":
		var r aligned
		r.problem("type", path, "want null, got %s", jsonKind(v))
		return r
	}
	return aligned{v: plain(v)}
}

func (al *aligner) object(n *node, v any, path string) aligned {
	var r aligned
	o, ok := v.(*object)
	if !ok {
		r.problem("type", path, "want an object, got %s", jsonKind(v))
		return r
	}
	al.burn(len(o.keys))
	src := al.matchKeys(n, o, path, &r)
	out := make(map[string]any, len(n.props))
	for _, p := range n.props {
		at := path + "/" + escape(p.name)
		var m aligned
		if i, ok := src[p]; ok {
			m = al.align(p.n, o.vals[i], at)
			if len(m.hard) > 0 && !n.required[p.name] {
				// An optional member the reply gives but unreadably:
				// asked again, then left out.
				r.soften(&m, fmt.Sprintf("%q", p.name))
				continue
			}
			r.absorb(&m)
		} else {
			m.absent = true
		}
		switch {
		case len(m.hard) > 0:
			// The member is there but unreadable: its problem says so.
		case !m.absent:
			out[p.name] = m.v
		case n.required[p.name] && p.n.allows("null") && len(p.n.types) > 0 && !src.unmatched(len(o.keys)):
			out[p.name] = nil
			r.fix("missing", at, "not given: null")
		case n.required[p.name]:
			r.problem("missing", at, "%q is missing", p.name)
		}
	}
	for i, k := range o.keys {
		if src.used(i) {
			continue
		}
		if !n.extraOK {
			r.dropped(o.vals[i], "extra", path+"/"+escape(k), "field %q dropped: the schema has no such field", k)
			continue
		}
		if n.extra != nil {
			m := al.align(n.extra, o.vals[i], path+"/"+escape(k))
			r.absorb(&m)
			if !m.absent {
				out[k] = m.v
			}
			continue
		}
		m := untyped(o.vals[i], path+"/"+escape(k))
		r.absorb(&m)
		out[k] = m.v
	}
	r.v = out
	return r
}

// untyped reads v for a schema that allows any value: as it is, unless it
// holds a number that is not finite, which JSON cannot carry.
func untyped(v any, path string) aligned {
	var r aligned
	bad := ""
	var visit func(x any)
	visit = func(x any) {
		switch y := x.(type) {
		case nonFinite:
			bad = string(y)
		case *object:
			for _, e := range y.vals {
				visit(e)
			}
		case []any:
			for _, e := range y {
				visit(e)
			}
		}
	}
	visit(v)
	if bad != "" {
		r.problem("type", path, "%s is not a finite number", bad)
		return r
	}
	r.v = plain(v)
	return r
}

// sources maps each property of a node to the member of a reply's object
// that gives it.
type sources map[*prop]int

// unmatched reports whether some of an object's n members give no
// property: a field the reply may have filled under another name.
func (s sources) unmatched(n int) bool {
	return len(s) < n
}

func (s sources) used(i int) bool {
	for _, j := range s {
		if j == i {
			return true
		}
	}
	return false
}

// matchKeys finds, for each of n's properties, the member of o that gives
// it: the member of that name (the last if twice); else the one whose
// name is the same in another case or style; else the one whose name
// holds the property's or is held by it, when that pairing is the only
// one either way; else, for a list or an object still missing, the one
// member of that kind left, when it is the only one and so is the
// property, and the like (unless o may be a wrapper, which the alignment
// takes off instead). Each match other than by name is recorded in r.
func (al *aligner) matchKeys(n *node, o *object, path string, r *aligned) sources {
	src := sources{}
	taken := make([]bool, len(o.keys))
	take := func(p *prop, i int) {
		if prev, ok := src[p]; ok {
			r.dropped(o.vals[prev], "key", path+"/"+escape(o.keys[prev]), "a second %q found: the last one kept", p.name)
		}
		src[p] = i
		taken[i] = true
	}
	for i, k := range o.keys {
		if p := n.prop(k); p != nil {
			take(p, i)
		}
	}
	for i, k := range o.keys {
		if taken[i] {
			continue
		}
		kk := keyOf(k)
		for _, p := range n.props {
			if p.key == kk && kk != "" {
				if _, ok := src[p]; ok {
					r.dropped(o.vals[i], "key", path+"/"+escape(k), "field %q dropped: %q was given already", k, p.name)
					taken[i] = true
					break
				}
				take(p, i)
				r.fix("key", path+"/"+escape(p.name), "key %q → %q", k, p.name)
				break
			}
		}
	}
	missing := func() []*prop {
		var out []*prop
		for _, p := range n.props {
			if _, ok := src[p]; !ok {
				out = append(out, p)
			}
		}
		return out
	}
	free := func() []int {
		var out []int
		for i := range o.keys {
			if !taken[i] {
				out = append(out, i)
			}
		}
		return out
	}
	// fits reports whether the value of member i reads as p's type.
	fits := func(p *prop, i int) bool {
		m := al.align(p.n, o.vals[i], "")
		return len(m.hard) == 0 && !m.absent
	}
	// same reports whether the value of member i is of a JSON type p
	// takes as it is, and reads as p's type.
	same := func(p *prop, i int) bool {
		// A name of a few words, not a sentence written as a label.
		return len(words(o.keys[i])) <= 4 && nameRE.MatchString(o.keys[i]) && o.vals[i] != nil && p.n.allows(jsonType(o.vals[i])) && fits(p, i)
	}
	if _, _, ok := al.statusWrapper(n, o); ok {
		// A wrapper with status fields ({"status": "ok", "data": {…}}):
		// its keys are no fields of n's, however few are left; the
		// alignment reads inside it instead.
		return src
	}
	for _, i := range free() {
		if al.names[keyOf(o.keys[i])] {
			// A member named as a field elsewhere in the schema: o may be
			// a value of another place ({"title": …, "key_points": []}
			// an item sent for the object holding its list); no key is
			// mapped by meaning.
			return src
		}
	}
	// Names that hold one another, paired one to one.
	for _, p := range missing() {
		var hits []int
		for _, i := range free() {
			if related(keyOf(o.keys[i]), p.key) && fits(p, i) {
				hits = append(hits, i)
			}
		}
		if len(hits) != 1 {
			continue
		}
		i := hits[0]
		others := 0
		for _, q := range missing() {
			if q != p && related(keyOf(o.keys[i]), q.key) {
				others++
			}
		}
		if others == 0 {
			take(p, i)
			r.fix("key", path+"/"+escape(p.name), "key %q → %q", o.keys[i], p.name)
		}
	}
	if al.oneKeyWrapper(n, o) && container(o.vals[0]) {
		// A wrapper ({"result": {…}}) as much as a field under another
		// name: the alignment reads inside it too.
		return src
	}
	// A list or an object left under a name of its own.
	for _, kind := range []string{"array", "object"} {
		var props []*prop
		for _, p := range missing() {
			if p.n.is(kind) {
				props = append(props, p)
			}
		}
		var keys []int
		for _, i := range free() {
			if jsonType(o.vals[i]) == kind {
				keys = append(keys, i)
			}
		}
		// The one member left: beside members that are no fields, it
		// may be a field of theirs ({"score": 7, "suggestions": []} is an
		// item sent for its list, not the list).
		if len(props) == 1 && len(keys) == 1 && len(free()) == 1 {
			take(props[0], keys[0])
			r.fix("key", path+"/"+escape(props[0].name), "the only %s left, under %q, taken as %q", map[string]string{"array": "list", "object": "object"}[kind], o.keys[keys[0]], props[0].name)
		}
	}
	// A required field missing and one member left whose name the
	// field's description holds, or, failing that, the one member left
	// of a type the field takes, when it is the only field it could be.
	var req []*prop
	for _, p := range missing() {
		if n.required[p.name] {
			req = append(req, p)
		}
	}
	if left := free(); len(req) > 0 && len(left) > 0 {
		for _, p := range req {
			var hits []int
			for _, i := range left {
				if !taken[i] && describes(p.n.description, o.keys[i]) && same(p, i) {
					hits = append(hits, i)
				}
			}
			if len(hits) == 1 {
				take(p, hits[0])
				r.fix("key", path+"/"+escape(p.name), "key %q → %q, as the field's description says", o.keys[hits[0]], p.name)
			}
		}
	}
	if req, left := missing(), free(); len(left) == 1 {
		var fit []*prop
		for _, p := range req {
			if n.required[p.name] && same(p, left[0]) {
				fit = append(fit, p)
			}
		}
		if len(fit) == 1 {
			others := 0
			for _, p := range req {
				if !n.required[p.name] && same(p, left[0]) {
					others++
				}
			}
			if others == 0 {
				take(fit[0], left[0])
				r.fix("key", path+"/"+escape(fit[0].name), "key %q → %q, the only field left that it can be", o.keys[left[0]], fit[0].name)
			}
		}
	}
	return src
}

// nameRE is a key that is a name: words of letters and digits.
var nameRE = regexp.MustCompile(`^\p{L}[\p{L}\p{N} _-]*$`)

// describes reports whether a field's description names key: every word
// of the key is a word of the description.
func describes(description, key string) bool {
	kw := words(key)
	if description == "" || len(kw) == 0 {
		return false
	}
	dw := map[string]bool{}
	for _, w := range words(description) {
		dw[w] = true
	}
	for _, w := range kw {
		if !dw[w] || len(w) < 3 {
			return false
		}
	}
	return true
}

func (al *aligner) array(n *node, v any, path string) aligned {
	var r aligned
	var list []any
	switch x := v.(type) {
	case []any:
		list = x
	case string:
		t := strings.TrimSpace(x)
		if l, ok := listInText(t, n.items == nil || n.items.allows("string")); ok {
			list = l
			r.fix("type", path, "a list written as a text read")
			break
		} else if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			// "[a, b]": a list, or one text? Not said plainly.
			r.problem("type", path, "%q is not a list that can be read", clip(t))
			return r
		}
		switch items, heading, ok := splitBullets(x); {
		case strings.TrimSpace(x) == "":
			list = []any{}
			r.fix("type", path, "empty text for a list → empty list")
		case ok && (n.items == nil || n.items.allows("string")):
			for _, it := range items {
				list = append(list, it)
			}
			r.fix("split", path, "a text of %d list lines → %d items", len(items), len(items))
			if heading != "" {
				r.fix("split", path, "heading %q above the list dropped", heading)
			}
		default:
			list = []any{x}
			r.fix("type", path, "one text for a list → a list of one")
		}
	case *object:
		if items, ok := numbered(x); ok {
			list = items
			r.fix("shape", path, "an object of numbered keys → a list of %d", len(items))
			break
		}
		list = []any{x}
		r.fix("type", path, "one object for a list → a list of one")
	default:
		list = []any{x}
		r.fix("type", path, "one value for a list → a list of one")
	}
	out := make([]any, 0, len(list))
	for i, e := range list {
		at := path + "/" + strconv.Itoa(i)
		var m aligned
		switch {
		case n.items == nil:
			m = untyped(e, at)
		case al.emptyObject(n.items, e):
			// {"title": "", "description": "N/A"}: an empty item.
			m = aligned{absent: true}
		default:
			m = al.align(n.items, e, at)
		}
		switch {
		case len(m.hard) > 0:
			// An item the reply gives but unreadably: never left out,
			// so that the list keeps every item; asked again.
			r.absorb(&m)
		case m.absent:
			r.absorb(&m)
			r.fix("missing", at, "an empty item dropped")
		default:
			r.absorb(&m)
			out = append(out, m.v)
		}
	}
	if n.maxItems != nil && len(out) > *n.maxItems {
		// Items are the model's to drop: asked, then cut.
		r.ask("count", path, fmt.Sprintf("%d items → the first %d", len(out), *n.maxItems),
			"%s has %d items; at most %d are allowed", pathName(path), len(out), *n.maxItems)
		out = out[:*n.maxItems]
	}
	switch {
	case len(r.hard) > 0:
	case n.minItems != nil && len(out) < *n.minItems:
		r.ask("count", path, "", "%s has %d items; at least %d are required", pathName(path), len(out), *n.minItems)
	}
	r.v = out
	return r
}

// emptyObject reports whether v is an object for n whose every member is
// one of n's and holds no value (null, a placeholder).
func (al *aligner) emptyObject(n *node, v any) bool {
	o, ok := v.(*object)
	if !ok || len(o.keys) == 0 || !n.is("object") {
		return false
	}
	for i, k := range o.keys {
		p := n.prop(k)
		if p == nil {
			return false
		}
		if m := al.direct(p.n, o.vals[i], ""); !m.absent || len(m.hard) > 0 {
			return false
		}
	}
	return true
}

// listInText reads a list written as the text of JSON ("[1, 2]", "[]").
// For a list of texts, "[1]" may be one text or a list of one number: it
// is read as a list only when each item is a text in quotes.
func listInText(t string, ofTexts bool) ([]any, bool) {
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return nil, false
	}
	c := readSpan(t, 0)
	l, ok := c.v.([]any)
	if c.err != nil || c.truncated || c.end != len(t) || !ok {
		return nil, false
	}
	if ofTexts {
		for _, e := range l {
			if _, ok := e.(string); !ok {
				return nil, false
			}
		}
	}
	return l, true
}

// numbered returns the values of an object whose keys are all numbers
// ("1", "2", …), in their order.
func numbered(o *object) ([]any, bool) {
	if len(o.keys) == 0 {
		return nil, false
	}
	type kv struct {
		n int
		v any
	}
	var items []kv
	for i, k := range o.keys {
		n, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil {
			return nil, false
		}
		items = append(items, kv{n, o.vals[i]})
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].n < items[b].n })
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out, true
}

func (al *aligner) str(n *node, v any, path string) aligned {
	var r aligned
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
		r.fix("type", path, "number %s → text", s)
	case bool:
		s = strconv.FormatBool(x)
		r.fix("type", path, "%t → text", x)
	case []any:
		var parts []string
		for _, e := range x {
			switch y := e.(type) {
			case string:
				parts = append(parts, y)
			case json.Number:
				parts = append(parts, y.String())
			default:
				r.problem("type", path, "want a text, got a list")
				return r
			}
		}
		if len(parts) == 0 || len(n.enum) > 0 {
			r.problem("type", path, "want a text, got a list")
			return r
		}
		s = strings.Join(parts, "\n")
		r.fix("type", path, "a list of %d texts → one text of %d lines", len(parts), len(parts))
	default:
		r.problem("type", path, "want a text, got %s", jsonKind(v))
		return r
	}
	if n.maxLength != nil && utf8.RuneCountInString(s) > *n.maxLength {
		cut := truncateRunes(s, *n.maxLength)
		r.fix("length", path, "%d characters → %d", utf8.RuneCountInString(s), utf8.RuneCountInString(cut))
		s = cut
	}
	if n.minLength != nil && utf8.RuneCountInString(strings.TrimSpace(s)) < *n.minLength {
		if strings.TrimSpace(s) == "" {
			r.ask("length", path, "", "%s is empty", pathName(path))
		} else {
			r.ask("length", path, "", "%s is shorter than %d characters", pathName(path), *n.minLength)
		}
	}
	r.v = s
	return r
}

// checkEnum maps r's value onto one of n's enum values, or reports it.
func (al *aligner) checkEnum(n *node, r *aligned, path string) {
	for _, e := range n.enum {
		if sameJSON(e, r.v) {
			if s, ok := e.(string); ok {
				r.v = s
			} else {
				r.v = plain(e)
			}
			return
		}
	}
	if s, ok := r.v.(string); ok {
		var values []string
		for _, e := range n.enum {
			if es, ok := e.(string); ok {
				values = append(values, es)
			}
		}
		if to, ok := matchEnum(s, values, al.synonyms); ok {
			r.fix("enum", path, "%q → %q", s, to)
			r.v = to
			return
		}
	}
	allowed := make([]string, len(n.enum))
	for i, e := range n.enum {
		b, _ := json.Marshal(plain(e))
		allowed[i] = string(b)
	}
	got, _ := json.Marshal(r.v)
	r.problem("enum", path, "%s is not one of %s", got, strings.Join(allowed, ", "))
}

// sameJSON reports whether two decoded values are the same JSON value.
func sameJSON(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		if y, ok := b.(json.Number); ok {
			fx, e1 := x.Float64()
			fy, e2 := y.Float64()
			return e1 == nil && e2 == nil && fx == fy
		}
		return false
	}
	ja, e1 := json.Marshal(plain(a))
	jb, e2 := json.Marshal(plain(b))
	return e1 == nil && e2 == nil && string(ja) == string(jb)
}

func (al *aligner) number(n *node, integer bool, v any, path string) aligned {
	var r aligned
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			r.problem("type", path, "%s is not a number", x)
			return r
		}
	case string:
		g, ok := parseNumber(x, n.min, n.max)
		if !ok {
			r.problem("type", path, "%q is not a number", x)
			return r
		}
		f = g
		r.fix("type", path, "text %q → %s", x, fmtNum(f))
	default:
		r.problem("type", path, "want a number, got %s", jsonKind(v))
		return r
	}
	if integer && f != math.Trunc(f) {
		g := math.Round(f)
		r.fix("type", path, "%s → %s", fmtNum(f), fmtNum(g))
		f = g
	}
	if n.min != nil && f < *n.min {
		r.fix("range", path, "%s → %s (the minimum)", fmtNum(f), fmtNum(*n.min))
		f = *n.min
	}
	if n.max != nil && f > *n.max {
		r.fix("range", path, "%s → %s (the maximum)", fmtNum(f), fmtNum(*n.max))
		f = *n.max
	}
	switch x, ok := v.(json.Number); {
	case integer && math.Abs(f) < 1<<53:
		r.v = json.Number(strconv.FormatInt(int64(f), 10))
	case ok && len(r.fixes) == 0:
		r.v = x
	default:
		r.v = json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return r
}

func (al *aligner) boolean(v any, path string) aligned {
	var r aligned
	switch x := v.(type) {
	case bool:
		r.v = x
	case string:
		b, ok := parseBool(x)
		if !ok {
			r.problem("type", path, "%q is not yes or no", x)
			return r
		}
		r.v = b
		r.fix("type", path, "text %q → %t", x, b)
	case json.Number:
		switch x.String() {
		case "1":
			r.v = true
		case "0":
			r.v = false
		default:
			r.problem("type", path, "%s is not yes or no", x)
			return r
		}
		r.fix("type", path, "%s → %t", x, r.v)
	default:
		r.problem("type", path, "want true or false, got %s", jsonKind(v))
	}
	return r
}

// escape escapes a key for a JSON pointer.
func escape(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return pointerEscaper.Replace(k)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

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
