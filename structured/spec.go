package structured

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/madspark/madspark/llm"
)

// Validator is implemented by output types with rules a JSON Schema cannot
// express (cross-field checks, derived values). Validate is called after the
// schema check passes.
type Validator interface {
	Validate() error
}

// Spec is the structured-output contract of one agent: the JSON Schema of T
// and a validator for it. A Spec is safe for concurrent use.
type Spec[T any] struct {
	name   string
	schema []byte
	v      *validator.Schema
}

// NewSpec derives the JSON Schema of T, named name (letters, digits, _ and -),
// and compiles its validator. Struct fields without omitempty are required;
// additional properties are not allowed; tags such as
// `jsonschema:"minimum=0,maximum=10"` or `jsonschema:"enum=pass,enum=fail"`
// add constraints.
func NewSpec[T any](name string) (*Spec[T], error) {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	var zero T
	s := r.ReflectFromType(reflect.TypeOf(zero))
	s.Version = ""
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	c := validator.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	v, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("structured: compile schema of %s: %w", name, err)
	}
	return &Spec[T]{name: name, schema: raw, v: v}, nil
}

// Schema returns the llm.Schema to send with a request.
func (s *Spec[T]) Schema() *llm.Schema {
	return &llm.Schema{Name: s.name, JSON: s.schema}
}

// Decode extracts the JSON value from a reply, validates it against the
// schema and T's Validate method, and unmarshals it.
func (s *Spec[T]) Decode(text string) (T, error) {
	var out T
	data, err := Extract(text)
	if err != nil {
		return out, err
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return out, fmt.Errorf("invalid JSON: %w", err)
	}
	if err := s.v.Validate(inst); err != nil {
		return out, schemaError(err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, fmt.Errorf("does not fit %s: %w", s.name, err)
	}
	if v, ok := any(&out).(Validator); ok {
		if err := v.Validate(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// ReplyError is returned when a model's reply could not be turned into a valid
// value, even after it was sent back once with the problem.
type ReplyError struct {
	// Agent is the agent whose reply failed.
	Agent string
	// Problem is the last validation error.
	Problem error
	// Raw is the last reply, verbatim.
	Raw string
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("%s: invalid reply: %v", e.Agent, e.Problem)
}

func (e *ReplyError) Unwrap() error { return e.Problem }

// Generate sends req with the schema attached and returns the decoded value.
// check, if not nil, adds rules that depend on the request (such as "one
// score per idea"); its error is treated like a schema violation. A reply
// that fails is sent back once, with the assistant's reply and the error in
// the conversation; a second failure returns a *ReplyError. Errors from the
// client are returned wrapped with the agent's name. A reply cut off at the
// token limit that does not decode is sent back with that said, so that the
// next one is shorter. The usage of every call is returned, also on error.
func (s *Spec[T]) Generate(ctx context.Context, c llm.Client, req llm.Request, check func(*T) error) (T, llm.Usage, error) {
	var usage llm.Usage
	req.Schema = s.Schema()
	req.Messages = append([]llm.Message(nil), req.Messages...)
	var zero T
	for attempt := 0; ; attempt++ {
		resp, err := c.Generate(ctx, &req)
		if err != nil {
			return zero, usage, fmt.Errorf("%s: %w", req.Agent, err)
		}
		usage.Add(resp.Usage)
		out, err := s.Decode(resp.Text)
		if err == nil && check != nil {
			err = check(&out)
		}
		if err == nil {
			return out, usage, nil
		}
		if resp.Truncated() {
			// Asked again as it was, the model would run out of room again.
			err = fmt.Errorf("%w; the reply was cut off at the length limit, so keep every text field shorter", err)
		}
		if attempt == 1 || ctx.Err() != nil {
			return zero, usage, &ReplyError{Agent: req.Agent, Problem: err, Raw: resp.Text}
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: resp.Text},
			llm.Message{Role: llm.RoleUser, Content: "Your reply was not valid: " + err.Error() +
				"\nReply again with only the corrected JSON value, conforming to the schema."},
		)
	}
}

// schemaError flattens a validation error into one line listing each
// violated rule with its location.
func schemaError(err error) error {
	var ve *validator.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	p := message.NewPrinter(language.English)
	var leaves []string
	var walk func(e *validator.ValidationError)
	walk = func(e *validator.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	const max = 5
	if len(leaves) > max {
		leaves = append(leaves[:max], fmt.Sprintf("and %d more", len(leaves)-max))
	}
	return errors.New("schema violation " + strings.Join(leaves, "; "))
}
