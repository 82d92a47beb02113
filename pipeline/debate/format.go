package debate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/madspark/madspark/structured"
)

// Format asks for the answer as a JSON value, as a chat client's
// response_format does: one conforming to Schema, or any JSON object when
// Schema is empty. The answer is read with the project's schema-aligned
// reader (package structured: repairs, one re-ask) and then checked
// against Schema as given; an answer that does not conform fails the run.
type Format struct {
	// Name names the schema to the model: letters, digits, _ and -, at
	// most 64; "answer" when empty.
	Name string `json:"name,omitempty"`
	// Schema is the JSON Schema of the answer.
	Schema Schema `json:"schema,omitempty"`
	// Strict asks the provider to hold the reply to the schema exactly,
	// where it can (OpenAI's strict structured outputs).
	Strict bool `json:"strict,omitempty"`
}

// Schema is a JSON Schema document, kept as its JSON text (the order of
// its properties, which models follow, included).
type Schema json.RawMessage

// MarshalJSON returns s as it is, or null when empty.
func (s Schema) MarshalJSON() ([]byte, error) {
	if len(s) == 0 {
		return []byte("null"), nil
	}
	return s, nil
}

// UnmarshalJSON keeps a copy of data.
func (s *Schema) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*s = nil
		return nil
	}
	*s = append((*s)[0:0], data...)
	return nil
}

// JSONSchema describes a Schema in the parameters' own schema: an object.
func (Schema) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }

// JSONSchema describes a Format in the parameters' own schema as an object
// whose members it leaves to Validate, so that a form built from the schema
// edits it as one JSON value (left empty, there is no format) rather than
// as fields, whose defaults (strict false) would ask for one.
func (Format) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object"}
}

var formatName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// anyObject is the schema of Format without a Schema (JSON mode).
const anyObject = `{"type":"object"}`

// check checks f as a run would read it: its shape, and its schema
// checked and compiled (structured.CheckSchema: bounded, and every
// reference inside it), without keeping it.
func (f *Format) check() error {
	if err := f.shape(); err != nil {
		return err
	}
	name, schema := f.nameAndSchema()
	_, err := compileFormat(name, schema, f.Strict)
	return err
}

// nameAndSchema are the name and schema a run asks for: "answer" and
// any object when f leaves them out.
func (f *Format) nameAndSchema() (string, []byte) {
	name := f.Name
	if name == "" {
		name = "answer"
	}
	schema := []byte(f.Schema)
	if len(schema) == 0 {
		schema = []byte(anyObject)
	}
	return name, schema
}

// shape checks the shape of f, without compiling its schema.
func (f *Format) shape() error {
	if f.Name != "" && !formatName.MatchString(f.Name) {
		return fmt.Errorf("format.name %q: use letters, digits, _ and - (at most 64)", f.Name)
	}
	if len(f.Schema) > 0 {
		var v any
		if err := json.Unmarshal(f.Schema, &v); err != nil {
			return fmt.Errorf("format.schema is not valid JSON: %w", err)
		}
		if _, ok := v.(map[string]any); !ok {
			return errors.New("format.schema must be a JSON Schema object")
		}
	}
	return nil
}

// answerFormat is a Format made ready to read answers with.
type answerFormat struct {
	spec *structured.Spec[map[string]any]
	// full checks the answer against the schema as the client gave it.
	full *validator.Schema
	// wrapped: the schema's root is not an object, so the model was asked
	// for {"value": ...} and the answer is the value.
	wrapped bool
	strict  bool
}

// formats keeps the Formats of recent requests ready, so that a client
// that sends the same schema with every request does not have it compiled
// each time.
type formats struct {
	cache *lru.Cache[[32]byte, *answerFormat]
}

func newFormats() *formats {
	c, _ := lru.New[[32]byte, *answerFormat](256) // only a size < 1 fails
	return &formats{cache: c}
}

// get returns f made ready, from the cache when it was seen before. A
// schema that cannot be read or compiled is an error naming the problem.
func (fs *formats) get(f *Format) (*answerFormat, error) {
	if err := f.shape(); err != nil {
		return nil, err
	}
	name, schema := f.nameAndSchema()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%t\x00", name, f.Strict)
	h.Write(schema)
	var key [32]byte
	h.Sum(key[:0])
	if af, ok := fs.cache.Get(key); ok {
		return af, nil
	}
	af, err := compileFormat(name, schema, f.Strict)
	if err != nil {
		return nil, err
	}
	fs.cache.Add(key, af)
	return af, nil
}

// compileFormat builds the reader of schema and the check of its answers.
// A schema whose root is not an object is wrapped as the "value" property
// of one: the reader reads objects.
func compileFormat(name string, schema []byte, strict bool) (*answerFormat, error) {
	// Bounded, and every reference inside it, before anything compiles it.
	if err := structured.CheckSchema(context.Background(), schema); err != nil {
		return nil, fmt.Errorf("format.schema: %w", err)
	}
	var root map[string]any
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	if err := d.Decode(&root); err != nil {
		return nil, fmt.Errorf("format.schema is not valid JSON: %w", err)
	}
	full, err := structured.CompileSchema(context.Background(), schema)
	if err != nil {
		return nil, fmt.Errorf("format.schema: %w", err)
	}
	af := &answerFormat{full: full, strict: strict}
	readable := schema
	if t, _ := root["type"].(string); t != "object" {
		// Keywords that apply to the whole document stay at its root.
		wrapper := map[string]any{"type": "object", "required": []string{"value"}, "additionalProperties": false}
		inner := map[string]any{}
		for k, v := range root {
			switch k {
			case "$schema", "$id", "$defs", "definitions":
				wrapper[k] = v
			default:
				inner[k] = v
			}
		}
		wrapper["properties"] = map[string]any{"value": inner}
		if readable, err = json.Marshal(wrapper); err != nil {
			return nil, fmt.Errorf("format.schema: %w", err)
		}
		af.wrapped = true
	}
	if af.spec, err = structured.NewSpecFromSchema(name, readable); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "structured: "))
	}
	return af, nil
}

// value is the answer v stands for: v itself, or its "value" when the
// schema was wrapped.
func (af *answerFormat) value(v map[string]any) any {
	if af.wrapped {
		return v["value"]
	}
	return v
}

// check is the reader's last rule: the answer, once repaired, conforms to
// the schema as the client gave it (keywords the reader does not repair,
// such as patterns, included); an answer that does not is sent back once,
// and fails if it still does not.
func (af *answerFormat) check(v *map[string]any, pr *structured.Problems) {
	if err := af.full.Validate(af.value(*v)); err != nil {
		pr.Hard("schema", "the answer does not conform to the schema: "+violations(err))
	}
}

// text returns the JSON text of the answer v.
func (af *answerFormat) text(v map[string]any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(af.value(v)); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// violations lists a validation error's failed rules in one line.
func violations(err error) string {
	var ve *validator.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	p := message.NewPrinter(language.English)
	var leaves []string
	var walk func(e *validator.ValidationError)
	walk = func(e *validator.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) > 3 {
		leaves = append(leaves[:3], fmt.Sprintf("and %d more", len(leaves)-3))
	}
	return strings.Join(leaves, "; ")
}

// CheckFormat reports whether f, if not nil, can be read: its shape, and
// its schema compiled (and kept ready for the run).
func (p *Pipeline) CheckFormat(f *Format) error {
	if f == nil {
		return nil
	}
	_, err := p.formats.get(f)
	return err
}
