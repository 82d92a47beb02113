package structured

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// node is the part of a JSON Schema that a reply is aligned to: types,
// properties in their declared order, required names, list items, enums,
// ranges, counts, lengths and unions. It is compiled once per Spec from the
// schema's JSON and never changed afterwards.
type node struct {
	// types are the JSON types allowed ("object", "array", "string",
	// "number", "integer", "boolean", "null"); empty allows any value.
	types []string
	props []*prop
	// required names the properties that must be present.
	required map[string]bool
	// extra is the schema of properties not declared (additionalProperties
	// as a schema); extraOK says whether they are kept at all: false when
	// additionalProperties is false, or absent beside declared properties
	// (a reply's unknown fields are dropped).
	extra   *node
	extraOK bool
	items   *node
	enum    []any
	// anyOf are the alternatives of anyOf or oneOf.
	anyOf                []*node
	min, max             *float64
	minItems, maxItems   *int
	minLength, maxLength *int
	description          string
}

// prop is one declared property of an object node.
type prop struct {
	name string
	// key is name normalised for matching (see keyOf).
	key string
	n   *node
}

// compileNode reads a JSON Schema document into its node. Local
// references ($ref "#/$defs/X", "#/definitions/X") are resolved, recursive
// ones included.
func compileNode(schema []byte) (*node, error) {
	doc, err := decodeOrdered(schema)
	if err != nil {
		return nil, err
	}
	c := &nodeCompiler{root: doc, refs: map[string]*node{}}
	return c.compile(doc, 0)
}

type nodeCompiler struct {
	root any
	refs map[string]*node
	// work counts the subschemas read and the properties allOf merged,
	// bounded by MaxSchemaWork.
	work int
}

func (c *nodeCompiler) compile(v any, depth int) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("schema nested too deeply")
	}
	if c.work++; c.work > MaxSchemaWork {
		return nil, errSchemaWork
	}
	switch x := v.(type) {
	case bool:
		// true allows anything; false allows nothing, which a reply cannot
		// be aligned to, so it is read as anything too and left to the
		// validator.
		return &node{}, nil
	case *object:
		return c.object(x, depth)
	case nil:
		return &node{}, nil
	}
	return nil, fmt.Errorf("a schema must be an object or a boolean, not %s", jsonKind(v))
}

func (c *nodeCompiler) object(o *object, depth int) (*node, error) {
	if ref, ok := o.get("$ref").(string); ok {
		if n, ok := c.refs[ref]; ok {
			return n, nil
		}
		target, err := c.resolve(ref)
		if err != nil {
			return nil, err
		}
		n := &node{}
		c.refs[ref] = n
		got, err := c.compile(target, depth+1)
		if err != nil {
			return nil, err
		}
		*n = *got
		return n, nil
	}
	n := &node{required: map[string]bool{}}
	switch t := o.get("type").(type) {
	case string:
		n.types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				n.types = append(n.types, s)
			}
		}
	}
	if d, ok := o.get("description").(string); ok {
		n.description = d
	}
	if props, ok := o.get("properties").(*object); ok {
		for i, name := range props.keys {
			pn, err := c.compile(props.vals[i], depth+1)
			if err != nil {
				return nil, fmt.Errorf("property %q: %w", name, err)
			}
			n.props = append(n.props, &prop{name: name, key: keyOf(name), n: pn})
		}
	}
	if req, ok := o.get("required").([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				n.required[s] = true
			}
		}
	}
	switch ap := o.get("additionalProperties").(type) {
	case bool:
		n.extraOK = ap
	case *object:
		en, err := c.compile(ap, depth+1)
		if err != nil {
			return nil, fmt.Errorf("additionalProperties: %w", err)
		}
		n.extra, n.extraOK = en, true
	case nil:
		n.extraOK = len(n.props) == 0
	}
	if it, ok := o.lookup("items"); ok {
		in, err := c.compile(it, depth+1)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		n.items = in
	}
	if e, ok := o.get("enum").([]any); ok {
		n.enum = e
	}
	if cv, ok := o.lookup("const"); ok {
		n.enum = []any{cv}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts, ok := o.get(kw).([]any)
		if !ok {
			continue
		}
		for _, a := range alts {
			an, err := c.compile(a, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kw, err)
			}
			n.anyOf = append(n.anyOf, an)
		}
	}
	if all, ok := o.get("allOf").([]any); ok {
		for _, a := range all {
			an, err := c.compile(a, depth+1)
			if err != nil {
				return nil, fmt.Errorf("allOf: %w", err)
			}
			if c.work += len(an.props); c.work > MaxSchemaWork {
				return nil, errSchemaWork
			}
			n.merge(an)
		}
	}
	n.min = numberKeyword(o, "minimum", "exclusiveMinimum")
	n.max = numberKeyword(o, "maximum", "exclusiveMaximum")
	n.minItems = intKeyword(o, "minItems")
	n.maxItems = intKeyword(o, "maxItems")
	n.minLength = intKeyword(o, "minLength")
	n.maxLength = intKeyword(o, "maxLength")
	if len(n.types) == 0 {
		n.types = inferTypes(n)
	}
	return n, nil
}

// merge adds what b requires to n, for allOf.
func (n *node) merge(b *node) {
	if len(n.types) == 0 {
		n.types = b.types
	}
	n.props = append(n.props, b.props...)
	for k := range b.required {
		n.required[k] = true
	}
	if n.items == nil {
		n.items = b.items
	}
	if n.enum == nil {
		n.enum = b.enum
	}
	if n.extra == nil && b.extra != nil {
		n.extra, n.extraOK = b.extra, b.extraOK
	}
}

// inferTypes gives the types of a schema that names none but whose
// keywords say what it is.
func inferTypes(n *node) []string {
	switch {
	case len(n.props) > 0 || n.extra != nil:
		return []string{"object"}
	case n.items != nil:
		return []string{"array"}
	case len(n.enum) > 0:
		var out []string
		seen := map[string]bool{}
		for _, e := range n.enum {
			k := jsonType(e)
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		return out
	}
	return nil
}

func (c *nodeCompiler) resolve(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, fmt.Errorf("reference %q is not local to the schema", ref)
	}
	cur := c.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
		if part == "" {
			continue
		}
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		o, ok := cur.(*object)
		if !ok {
			return nil, fmt.Errorf("reference %q does not resolve", ref)
		}
		next, ok := o.lookup(part)
		if !ok {
			return nil, fmt.Errorf("reference %q does not resolve", ref)
		}
		cur = next
	}
	return cur, nil
}

func numberKeyword(o *object, names ...string) *float64 {
	for _, name := range names {
		if n, ok := o.get(name).(json.Number); ok {
			if f, err := n.Float64(); err == nil && !math.IsInf(f, 0) {
				return &f
			}
		}
	}
	return nil
}

func intKeyword(o *object, name string) *int {
	if n, ok := o.get(name).(json.Number); ok {
		if i, err := strconv.Atoi(n.String()); err == nil && i >= 0 {
			return &i
		}
	}
	return nil
}

// allows reports whether the node allows JSON type t ("integer" values
// are numbers too).
func (n *node) allows(t string) bool {
	if len(n.types) == 0 {
		return true
	}
	for _, x := range n.types {
		if x == t || (x == "number" && t == "integer") {
			return true
		}
	}
	return false
}

// is reports whether the node's only type other than null is t.
func (n *node) is(t string) bool {
	found := false
	for _, x := range n.types {
		switch x {
		case t:
			found = true
		case "null":
		default:
			return false
		}
	}
	return found
}

// main returns the node's type other than null when it has exactly one,
// else "".
func (n *node) main() string {
	var out string
	for _, x := range n.types {
		if x == "null" {
			continue
		}
		if out != "" {
			return ""
		}
		out = x
	}
	return out
}

// enumHolds reports whether s is one of n's enum values (a placeholder
// word such as "none" may be one).
func (n *node) enumHolds(s string) bool {
	for _, e := range n.enum {
		if es, ok := e.(string); ok && keyOf(es) == keyOf(s) && keyOf(s) != "" {
			return true
		}
	}
	for _, a := range n.anyOf {
		if a.enumHolds(s) {
			return true
		}
	}
	return false
}

// prop returns the declared property called name.
func (n *node) prop(name string) *prop {
	for _, p := range n.props {
		if p.name == name {
			return p
		}
	}
	return nil
}

// soleList returns the node's one list property when it is an object
// whose every other property is optional: a reply may send that list bare.
func (n *node) soleList() *prop {
	var list *prop
	for _, p := range n.props {
		if p.n.is("array") {
			if list != nil {
				return nil
			}
			list = p
		} else if n.required[p.name] {
			return nil
		}
	}
	return list
}

// soleOf returns n's one property of JSON type kind ("array" or
// "object"), or nil when it has none or several.
func (n *node) soleOf(kind string) *prop {
	var one *prop
	for _, p := range n.props {
		if p.n.is(kind) {
			if one != nil {
				return nil
			}
			one = p
		}
	}
	return one
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case nonFinite:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case *object, map[string]any:
		return "object"
	}
	return "unknown"
}

// jsonKind names the JSON type of v for a message: "an object", "a string".
func jsonKind(v any) string {
	switch jsonType(v) {
	case "null":
		return "null"
	case "boolean":
		return "a boolean"
	case "integer", "number":
		return "a number"
	case "string":
		return "a string"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return "an unknown value"
}
