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

// Spec is the structured-output contract of one agent: the JSON Schema of T
// sent to the model, and the rules a reply is read with. A Spec is safe for
// concurrent use once built; its With methods are for building it.
//
// The schema sent is strict (constrained decoders use it). A reply is read
// in two passes. The hard pass decides whether it is usable at all: a JSON
// value can be extracted, required fields are present, and every value has
// its type once coerced. The soft pass repairs what is usable but off:
// strings that are numbers, enum values in another case or a known synonym,
// numbers outside their range (clamped), lists longer than their maximum
// (trimmed), null or missing lists (empty), then T's own rules (Checker) and
// the call's. Every repair is recorded (llm.RecordRepair).
type Spec[T any] struct {
	name     string
	schema   []byte
	root     *jsonschema.Schema
	v        *validator.Schema
	hint     string
	synonyms map[string]string
	prose    func(text string) T
	// prune drops the properties the schema does not declare from a
	// decoded map (a struct drops them itself).
	prune bool
}

// NewSpec derives the JSON Schema of T, named name (letters, digits, _ and -),
// and compiles the validator of its hard rules. Struct fields without
// omitempty are required; additional properties are not allowed (and are
// dropped from replies); tags such as `jsonschema:"minimum=0,maximum=10"` or
// `jsonschema:"enum=pass,enum=fail"` add constraints, which are soft except
// for enums.
func NewSpec[T any](name string) (*Spec[T], error) {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	var zero T
	s := r.ReflectFromType(reflect.TypeOf(zero))
	s.Version = ""
	raw, v, err := compile(name, s)
	if err != nil {
		return nil, err
	}
	return &Spec[T]{name: name, schema: raw, root: s, v: v, hint: describe(s)}, nil
}

// compile encodes schema s, named name, and compiles the validator of its
// hard rules (the schema without its soft keywords).
func compile(name string, s *jsonschema.Schema) ([]byte, *validator.Schema, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	hard, err := relaxed(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(hard))
	if err != nil {
		return nil, nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	c := validator.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	v, err := c.Compile(url)
	if err != nil {
		return nil, nil, fmt.Errorf("structured: compile schema of %s: %w", name, err)
	}
	return raw, v, nil
}

// WithSynonyms maps words a model may use for an enum value onto it, such as
// {"accept": "approve"}; case, spaces, hyphens and underscores are ignored
// anyway. It returns s, and is called while building the Spec.
func (s *Spec[T]) WithSynonyms(m map[string]string) *Spec[T] {
	s.synonyms = m
	return s
}

// WithProse lets a reply with no JSON value in it stand for a T built from
// its text, for agents whose product is prose (a summary, an answer): a
// server without constrained decoding often answers in plain text. It
// returns s, and is called while building the Spec.
func (s *Spec[T]) WithProse(build func(text string) T) *Spec[T] {
	s.prose = build
	return s
}

// Schema returns the llm.Schema to send with a request.
func (s *Spec[T]) Schema() *llm.Schema {
	return &llm.Schema{Name: s.name, JSON: s.schema, Hint: s.hint}
}

// Hint returns the compact description of the expected JSON that goes into
// the prompt of a model that does not enforce schemas.
func (s *Spec[T]) Hint() string { return s.hint }

// Decode reads a reply as Generate does, without a call's rules: it returns
// the value with its repairs applied, or the hard problems as an error.
func (s *Spec[T]) Decode(text string) (T, error) {
	rd := s.read(text, nil)
	if err := rd.hardErr(); err != nil {
		var zero T
		return zero, err
	}
	rd.finish()
	return rd.val, nil
}

// reading is one reply read against the Spec: the value, the repairs made
// while decoding it, and the problems its rules found.
type reading[T any] struct {
	val T
	// decodeErr is a hard problem found before the rules could run.
	decodeErr error
	fixes     []fixed
	asks      []fixed
	probs     Problems
}

func (rd *reading[T]) hardErr() error {
	if rd.decodeErr != nil {
		return rd.decodeErr
	}
	return rd.probs.hardErr()
}

func (rd *reading[T]) askErr() error {
	msgs := make([]string, 0, len(rd.asks))
	for _, a := range rd.asks {
		msgs = append(msgs, a.action)
	}
	if err := rd.probs.askErr(); err != nil {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// finish applies the rules' repairs and returns every repair made, the
// problems only the model could have fixed included, kept as they are.
func (rd *reading[T]) finish() []fixed {
	out := append([]fixed(nil), rd.fixes...)
	for _, a := range rd.asks {
		out = append(out, fixed{rule: a.rule, action: "kept as sent: " + a.action})
	}
	return append(out, rd.probs.apply()...)
}

// read decodes text: extraction, the hard schema, the generic repairs, then
// T's rules and check.
func (s *Spec[T]) read(text string, check func(*T, *Problems)) *reading[T] {
	rd := &reading[T]{}
	data, err := Extract(text)
	switch {
	case err == nil:
		rd.decodeErr = s.decode(rd, data)
	case s.prose != nil && errors.Is(err, ErrNoJSON) && strings.TrimSpace(text) != "":
		rd.val = s.prose(strings.TrimSpace(text))
		rd.fixes = append(rd.fixes, fixed{rule: "prose", action: "a reply in prose, not JSON, taken as the answer"})
	default:
		rd.decodeErr = err
	}
	if rd.decodeErr != nil {
		return rd
	}
	if c, ok := any(&rd.val).(Checker); ok {
		c.Check(&rd.probs)
	}
	if v, ok := any(&rd.val).(Validator); ok {
		rd.probs.fromError(v.Validate())
	}
	if check != nil {
		check(&rd.val, &rd.probs)
	}
	return rd
}

// decode reads the JSON value data into rd.val through the normalizer and
// the hard schema.
func (s *Spec[T]) decode(rd *reading[T], data []byte) error {
	var inst any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&inst); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	n := &normalizer{synonyms: s.synonyms}
	if list, ok := inst.([]any); ok {
		if name, ok := soleList(s.root); ok {
			// A bare list for an object whose one field is that list.
			inst = map[string]any{name: list}
			n.fix("type", "", "a bare list, taken as %q", name)
		}
	}
	inst = n.value(s.root, inst, "")
	rd.fixes, rd.asks = n.fixes, n.asks
	norm, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	vinst, err := validator.UnmarshalJSON(bytes.NewReader(norm))
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if err := s.v.Validate(vinst); err != nil {
		return schemaError(err)
	}
	if err := json.Unmarshal(norm, &rd.val); err != nil {
		return fmt.Errorf("does not fit %s: %w", s.name, err)
	}
	if m, ok := any(&rd.val).(*map[string]any); ok && s.prune {
		pruneUndeclared(s.root, *m)
	}
	return nil
}

// soleList reports the name of the one property of an object schema, when
// that property is a list.
func soleList(s *jsonschema.Schema) (string, bool) {
	if s == nil || s.Type != "object" || s.Properties == nil || s.Properties.Len() == 0 {
		return "", false
	}
	var name string
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		if p.Value != nil && p.Value.Type == "array" {
			if name != "" {
				return "", false
			}
			name = p.Key
		} else if required(s, p.Key) {
			return "", false
		}
	}
	return name, name != ""
}

// ReplyError is returned when a model's reply could not be turned into a
// usable value, even after it was sent back once with the problem.
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
// check, if not nil, adds the rules that depend on the request (such as
// "one score per idea"), reporting to the Problems as T's own Check does.
//
// A reply with hard problems, or with soft ones only the model can fix, is
// sent back once with the problems named; a reply with no JSON in it is sent
// back with a description of the JSON expected, and one cut off at the
// token limit with that said. The second reply is used if it is usable,
// else the first if that was; with neither usable, Generate returns a
// *ReplyError. The repairs of the reply used are applied and each is
// recorded with llm.RecordRepair; only then is the reply accepted into the
// response cache (the request is Deferred). Errors from the client are
// returned wrapped with the agent's name. The usage of every call is
// returned, also on error.
func (s *Spec[T]) Generate(ctx context.Context, c llm.Client, req llm.Request, check func(*T, *Problems)) (T, llm.Usage, error) {
	req.Schema = s.Schema()
	return generate(ctx, c, req, func(text string) *reading[T] { return s.read(text, check) }, s.reask)
}

// Text asks req for a plain-text reply and reads it with check, which may
// report problems and repair the text through its pointer, as a Spec's rules
// do. An empty reply is hard; a reply cut off at the token limit is sent
// back once, asking for a shorter one, and is kept if the second is cut off
// too. Retries, repairs, the cache and errors are as for Spec.Generate.
func Text(ctx context.Context, c llm.Client, req llm.Request, check func(text *string, p *Problems)) (string, llm.Usage, error) {
	var truncated bool
	read := func(text string) *reading[string] {
		rd := &reading[string]{val: strings.TrimSpace(text)}
		if rd.val == "" {
			rd.decodeErr = errors.New("the reply was empty")
			return rd
		}
		if truncated {
			rd.probs.Ask("length", "the reply was cut off at the length limit; write it more concisely",
				func() string { return "kept a reply cut off at the length limit" })
		}
		if check != nil {
			check(&rd.val, &rd.probs)
		}
		return rd
	}
	reask := func(hard, ask error, _ *llm.Response) string {
		msg := ask
		if hard != nil {
			msg = hard
			if ask != nil {
				msg = fmt.Errorf("%w; %v", hard, ask)
			}
		}
		return "Your reply was not acceptable: " + msg.Error() + "\nReply again with the whole corrected text."
	}
	// The truncation of each reply is known only once it arrives.
	tc := llm.ClientFunc(func(ctx context.Context, r *llm.Request) (*llm.Response, error) {
		resp, err := c.Generate(ctx, r)
		truncated = err == nil && resp.Truncated()
		return resp, err
	})
	return generate(ctx, tc, req, read, reask)
}

// generate is the loop of Generate and Text: ask, read, re-ask once, use
// the best usable reply.
func generate[T any](ctx context.Context, c llm.Client, req llm.Request, read func(text string) *reading[T], reask func(hard, ask error, resp *llm.Response) string) (T, llm.Usage, error) {
	var usage llm.Usage
	req.Deferred = true
	req.Messages = append([]llm.Message(nil), req.Messages...)
	var (
		zero      T
		first     *reading[T]
		firstResp *llm.Response
	)
	use := func(rd *reading[T], resp *llm.Response) (T, llm.Usage, error) {
		for _, f := range rd.finish() {
			llm.RecordRepair(ctx, llm.Repair{Agent: req.Agent, Rule: f.rule, Action: f.action})
		}
		resp.Accept()
		return rd.val, usage, nil
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.Generate(ctx, &req)
		if err != nil {
			if first != nil && ctx.Err() == nil {
				// The first reply was usable; only the re-ask failed.
				return use(first, firstResp)
			}
			return zero, usage, fmt.Errorf("%s: %w", req.Agent, err)
		}
		usage.Add(resp.Usage)
		rd := read(resp.Text)
		hard, ask := rd.hardErr(), rd.askErr()
		if hard == nil && (ask == nil || attempt == 1) {
			return use(rd, resp)
		}
		if attempt == 1 || ctx.Err() != nil {
			if first != nil {
				return use(first, firstResp)
			}
			if hard == nil {
				return use(rd, resp)
			}
			if resp.Truncated() {
				hard = fmt.Errorf("%w; the reply was cut off at the length limit", hard)
			}
			return zero, usage, &ReplyError{Agent: req.Agent, Problem: hard, Raw: resp.Text}
		}
		if hard == nil {
			first, firstResp = rd, resp
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: resp.Text},
			llm.Message{Role: llm.RoleUser, Content: reask(hard, ask, resp)},
		)
	}
}

// reask is the message that sends a reply back.
func (s *Spec[T]) reask(hard, ask error, resp *llm.Response) string {
	var b strings.Builder
	b.WriteString("Your reply was not valid: ")
	switch {
	case hard != nil && ask != nil:
		b.WriteString(hard.Error() + "; " + ask.Error())
	case hard != nil:
		b.WriteString(hard.Error())
	default:
		b.WriteString(ask.Error())
	}
	if hard != nil && resp.Truncated() {
		// Asked again as it was, the model would run out of room again.
		b.WriteString("; the reply was cut off at the length limit, so keep every text field shorter")
	}
	if errors.Is(hard, ErrNoJSON) || errors.Is(hard, ErrTruncated) {
		b.WriteString("\nReply with only a JSON value of this shape: " + s.hint)
	} else {
		b.WriteString("\nReply again with only the corrected JSON value, conforming to the schema.")
	}
	return b.String()
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
