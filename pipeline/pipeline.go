// Package pipeline is the registry of madspark's pipelines. Each pipeline
// package (spark, chaos, debate, ...) describes itself with a Definition —
// its name, its parameters and how to run it — and the command registers
// them all once at start-up. Whatever runs pipelines generically goes
// through the registry: the job queue's workers, batches, `madspark resume`,
// and the HTTP API and its forms. A new pipeline appears in all of them by
// registering.
//
// A Definition's Run returns the result only; it writes no file. Workers may
// run on other machines than the user, so whatever a user gets as files is
// made from the stored run by Files (batch exports, downloads, resume
// --output-dir), and a pipeline's own command may still write files as the
// run goes.
package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/structured"
)

// Params are a pipeline's parameters: a pointer to the pipeline's Params
// struct, whose JSON field names are the seed's canonical snake_case names.
type Params interface {
	// Validate reports the first problem, in one line naming the field.
	Validate() error
}

// Definition describes a pipeline to the registry.
type Definition struct {
	// Name identifies the pipeline in runs, jobs, the CLI and the API:
	// lower-case letters, digits, _ and -, starting with a letter.
	Name string
	// Title and Description present it to people (forms, listings).
	Title       string
	Description string
	// NewParams returns the pipeline's default parameters, a pointer to its
	// Params type. Decoded parameters start from these defaults.
	NewParams func() Params
	// Run runs the pipeline as r with p (of NewParams' type, validated) and
	// returns its result, which the run records as JSON. It writes no file
	// and streams nothing.
	Run func(ctx context.Context, r *engine.Run, p Params) (any, error)
	// Topic, optional, returns what a run is about in one line (spark's
	// topic, chaos's prompt, a debate's query), for batch results and
	// listings.
	Topic func(p Params) string
	// Files, optional, renders a succeeded run as named files (relative
	// slash-separated paths), from its record alone. Mock runs must say so
	// in them.
	Files func(run *madspark.Run) (map[string][]byte, error)
	// Prepare, optional, completes decoded parameters before they are
	// validated (Decode calls it): it fixes what a client may leave to
	// chance but a replay must repeat, such as chaos's random seed. given
	// reports whether the client set a top-level field.
	Prepare func(p Params, given func(field string) bool)
	// Document, optional, lays a succeeded run out as a document, from its
	// record alone: the exports in Markdown and PDF are rendered from it.
	// Mock runs must say so in its Notice.
	Document func(run *madspark.Run) (*document.Document, error)
	// Table, optional, flattens a succeeded run into rows under a header,
	// for the CSV export: one row per idea, grade or handoff, with every
	// score as its own column.
	Table func(run *madspark.Run) (header []string, rows [][]string, err error)
	// QueryParam, optional, names the top-level string parameter that one
	// line of text fills (spark's topic, chaos's prompt, debate's query,
	// assess's idea), the others taking their defaults, so that a chat
	// client can run the pipeline.
	QueryParam string
	// Ideas, optional, lists the ideas of a succeeded run that a user can
	// bookmark (spark's candidates, chaos's accepted ideas), in the order
	// the run presents them, from its record alone.
	Ideas func(run *madspark.Run) ([]Idea, error)
	// Schema, optional, is the JSON Schema of the parameters, for a
	// pipeline whose parameters are only known at run time (a pipeline
	// file's inputs). When set, it is used as it is instead of being
	// derived from the Params type, and NewParams may return any pointer
	// that encoding/json decodes into (a pointer to a map); the schema's
	// defaults should be those NewParams gives.
	Schema json.RawMessage
	// Result, optional, is the type of the results Run returns (a struct
	// or a pointer to one); the registry derives from it the JSON Schema
	// that Registry.ResultSchema gives clients, such as an MCP tool's
	// output schema.
	Result reflect.Type
	// ResultSchema, optional, is the JSON Schema of the results, for a
	// pipeline whose results are only known at run time (a pipeline
	// file's agents); when set, it is used as it is instead of being
	// derived from Result.
	ResultSchema json.RawMessage
	// Verdict, optional, says whether a succeeded run's result passed the
	// pipeline's own check (a proposal's quality control), from its record
	// alone, for the run's page and listings; nil when it has nothing to
	// judge.
	Verdict func(run *madspark.Run) (*Verdict, error)
}

// Verdict is a pipeline's own judgement of a run's result, beside the
// run's status: a proposal succeeds whether or not it passed its quality
// control, and says which.
type Verdict struct {
	// Check names what judged the result, in words ("quality control").
	Check string `json:"check"`
	// Passed says whether the result passed it.
	Passed bool `json:"passed"`
	// Note says why, in one line ("not passed after 3 refinements:
	// feasibility 0.42 is below 0.70").
	Note string `json:"note"`
}

// Idea is an idea of a run, as a bookmark keeps it.
type Idea struct {
	Text string
	// Improved is the improved version of the idea, if the pipeline
	// improves ideas.
	Improved      string
	Score         float64
	ImprovedScore float64
	// Topic and Context are what the run was asked.
	Topic   string
	Context string
	// Temperature is the temperature the idea was generated at.
	Temperature float64
}

// ErrUnknown is wrapped by the errors for a pipeline that is not registered.
var ErrUnknown = errors.New("unknown pipeline")

// ParamsError is a problem with a pipeline's parameters. Field names the
// parameter in dotted form ("temperatures.generate") when the problem is
// tied to one. Malformed tells a request that is not well-formed (invalid
// JSON, not an object, an unknown field, a value of the wrong type) from
// one with a value out of range or inconsistent with another.
type ParamsError struct {
	Pipeline  string
	Field     string
	Malformed bool
	Err       error
}

func (e *ParamsError) Error() string {
	msg := e.Err.Error()
	// A Validate error names its field itself.
	if e.Field != "" && !strings.HasPrefix(msg, e.Field+" ") && !strings.HasPrefix(msg, e.Field+":") {
		return fmt.Sprintf("%s parameters: %s: %s", e.Pipeline, e.Field, msg)
	}
	return fmt.Sprintf("%s parameters: %s", e.Pipeline, msg)
}

func (e *ParamsError) Unwrap() error { return e.Err }

// entry is a registered definition with its parameters' schema.
type entry struct {
	def    Definition
	schema json.RawMessage
	v      *validator.Schema
	// fields are the top-level parameters' names.
	fields []string
	// result is the result schema; nil for none.
	result json.RawMessage
}

// Registry holds the registered pipelines. It is safe for concurrent use.
type Registry struct {
	mu   sync.RWMutex
	defs map[string]*entry
	// maxPrompt bounds the text of one run's parameters; 0 means
	// input.DefaultMaxPromptBytes.
	maxPrompt int
}

// LimitPrompt sets the most text, in bytes, that Decode accepts in one
// run's parameters (input.TextBytes: the query, instructions, history and
// every other text together); 0 means input.DefaultMaxPromptBytes.
func (r *Registry) LimitPrompt(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxPrompt = n
}

func (r *Registry) promptLimit() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.maxPrompt
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{defs: map[string]*entry{}} }

var validName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// Register adds d. It fails if the name is invalid or taken, if NewParams or
// Run is missing, or if the parameters' or the result's JSON Schema cannot
// be derived.
func (r *Registry) Register(d Definition) error {
	if !validName.MatchString(d.Name) {
		return fmt.Errorf("pipeline: register %q: the name must be lower-case letters, digits, _ or -, starting with a letter", d.Name)
	}
	if d.NewParams == nil || d.Run == nil {
		return fmt.Errorf("pipeline: register %s: NewParams and Run are required", d.Name)
	}
	p := d.NewParams()
	if p == nil || reflect.TypeOf(p).Kind() != reflect.Pointer || (d.Schema == nil && reflect.TypeOf(p).Elem().Kind() != reflect.Struct) {
		return fmt.Errorf("pipeline: register %s: NewParams must return a pointer to a struct, got %T", d.Name, p)
	}
	var schema json.RawMessage
	var v *validator.Schema
	var err error
	if d.Schema != nil {
		schema, v, err = compileParams(d.Schema)
	} else {
		schema, v, err = paramsSchema(d, p)
	}
	if err != nil {
		return fmt.Errorf("pipeline: register %s: %w", d.Name, err)
	}
	result, err := resultSchema(d)
	if err != nil {
		return fmt.Errorf("pipeline: register %s: %w", d.Name, err)
	}
	var props struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &props)
	fields := make([]string, 0, len(props.Properties))
	for f := range props.Properties {
		fields = append(fields, f)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.defs[d.Name]; ok {
		return fmt.Errorf("pipeline: register %s: already registered", d.Name)
	}
	r.defs[d.Name] = &entry{def: d, schema: schema, v: v, fields: fields, result: result}
	return nil
}

func (r *Registry) get(name string) (*entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.defs[name]
	if !ok {
		names := make([]string, 0, len(r.defs))
		for n := range r.defs {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q (registered: %s)", ErrUnknown, name, strings.Join(names, ", "))
	}
	return e, nil
}

// Get returns the pipeline named name, or an error wrapping ErrUnknown.
func (r *Registry) Get(name string) (Definition, error) {
	e, err := r.get(name)
	if err != nil {
		return Definition{}, err
	}
	return e.def, nil
}

// Subject is what a run of the pipeline called name with p is about, in one
// line (its Definition.Topic), for the run's record; "" when the pipeline
// is unknown or does not say.
func (r *Registry) Subject(name string, p Params) string {
	d, err := r.Get(name)
	if err != nil || d.Topic == nil {
		return ""
	}
	return d.Topic(p)
}

// List returns the registered pipelines, sorted by name.
func (r *Registry) List() []Definition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Definition, 0, len(r.defs))
	for _, e := range r.defs {
		out = append(out, e.def)
	}
	slices.SortFunc(out, func(a, b Definition) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Decode turns JSON parameters into the pipeline's Params: it starts from
// the defaults (NewParams), so fields left out keep them, decodes strictly
// and validates. Empty raw or null means the defaults. A value that
// input.Check refuses (a control character, a number that is not finite),
// an unknown field, a value of the wrong type (a whole number its field's
// type cannot hold included), or a value Validate rejects is a
// *ParamsError naming the field; parameters whose text is more than the
// registry's limit (LimitPrompt) are a malformed *ParamsError wrapping an
// *input.PromptError, before Validate; an unknown pipeline wraps
// ErrUnknown.
func (r *Registry) Decode(name string, raw json.RawMessage) (Params, error) {
	e, err := r.get(name)
	if err != nil {
		return nil, err
	}
	p := e.def.NewParams()
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		inst, err := validator.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, &ParamsError{Pipeline: name, Malformed: true, Err: fmt.Errorf("invalid JSON: %w", err)}
		}
		obj, ok := inst.(map[string]any)
		if !ok {
			return nil, &ParamsError{Pipeline: name, Malformed: true, Err: errors.New("parameters must be a JSON object")}
		}
		// Text and numbers first, on the values as sent.
		if err := input.Check(inst); err != nil {
			pe := &ParamsError{Pipeline: name, Err: err}
			if ie, ok := errors.AsType[*input.Error](err); ok {
				pe.Field = ie.Field
			}
			return nil, pe
		}
		// A null member is one left out: its default applies (an empty
		// list for an optional list), as when a client sends a form's
		// empty field as null, or params stored from a nil slice.
		if dropNulls(obj) {
			if raw, err = json.Marshal(obj); err != nil {
				return nil, &ParamsError{Pipeline: name, Malformed: true, Err: err}
			}
		}
		if err := e.v.Validate(inst); err != nil {
			return nil, e.schemaError(name, raw, fieldError(name, err))
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(p); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, &ParamsError{Pipeline: name, Field: te.Field, Malformed: true, Err: fmt.Errorf("want %s, got %s", te.Type, te.Value)}
			}
			pe := &ParamsError{Pipeline: name, Malformed: true, Err: err}
			if ie, ok := errors.AsType[*input.Error](err); ok {
				pe.Field = ie.Field
			}
			return nil, pe
		}
		// Before Validate, which may compile a schema.
		if err := input.CheckPrompt(input.TextBytes(p), r.promptLimit()); err != nil {
			return nil, &ParamsError{Pipeline: name, Malformed: true, Err: err}
		}
		if e.def.Prepare != nil {
			e.def.Prepare(p, func(field string) bool { _, ok := obj[field]; return ok })
		}
	} else if e.def.Prepare != nil {
		e.def.Prepare(p, func(string) bool { return false })
	}
	if err := p.Validate(); err != nil {
		return nil, &ParamsError{Pipeline: name, Field: leadingField(err.Error(), e.fields), Err: err}
	}
	return p, nil
}

// schemaError returns err, the schema's objection to raw, unless it is a
// value out of range or the like that Validate objects to as well, naming
// the same field: then Validate's message, the one the command line gives
// for the same value, so that every path says the same.
func (e *entry) schemaError(name string, raw json.RawMessage, err *ParamsError) error {
	if err.Malformed || errors.Is(err.Err, errRequired) {
		return err
	}
	p := e.def.NewParams()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(p) != nil {
		return err
	}
	if e.def.Prepare != nil {
		e.def.Prepare(p, func(string) bool { return true })
	}
	if verr := p.Validate(); verr != nil && err.Field != "" && (strings.HasPrefix(verr.Error(), err.Field+" ") || strings.HasPrefix(verr.Error(), err.Field+":")) {
		return &ParamsError{Pipeline: name, Field: err.Field, Err: verr}
	}
	return err
}

// errRequired is the error of a required parameter left out.
var errRequired = errors.New("is required")

// dropNulls removes the members whose value is null from obj and from the
// objects within it (in lists too), and reports whether it removed any.
func dropNulls(v any) bool {
	dropped := false
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			if m == nil {
				delete(x, k)
				dropped = true
			} else if dropNulls(m) {
				dropped = true
			}
		}
	case []any:
		for _, m := range x {
			if dropNulls(m) {
				dropped = true
			}
		}
	}
	return dropped
}

// leadingField returns the parameter a Validate message starts with
// ("num_top_candidates must be 1..5"), or "" when it starts with none.
func leadingField(msg string, fields []string) string {
	word, _, _ := strings.Cut(msg, " ")
	word = strings.TrimRight(word, ":,")
	for _, f := range fields {
		if word == f {
			return f
		}
	}
	return ""
}

// ParamsSchema returns the JSON Schema of the pipeline's parameters, derived
// from its Params type as package structured derives reply schemas
// (jsonschema struct tags add ranges and enums), with each property's
// default value: what a property left out takes. Only fields tagged
// `jsonschema:"required"` are required, and they have no default; a field
// Prepare fills (chaos's random seed) has none either. Every parameter a
// person sets has a title and a description (struct tags). No other
// property is allowed.
func (r *Registry) ParamsSchema(name string) (json.RawMessage, error) {
	e, err := r.get(name)
	if err != nil {
		return nil, err
	}
	return append(json.RawMessage(nil), e.schema...), nil
}

// Defaults returns the default values of the pipeline's top-level
// parameters as the schema gives them, as one JSON object: what a request
// that leaves them out gets. Required parameters are not in it.
func (r *Registry) Defaults(name string) (json.RawMessage, error) {
	e, err := r.get(name)
	if err != nil {
		return nil, err
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(e.schema, &s); err != nil {
		return nil, fmt.Errorf("defaults of %s: %w", name, err)
	}
	out := map[string]json.RawMessage{}
	for k, p := range s.Properties {
		if len(p.Default) > 0 {
			out[k] = p.Default
		}
	}
	return json.Marshal(out)
}

// paramsSchema derives and compiles the schema of the parameters of d,
// with the defaults NewParams gives (completed by Prepare) as each
// property's default, nested ones included. A required property has no
// default, nor has one that Prepare fills differently each time (chaos's
// random seed), nor one whose default is null.
func paramsSchema(d Definition, p Params) (json.RawMessage, *validator.Schema, error) {
	rf := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true, RequiredFromJSONSchemaTags: true}
	s := rf.ReflectFromType(reflect.TypeOf(p).Elem())
	s.Version = ""
	prepared := func() map[string]any {
		q := d.NewParams()
		if d.Prepare != nil {
			d.Prepare(q, func(string) bool { return false })
		}
		var m map[string]any
		if b, err := json.Marshal(q); err == nil {
			_ = json.Unmarshal(b, &m)
		}
		return m
	}
	setDefaults(s, prepared(), prepared())
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("parameters schema: %w", err)
	}
	return compileParams(raw)
}

// compileParams compiles raw, a parameters schema.
func compileParams(raw json.RawMessage) (json.RawMessage, *validator.Schema, error) {
	raw = append(json.RawMessage(nil), raw...)
	doc, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("parameters schema: %w", err)
	}
	c := structured.NewCompiler()
	if err := c.AddResource("mem:///params.json", doc); err != nil {
		return nil, nil, fmt.Errorf("parameters schema: %w", err)
	}
	v, err := c.Compile("mem:///params.json")
	if err != nil {
		return nil, nil, fmt.Errorf("parameters schema: %w", err)
	}
	return raw, v, nil
}

// setDefaults gives each property of s the value a and b (two preparations
// of the defaults) agree on as its default, unless it is required, has a
// default already or its value is null; it descends into objects, required
// ones included.
func setDefaults(s *jsonschema.Schema, a, b map[string]any) {
	if s.Properties == nil {
		return
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		va, oka := a[pair.Key]
		vb, okb := b[pair.Key]
		if !oka || !okb || va == nil || !reflect.DeepEqual(va, vb) {
			continue
		}
		if pair.Value.Default == nil && !slices.Contains(s.Required, pair.Key) {
			pair.Value.Default = va
		}
		ma, _ := va.(map[string]any)
		mb, _ := vb.(map[string]any)
		setDefaults(pair.Value, ma, mb)
	}
}

// fieldError turns a schema violation into a ParamsError naming the first
// offending field.
func fieldError(pipeline string, err error) *ParamsError {
	var ve *validator.ValidationError
	if !errors.As(err, &ve) {
		return &ParamsError{Pipeline: pipeline, Err: err}
	}
	// Of the violations, name an unknown field or a wrong type first:
	// they explain the others (a misspelt field also leaves a required one
	// missing).
	var leaves []*validator.ValidationError
	var walk func(e *validator.ValidationError)
	walk = func(e *validator.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	rank := func(e *validator.ValidationError) int {
		switch e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			return 0
		case *kind.Type:
			return 1
		case *kind.Required:
			return 3
		}
		return 2
	}
	leaf := slices.MinFunc(leaves, func(a, b *validator.ValidationError) int { return rank(a) - rank(b) })
	field := strings.Join(leaf.InstanceLocation, ".")
	join := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	switch k := leaf.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		return &ParamsError{Pipeline: pipeline, Field: join(k.Properties[0]), Malformed: true, Err: errors.New("unknown field")}
	case *kind.Required:
		return &ParamsError{Pipeline: pipeline, Field: join(k.Missing[0]), Err: errRequired}
	case *kind.Type:
		return &ParamsError{Pipeline: pipeline, Field: field, Malformed: true, Err: fmt.Errorf("want %s, got %s", strings.Join(k.Want, " or "), k.Got)}
	}
	return &ParamsError{Pipeline: pipeline, Field: field, Err: errors.New(leaf.ErrorKind.LocalizedString(message.NewPrinter(language.English)))}
}
