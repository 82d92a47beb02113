package structured

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// A JSON Schema given at run time — a client's response format, a
// pipeline file's output schema, a schema file — is data: it is read
// within these bounds, and every reference in it is resolved inside it or
// refused, before anything is compiled.
const (
	// MaxSchemaBytes bounds the JSON text of a schema.
	MaxSchemaBytes = 128 << 10
	// MaxSchemaDepth bounds how deeply the JSON values of a schema nest
	// (the root is at depth 1).
	MaxSchemaDepth = 64
	// MaxSchemaTokens bounds the JSON values and member names of a
	// schema, all counted.
	MaxSchemaTokens = 20000
	// MaxSchemaObjects bounds the JSON objects of a schema (its
	// subschemas, and the objects that hold them by name): compiling a
	// validator costs about the square of their number.
	MaxSchemaObjects = 1000
	// MaxSchemaWork bounds the work of reading a schema into the shape a
	// reply is aligned to: one unit per subschema read and per property
	// an allOf adds to another, so that references that repeat a part of
	// the schema many times over are refused rather than expanded.
	MaxSchemaWork = 200000
	// MaxHintBytes bounds the description of a schema given to a model
	// that does not enforce schemas (Spec.Hint).
	MaxHintBytes = 128 << 10
)

// SchemaError is a JSON Schema refused before it was compiled: too large,
// too deep, too complex, or with a reference that does not stay inside
// it. Its message names the limit, or the keyword and where it is (a
// JSON Pointer), and never depends on anything outside the schema.
type SchemaError struct {
	// At is the JSON Pointer of the keyword refused; empty for the whole
	// schema.
	At string
	// Problem says what is refused, in words.
	Problem string
}

func (e *SchemaError) Error() string {
	if e.At == "" {
		return e.Problem
	}
	return e.Problem + " (at " + e.At + ")"
}

// ErrOutsideSchema is wrapped by the error of a compiler made by
// NewCompiler asked for a document it was not given.
var ErrOutsideSchema = errors.New("a schema's references must stay inside it: nothing outside the schema is read")

// NewCompiler returns a JSON Schema compiler that reads nothing but the
// documents added to it: asked for any other, a file:// or http:// URL
// included, its loader fails with ErrOutsideSchema without opening
// anything. The metaschemas of the drafts (draft-04 to 2020-12) are the
// library's embedded copies. Every compiler of a schema that did not come
// with madspark's own code is made here.
func NewCompiler() *validator.Compiler {
	c := validator.NewCompiler()
	c.UseLoader(refuseLoader{})
	return c
}

// errSchemaWork is the error of a schema whose references repeat its
// parts beyond MaxSchemaWork.
var errSchemaWork = &SchemaError{Problem: fmt.Sprintf("the schema is too complex: reading it takes more than %d steps (its references repeat parts of it); simplify it", MaxSchemaWork)}

// boundedHint describes n for a prompt, refusing a description longer
// than MaxHintBytes.
func boundedHint(n *node) (string, error) {
	h := describe(n)
	if len(h) > MaxHintBytes {
		return "", &SchemaError{Problem: fmt.Sprintf("the schema is too complex: describing it to the model takes more than %d bytes (its references repeat parts of it); simplify it", MaxHintBytes)}
	}
	return h, nil
}

// CompileSchema compiles a JSON Schema given at run time into a
// validator of the draft its $schema names (2020-12 when it names none):
// CheckSchema first, then a compiler of NewCompiler. Its errors are one
// line.
func CompileSchema(ctx context.Context, schema []byte) (*validator.Schema, error) {
	if err := CheckSchema(ctx, schema); err != nil {
		return nil, err
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, &SchemaError{Problem: "the schema is not valid JSON: " + err.Error()}
	}
	c := NewCompiler()
	const url = "mem:///schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, compileProblem(err)
	}
	v, err := c.Compile(url)
	if err != nil {
		return nil, compileProblem(err)
	}
	return v, nil
}

// compileProblem is an error of the compiler in one line: a schema that
// its draft's metaschema refuses has each violation named, as a reply's
// are.
func compileProblem(err error) error {
	var sve *validator.SchemaValidationError
	if errors.As(err, &sve) {
		return fmt.Errorf("the schema is not valid for its draft: %w", schemaError(sve.Err))
	}
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}

// refuseLoader loads nothing.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, ErrOutsideSchema }

// knownDrafts are the metaschemas a schema's $schema may name: the
// drafts the compiler has embedded copies of, by the URLs it knows them by
// (http or https, with or without an empty fragment).
var knownDrafts = map[string]bool{
	"json-schema.org/schema":                true,
	"json-schema.org/draft/2020-12/schema":  true,
	"json-schema.org/draft/2019-09/schema":  true,
	"json-schema.org/draft-07/schema":       true,
	"json-schema.org/draft-06/schema":       true,
	"json-schema.org/draft-04/schema":       true,
	"json-schema.org/draft-04/schema#":      true,
	"json-schema.org/draft-06/schema#":      true,
	"json-schema.org/draft-07/schema#":      true,
	"json-schema.org/draft/2019-09/schema#": true,
	"json-schema.org/draft/2020-12/schema#": true,
	"json-schema.org/schema#":               true,
}

func knownDraft(u string) bool {
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "http://")
	}
	return ok && knownDrafts[rest]
}

// CheckSchema checks a JSON Schema given at run time before anything
// compiles it: its size, depth and number of values are within the
// bounds above, and every $ref, $dynamicRef and $recursiveRef points into
// the schema itself (a JSON Pointer that resolves in it, such as
// "#/$defs/item", or the name of one of its anchors), every $schema names
// a known draft, and only the root has an $id that is not an anchor. The
// error, a *SchemaError, names what is refused. It stops with ctx's error
// when ctx is done.
func CheckSchema(ctx context.Context, schema []byte) error {
	if len(schema) > MaxSchemaBytes {
		return &SchemaError{Problem: fmt.Sprintf("the schema is %d bytes; the limit is %d", len(schema), MaxSchemaBytes)}
	}
	if err := checkShape(ctx, schema); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return &SchemaError{Problem: "the schema is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	w := &schemaWalk{ctx: ctx, root: doc, anchors: map[string]bool{}, anchorAt: map[string]string{}, dynamicAt: map[string][]string{}}
	if root, ok := doc.(map[string]any); ok {
		if s, ok := root["$schema"].(string); ok && strings.Contains(s, "draft-04") {
			w.draft4 = true
		}
	}
	// Anchors first: a reference may name one that comes after it.
	w.collect = true
	if err := w.schema(doc, "", true); err != nil {
		return err
	}
	w.collect = false
	if err := w.schema(doc, "", true); err != nil {
		return err
	}
	return w.checkCost()
}

// checkShape reads the schema's tokens without building it: its depth
// and its number of tokens are bounded before anything recursive runs.
func checkShape(ctx context.Context, schema []byte) error {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	depth, tokens, objects := 0, 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			if tokens == 0 {
				return &SchemaError{Problem: "the schema is empty"}
			}
			return nil
		}
		if err != nil {
			return &SchemaError{Problem: "the schema is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
		}
		if tokens > 0 && depth == 0 {
			return &SchemaError{Problem: "the schema is not valid JSON: text after the schema"}
		}
		tokens++
		if tokens > MaxSchemaTokens {
			return &SchemaError{Problem: fmt.Sprintf("the schema has more than %d values and member names; simplify it", MaxSchemaTokens)}
		}
		if tokens%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if tok == json.Delim('{') {
			if objects++; objects > MaxSchemaObjects {
				return &SchemaError{Problem: fmt.Sprintf("the schema has more than %d objects (subschemas and the objects that hold them); simplify it", MaxSchemaObjects)}
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			if depth > MaxSchemaDepth {
				return &SchemaError{Problem: fmt.Sprintf("the schema nests deeper than %d levels", MaxSchemaDepth)}
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// schemaWalk visits the subschemas of a schema document.
type schemaWalk struct {
	ctx  context.Context
	root any
	// draft4: the root's $schema is draft-04, whose id keyword is "id".
	draft4 bool
	// collect: this pass gathers the anchors; the next checks the
	// references.
	collect bool
	anchors map[string]bool
	// anchorAt, dynamicAt and recursiveAt are where the anchors are
	// (JSON Pointers), for the cost of the schema.
	anchorAt    map[string]string
	dynamicAt   map[string][]string
	recursiveAt []string
	visited     int
}

// Keywords whose value is an object of subschemas by name.
var schemaMaps = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
	"dependentSchemas": true, "dependencies": true,
}

// Keywords whose value is data, never a schema.
var dataKeywords = map[string]bool{
	"enum": true, "const": true, "default": true, "examples": true, "example": true,
}

// schema checks v, a subschema at JSON Pointer at. Keywords it does not
// know are read as subschemas too, so that a reference anywhere in the
// schema is checked.
func (w *schemaWalk) schema(v any, at string, root bool) error {
	o, ok := v.(map[string]any)
	if !ok {
		if list, ok := v.([]any); ok {
			for i, e := range list {
				if err := w.schema(e, at+"/"+strconv.Itoa(i), false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if w.visited++; w.visited%512 == 0 && w.ctx.Err() != nil {
		return w.ctx.Err()
	}
	for _, k := range slices.Sorted(maps.Keys(o)) {
		val := o[k]
		kat := at + "/" + escape(k)
		switch {
		case dataKeywords[k]:
		case k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef":
			if err := w.ref(k, val, kat); err != nil {
				return err
			}
		case k == "$schema":
			s, ok := val.(string)
			if !ok {
				return &SchemaError{At: kat, Problem: "$schema must be a string"}
			}
			if !knownDraft(s) {
				return &SchemaError{At: kat, Problem: fmt.Sprintf("$schema %q is not a draft this server knows; use https://json-schema.org/draft/2020-12/schema (or draft 2019-09, 07, 06, 04), or leave $schema out", clipRef(s))}
			}
		case k == "$id" || (k == "id" && w.draft4):
			if err := w.id(k, val, kat, root); err != nil {
				return err
			}
		case k == "$anchor" || k == "$dynamicAnchor":
			name, ok := val.(string)
			if !ok {
				return &SchemaError{At: kat, Problem: k + " must be a string"}
			}
			if w.collect {
				w.anchors[name] = true
				w.anchorAt[name] = at
				if k == "$dynamicAnchor" {
					w.dynamicAt[name] = append(w.dynamicAt[name], at)
				}
			}
		case k == "$recursiveAnchor":
			if b, _ := val.(bool); b && w.collect {
				w.recursiveAt = append(w.recursiveAt, at)
			}
		case schemaMaps[k]:
			if m, ok := val.(map[string]any); ok {
				for _, name := range slices.Sorted(maps.Keys(m)) {
					if err := w.schema(m[name], kat+"/"+escape(name), false); err != nil {
						return err
					}
				}
			}
		default:
			if err := w.schema(val, kat, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// id checks an $id: the root's names the schema (it may not have a
// fragment); a subschema's may only be a plain-name anchor ("#item", as
// drafts 06 and 07 write them), not the start of another document.
func (w *schemaWalk) id(k string, val any, at string, root bool) error {
	s, ok := val.(string)
	if !ok {
		return &SchemaError{At: at, Problem: k + " must be a string"}
	}
	if name, ok := strings.CutPrefix(s, "#"); ok && name != "" && !strings.HasPrefix(name, "/") {
		if w.collect {
			w.anchors[name] = true
			w.anchorAt[name] = strings.TrimSuffix(at, "/"+escape(k))
		}
		return nil
	}
	if !root {
		return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q inside the schema is refused: only the root may have one (a subschema may have an $anchor)", k, clipRef(s))}
	}
	if u, err := url.Parse(s); err != nil || u.Fragment != "" {
		return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q must be a URI without a fragment", k, clipRef(s))}
	}
	return nil
}

// ref checks a reference: it must point into the schema.
func (w *schemaWalk) ref(k string, val any, at string) error {
	ref, ok := val.(string)
	if !ok {
		return &SchemaError{At: at, Problem: k + " must be a string"}
	}
	if w.collect {
		return nil
	}
	outside := func() error {
		return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q is refused: a reference must point inside the schema, such as \"#/$defs/item\"", k, clipRef(ref))}
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return outside()
	}
	if k == "$recursiveRef" && frag != "" {
		return &SchemaError{At: at, Problem: fmt.Sprintf("$recursiveRef %q is refused: its only value is \"#\"", clipRef(ref))}
	}
	if frag == "" {
		return nil
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q is not a valid reference", k, clipRef(ref))}
	}
	if !strings.HasPrefix(frag, "/") {
		if !w.anchors[frag] {
			return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q names no anchor of the schema", k, clipRef(ref))}
		}
		return nil
	}
	cur := w.root
	for _, part := range strings.Split(frag[1:], "/") {
		part = pointerUnescaper.Replace(part)
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[part]
			if !ok {
				return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q does not resolve inside the schema", k, clipRef(ref))}
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != part {
				return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q does not resolve inside the schema", k, clipRef(ref))}
			}
			cur = x[i]
		default:
			return &SchemaError{At: at, Problem: fmt.Sprintf("%s %q does not resolve inside the schema", k, clipRef(ref))}
		}
	}
	return nil
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// clipRef shortens a value of the schema for a message.
func clipRef(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
