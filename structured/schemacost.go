package structured

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxSchemaApplied bounds how many subschemas a schema may apply to one
// value of a reply, every way of reaching one counted: allOf, anyOf,
// oneOf, not, if/then/else and references apply theirs to the same value,
// and the properties, patterns and items of a schema apply theirs to the
// same member or element. Checking a reply against the schema costs about
// that many times the reply's size; a schema whose references would
// multiply it at each level of nesting (two alternatives that both lead
// back to it for the same value) is refused, however deep the reply.
const MaxSchemaApplied = 100

// maxCostStates bounds the analysis of a schema's cost: the sets of
// subschemas that may apply together to one value.
const maxCostStates = 20000

// costNode is a subschema with what it applies to the same value and to
// the members and elements of a value.
type costNode struct {
	ptr        string
	inplace    []int
	props      map[string][]int
	patterns   []costPattern
	additional []int
	// anyKey and anyItem apply to every member or element
	// (unevaluatedProperties, unevaluatedItems, contains), counted as if
	// they always did.
	anyKey, anyItem []int
	// prefix are the schemas of the first elements (prefixItems, or items
	// as a list); rest those of the others.
	prefix [][]int
	rest   []int
	names  []int // propertyNames: applied to each key
}

type costPattern struct {
	re   *regexp.Regexp // nil: it may match any key
	node int
}

// costGraph is the subschemas of a document, built as they are reached.
type costGraph struct {
	w     *schemaWalk
	nodes []*costNode
	byPtr map[string]int
	// closures are memoized; open marks the ones being computed (an
	// in-place cycle).
	closures map[int]map[int]int
	open     map[int]bool
}

// checkCost refuses a schema that lets more than MaxSchemaApplied
// subschemas apply to one value of some reply, or that refers back to
// itself without a level of nesting. The references are known to be
// inside the document (w checked them).
func (w *schemaWalk) checkCost() error {
	g := &costGraph{w: w, byPtr: map[string]int{}, closures: map[int]map[int]int{}, open: map[int]bool{}}
	root := g.node("")
	start, err := g.closure(root)
	if err != nil {
		return err
	}
	seen := map[string]bool{stateKey(start): true}
	queue := []map[int]int{start}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		if err := g.bounded(st); err != nil {
			return err
		}
		for _, letter := range g.letters(st) {
			next := map[int]int{}
			for n, c := range st {
				for _, t := range g.targets(n, letter) {
					cl, err := g.closure(t)
					if err != nil {
						return err
					}
					for m, k := range cl {
						next[m] = capCount(next[m] + c*k)
					}
				}
			}
			if len(next) == 0 {
				continue
			}
			if key := stateKey(next); !seen[key] {
				if len(seen) >= maxCostStates {
					return &SchemaError{Problem: fmt.Sprintf("the schema is too complex: more than %d combinations of its subschemas can apply to a value; simplify it", maxCostStates)}
				}
				seen[key] = true
				queue = append(queue, next)
			}
		}
		if w.visited++; w.visited%256 == 0 && w.ctx.Err() != nil {
			return w.ctx.Err()
		}
	}
	return nil
}

// bounded refuses a set of subschemas applying to one value beyond
// MaxSchemaApplied, naming the one applied most often.
func (g *costGraph) bounded(st map[int]int) error {
	total, most := 0, -1
	for n, c := range st {
		total = capCount(total + c)
		if most < 0 || c > st[most] || (c == st[most] && n < most) {
			most = n
		}
	}
	if total <= MaxSchemaApplied {
		return nil
	}
	return &SchemaError{At: g.nodes[most].ptr, Problem: fmt.Sprintf("the schema lets more than %d of its subschemas apply to one value of a reply (this one %d times): checking a reply would cost too much; do not let alternatives (anyOf, oneOf, allOf) lead to the same subschema for the same value", MaxSchemaApplied, min(st[most], MaxSchemaApplied+1))}
}

func capCount(n int) int { return min(n, MaxSchemaApplied+1) }

// stateKey names a set of subschemas with their counts.
func stateKey(st map[int]int) string {
	ids := make([]int, 0, len(st))
	for n := range st {
		ids = append(ids, n)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, n := range ids {
		fmt.Fprintf(&b, "%d:%d,", n, st[n])
	}
	return b.String()
}

// The letters are the kinds of members and elements a value may have, as
// far as the subschemas applied to it tell them apart.
const (
	letterPatterned = "\x00key matching the patterns"
	letterOther     = "\x00key matching no pattern"
	letterItem      = "\x00element"
	letterKey       = "\x00key itself"
	letterIndex     = "\x00index "
)

// letters are the kinds of member or element that the subschemas of st
// may apply different subschemas to.
func (g *costGraph) letters(st map[int]int) []string {
	set := map[string]bool{}
	for n := range st {
		c := g.nodes[n]
		for name := range c.props {
			set[name] = true
		}
		if len(c.patterns) > 0 || len(c.anyKey) > 0 {
			set[letterPatterned] = true
		}
		if len(c.additional) > 0 || len(c.anyKey) > 0 {
			set[letterOther] = true
		}
		for i := range c.prefix {
			set[letterIndex+strconv.Itoa(i)] = true
		}
		if len(c.rest) > 0 || len(c.anyItem) > 0 {
			set[letterItem] = true
		}
		if len(c.names) > 0 {
			set[letterKey] = true
		}
	}
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// targets are the subschemas n applies to a member or element of kind
// letter.
func (g *costGraph) targets(n int, letter string) []int {
	c := g.nodes[n]
	var out []int
	switch {
	case letter == letterPatterned:
		for _, p := range c.patterns {
			out = append(out, p.node)
		}
		return append(out, c.anyKey...)
	case letter == letterOther:
		return append(append(out, c.additional...), c.anyKey...)
	case letter == letterItem:
		return append(append(out, c.rest...), c.anyItem...)
	case letter == letterKey:
		return c.names
	case strings.HasPrefix(letter, letterIndex):
		i, _ := strconv.Atoi(strings.TrimPrefix(letter, letterIndex))
		if i < len(c.prefix) {
			out = append(out, c.prefix[i]...)
		} else {
			out = append(out, c.rest...)
		}
		return append(out, c.anyItem...)
	}
	// A declared name.
	out = append(out, c.props[letter]...)
	matched := false
	for _, p := range c.patterns {
		if p.re == nil || p.re.MatchString(letter) {
			out = append(out, p.node)
			matched = matched || p.re != nil
		}
	}
	if _, declared := c.props[letter]; !declared && !matched {
		out = append(out, c.additional...)
	}
	return append(out, c.anyKey...)
}

// closure is what applying n to a value applies to it: n and every
// subschema it applies in place, with how many ways each is reached.
func (g *costGraph) closure(n int) (map[int]int, error) {
	if cl, ok := g.closures[n]; ok {
		return cl, nil
	}
	if g.open[n] {
		return nil, &SchemaError{At: g.nodes[n].ptr, Problem: "the schema refers back to this subschema for the same value, without a level of nesting: checking a reply would never end"}
	}
	g.open[n] = true
	cl := map[int]int{n: 1}
	for _, t := range g.nodes[n].inplace {
		sub, err := g.closure(t)
		if err != nil {
			return nil, err
		}
		for m, k := range sub {
			cl[m] = capCount(cl[m] + k)
		}
	}
	delete(g.open, n)
	g.closures[n] = cl
	return cl, nil
}

// node returns the subschema at ptr (a JSON Pointer, escaped), reading it
// and what it applies the first time.
func (g *costGraph) node(ptr string) int {
	if n, ok := g.byPtr[ptr]; ok {
		return n
	}
	n := len(g.nodes)
	c := &costNode{ptr: ptr, props: map[string][]int{}}
	g.nodes = append(g.nodes, c)
	g.byPtr[ptr] = n
	o, ok := g.value(ptr).(map[string]any)
	if !ok {
		return n // true, false, or not a schema (the compiler refuses it)
	}
	sub := func(kw string) (int, bool) {
		v, ok := o[kw]
		if !ok {
			return 0, false
		}
		if _, isSchema := v.(map[string]any); !isSchema {
			return 0, false
		}
		return g.node(ptr + "/" + escape(kw)), true
	}
	list := func(kw string) []int {
		items, _ := o[kw].([]any)
		var out []int
		for i, it := range items {
			if _, ok := it.(map[string]any); ok {
				out = append(out, g.node(ptr+"/"+escape(kw)+"/"+strconv.Itoa(i)))
			}
		}
		return out
	}
	members := func(kw string, fn func(name string, node int)) {
		m, _ := o[kw].(map[string]any)
		for _, name := range sortedKeys(m) {
			if _, ok := m[name].(map[string]any); ok {
				fn(name, g.node(ptr+"/"+escape(kw)+"/"+escape(name)))
			}
		}
	}
	// In place: the same value.
	for _, kw := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if ref, ok := o[kw].(string); ok {
			c.inplace = append(c.inplace, g.refTargets(kw, ref)...)
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		c.inplace = append(c.inplace, list(kw)...)
	}
	for _, kw := range []string{"not", "if", "then", "else"} {
		if t, ok := sub(kw); ok {
			c.inplace = append(c.inplace, t)
		}
	}
	for _, kw := range []string{"dependentSchemas", "dependencies"} {
		members(kw, func(_ string, t int) { c.inplace = append(c.inplace, t) })
	}
	// Members.
	members("properties", func(name string, t int) { c.props[name] = append(c.props[name], t) })
	members("patternProperties", func(pattern string, t int) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			re = nil
		}
		c.patterns = append(c.patterns, costPattern{re: re, node: t})
	})
	if t, ok := sub("additionalProperties"); ok {
		c.additional = append(c.additional, t)
	}
	if t, ok := sub("unevaluatedProperties"); ok {
		c.anyKey = append(c.anyKey, t)
	}
	if t, ok := sub("propertyNames"); ok {
		c.names = append(c.names, t)
	}
	// Elements.
	if _, isList := o["items"].([]any); isList {
		for _, t := range list("items") {
			c.prefix = append(c.prefix, []int{t})
		}
		if t, ok := sub("additionalItems"); ok {
			c.rest = append(c.rest, t)
		}
	} else {
		for _, t := range list("prefixItems") {
			c.prefix = append(c.prefix, []int{t})
		}
		if t, ok := sub("items"); ok {
			c.rest = append(c.rest, t)
			if len(c.prefix) == 0 {
				// Before 2020-12, items as a schema applies to every
				// element, and additionalItems to none.
				c.rest = c.rest[:1]
			}
		}
	}
	for _, kw := range []string{"contains", "unevaluatedItems"} {
		if t, ok := sub(kw); ok {
			c.anyItem = append(c.anyItem, t)
		}
	}
	return n
}

// refTargets are the subschemas a reference may lead to: its target; for
// $dynamicRef every $dynamicAnchor of its name too, and for $recursiveRef
// every subschema with $recursiveAnchor (either may be chosen when the
// reply is checked).
func (g *costGraph) refTargets(kw, ref string) []int {
	var out []int
	frag := strings.TrimPrefix(ref, "#")
	switch {
	case frag == "":
		out = append(out, g.node(""))
	case strings.HasPrefix(frag, "/"):
		if p, err := url.PathUnescape(frag); err == nil {
			out = append(out, g.node(canonicalPointer(p)))
		}
	default:
		if at, ok := g.w.anchorAt[frag]; ok {
			out = append(out, g.node(at))
		}
	}
	switch kw {
	case "$dynamicRef":
		for _, at := range g.w.dynamicAt[frag] {
			out = append(out, g.node(at))
		}
	case "$recursiveRef":
		for _, at := range g.w.recursiveAt {
			out = append(out, g.node(at))
		}
	}
	return out
}

// canonicalPointer writes a JSON Pointer with its members escaped as
// node does.
func canonicalPointer(p string) string {
	parts := strings.Split(p[1:], "/")
	for i, part := range parts {
		parts[i] = escape(pointerUnescaper.Replace(part))
	}
	return "/" + strings.Join(parts, "/")
}

// value is the value at ptr in the document; nil when there is none.
func (g *costGraph) value(ptr string) any {
	cur := g.w.root
	if ptr == "" {
		return cur
	}
	for _, part := range strings.Split(ptr[1:], "/") {
		part = pointerUnescaper.Replace(part)
		switch x := cur.(type) {
		case map[string]any:
			cur = x[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
