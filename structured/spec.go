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
	name   string
	schema []byte
	node   *node
	v      *validator.Schema
	hint   string
	al     *aligner
	prose  func(text string) T
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
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	return newSpec[T](name, raw)
}

// newSpec builds the Spec of the JSON Schema raw.
func newSpec[T any](name string, raw []byte) (*Spec[T], error) {
	if err := CheckSchema(context.Background(), raw); err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	n, err := compileNode(raw)
	if err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	hint, err := boundedHint(n)
	if err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	v, err := compile(name, raw)
	if err != nil {
		return nil, err
	}
	return &Spec[T]{name: name, schema: raw, node: n, v: v, hint: hint, al: newAligner(n, nil)}, nil
}

// compile compiles the validator of the hard rules of schema raw, named
// name: the schema without its soft keywords.
func compile(name string, raw []byte) (*validator.Schema, error) {
	hard, err := relaxed(raw)
	if err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(hard))
	if err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	c := NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	v, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("structured: compile schema of %s: %w", name, compileProblem(err))
	}
	return v, nil
}

// WithSynonyms maps words a model may use for an enum value onto it, such as
// {"accept": "approve"}; case, spaces, hyphens and underscores are ignored
// anyway. It returns s, and is called while building the Spec.
func (s *Spec[T]) WithSynonyms(m map[string]string) *Spec[T] {
	s.al.synonyms = m
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
	rd := s.read(context.Background(), text, nil)
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
	// aligned is the value read, before T's rules.
	aligned any
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
		msgs = append(msgs, a.say())
	}
	if err := rd.probs.askErr(); err != nil {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// finish applies the rules' repairs and returns every repair made, with
// what was done about the problems only the model could have fixed.
func (rd *reading[T]) finish() []fixed {
	out := append([]fixed(nil), rd.fixes...)
	for _, a := range rd.asks {
		out = append(out, fixed{rule: a.rule, path: a.path, action: a.then})
	}
	return append(out, rd.probs.apply()...)
}

// say puts a problem in words for the model: where, then what.
func (f fixed) say() string {
	if f.path == "" {
		return f.action
	}
	return pathName(f.path) + ": " + f.action
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
	return generate(ctx, c, req, func(text string) *reading[T] { return s.read(ctx, text, check) }, s.reask)
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
		if inner, what, ok := textInJSON(rd.val); ok {
			rd.val = inner
			rd.fixes = append(rd.fixes, fixed{rule: "shape", action: what})
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

// textInJSON returns the text of a plain-text reply written as JSON: a
// JSON string, or an object whose one member is a text ({"answer":
// "…"}), whole or in a code fence. Any other reply is prose, kept as it
// is.
func textInJSON(reply string) (text, what string, ok bool) {
	if t := strings.TrimSpace(reply); t == "" || !strings.ContainsRune("{[\"`", rune(t[0])) {
		// Prose: not worth looking for JSON in.
		return "", "", false
	}
	cands := findCandidates(context.Background(), reply)
	if len(cands) != 1 || cands[0].err != nil || !jsonShaped(reply, cands) {
		return "", "", false
	}
	switch v := cands[0].v.(type) {
	case string:
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), "the text of a reply written as a JSON string taken", true
		}
	case *object:
		if len(v.keys) == 1 {
			if s, ok := v.vals[0].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s), fmt.Sprintf("the text inside the JSON wrapper {%q: …} taken", v.keys[0]), true
			}
		}
	}
	return "", "", false
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
			llm.RecordRepair(ctx, llm.Repair{Agent: req.Agent, Rule: f.rule, Path: f.path, Action: f.action})
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
	if resp.Truncated() {
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
