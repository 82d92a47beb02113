package openaitest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured/replytest"
)

// The shapes a SmallModel gives its replies in, by name. Each keeps every
// value of the reply: a person reads the same answer off it.
const (
	// The values.
	ShapeNumberWords  = "numbers in words or units"        // "8/10", "8.5 out of 10", "7 points", "85%", "seven", "1,200"
	ShapeBoolWords    = "booleans as yes or no"            // "yes", "No", "true"
	ShapeEnumDecor    = "enum values decorated"            // "**approve**", "Approve!", "approve (with minor reservations)"
	ShapeBullets      = "lists as bullet text"             // "- one\n- two", a list of one as its text
	ShapeUnitsInItems = "numbers with units in list items" // "#2", "3rd", "No. 4", "7 points", "+7.5", ".85", "8/10" in an item
	// Unusable: a required text given as a placeholder ("N/A", "",
	// "TBD", "-"), which is no value: the reply must be asked again.
	ShapePlaceholder = "a placeholder for a required text"
	// A required key under a name the schema does not declare
	// ("the_score"): read from it when only one field can be meant, else
	// asked again; never read as null.
	ShapeSynonymKey = "a key under another name"
	ShapeExtraField = "an unknown field added" // {"model_remark": …}
	ShapeKeyStyle   = "keys in another style"  // "Context Summary", "contextSummary", "context-summary"
	// The shape around them.
	ShapeStatusWrappers = "wrappers with status fields" // {"status": "ok", "data": {...}}, one or two deep
	ShapeBareList       = "a bare list"                 // [...] for {"ideas": [...]}
	ShapeWrapper        = "the object under one key"    // {"response": {...}}
	ShapeListAround     = "inside a list of one"        // [{...}]
	// The syntax.
	ShapeTrailingCommas = "trailing commas"
	ShapeComments       = "// comments"
	ShapePython         = "Python literals"                // True, False, None
	ShapeSingleQuotes   = "single quotes"                  // {'title': 'Seed swap'}
	ShapeBareKeys       = "unquoted keys"                  // {title: "Seed swap"}
	ShapeRawQuotes      = "unescaped quotes in list items" // ["a "quoted" word"], [{"title": "a "quoted" word"}]
	// The text around it.
	ShapeDraft = "a draft before the final answer" // another value first, then the answer with a trailing comma
	ShapeTags  = "tags around"                     // a <think> block before it, or <json> tags around it
	ShapeFence = "a code fence"
	ShapeProse = "prose around"
)

// Shapes lists every shape of a SmallModel, in the order they apply.
var Shapes = []string{
	ShapeNumberWords, ShapeBoolWords, ShapeEnumDecor, ShapeBullets, ShapeUnitsInItems, ShapePlaceholder, ShapeSynonymKey,
	ShapeExtraField, ShapeKeyStyle,
	ShapeStatusWrappers, ShapeBareList, ShapeWrapper, ShapeListAround,
	ShapeTrailingCommas, ShapeComments, ShapePython, ShapeSingleQuotes, ShapeBareKeys, ShapeRawQuotes,
	ShapeDraft, ShapeTags, ShapeFence, ShapeProse,
}

// ShapeBoldLabels writes the labels of label-value text in bold:
// "**Score:** 7". It is used with that format alone.
const ShapeBoldLabels = "labels in bold"

// boldLabelRE is a label of label-value text, after its indentation and
// an item's marker.
var boldLabelRE = regexp.MustCompile(`(?m)^([ \t]*(?:\d{1,3}\. |- )?)([A-Za-z][A-Za-z0-9 _'-]{0,59}):( |$)`)

// slips are the shapes that models' replies hold less often than
// their readers must read them every time.
var slips = []string{ShapeUnitsInItems, ShapePlaceholder, ShapeSynonymKey, ShapeStatusWrappers, ShapeRawQuotes, ShapeDraft}

// formatShapes are the shapes of the values that a reply in a format
// beyond JSON (YAML, label-value text, a markdown table) shows too.
var formatShapes = []string{
	ShapeNumberWords, ShapeBoolWords, ShapeEnumDecor, ShapeUnitsInItems, ShapePlaceholder, ShapeSynonymKey,
	ShapeExtraField, ShapeKeyStyle,
}

// SmallModel serves base's replies in the formats and shapes that small
// local models (3B to 8B parameters, decoding without a grammar) write
// JSON in: each reply that is a JSON object or list, to a request that
// carries a JSON Schema (response_format json_schema; see PromptSchemas
// for clients that put the schema in the prompt), is written in one of
// replytest.Formats that can write it — JSON, JSON with JSON5 numbers,
// YAML, label-value text, label-value text with a list of objects as a
// markdown table — in one to three of the Shapes that apply to it (the
// shapes of its values alone, in formats beyond JSON). Every shape keeps
// the reply's value, but ShapePlaceholder, which leaves out a required
// text, and ShapeSynonymKey, which may leave it unclear: a re-ask of a
// reply (a request whose last message but one is that reply) is
// answered in the shapes that keep the value. The formats, shapes, and
// the forms within them are chosen by a hash of the seed and the
// request, so a run is served the same replies each time, and two
// requests, or two seeds, get different ones. Replies without a schema,
// in plain text, or with a fault or chunks of their own are sent as they
// are.
//
// A SmallModel is safe for concurrent use.
type SmallModel struct {
	base func(*ChatRequest) Reply
	seed uint64

	mu  sync.Mutex
	log []Shaped
}

// Shaped is one reply a SmallModel sent.
type Shaped struct {
	// Schema is the name of the request's schema; "" for none.
	Schema string
	// Format is the format the reply was written in, one of
	// replytest.Formats; "" when it was sent as base gave it.
	Format string
	// Shapes are the shapes the reply was sent in; none when it was sent
	// as base gave it.
	Shapes []string
	// Content is the reply sent.
	Content string
	// Unusable: the reply lacks what the schema requires
	// (ShapePlaceholder); a reader must ask again. MayAsk: a reader may
	// ask again (ShapeSynonymKey), or read the value.
	Unusable, MayAsk bool
	// ReaskOf is the index, in Replies, of the reply this one answers
	// the re-ask of; -1 for none.
	ReaskOf int
	// base is base's reply.
	base Reply
}

// NewSmallModel returns a SmallModel serving base's replies, its shapes
// chosen with seed.
func NewSmallModel(base func(*ChatRequest) Reply, seed uint64) *SmallModel {
	return &SmallModel{base: base, seed: seed}
}

// Respond answers req: it is the respond function for NewServer. The
// re-ask of a reply that needed one (Unusable or MayAsk) is answered
// with base's reply to the request asked again, as a model asked again
// gives the answer it meant; base is not called again.
func (m *SmallModel) Respond(req *ChatRequest) Reply {
	var name string
	var schema json.RawMessage
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		name, schema = rf.JSONSchema.Name, rf.JSONSchema.Schema
	}
	shaped := Shaped{Schema: name, ReaskOf: m.reaskOf(req, name)}
	var reply Reply
	if prev, ok := m.reply(shaped.ReaskOf); ok && (prev.Unusable || prev.MayAsk) {
		reply = prev.base
	} else {
		reply = m.base(req)
	}
	shaped.base = reply
	if schema != nil && reply.Fault == nil && reply.Chunks == nil {
		h := fnv.New64a()
		_ = binary.Write(h, binary.LittleEndian, m.seed)
		body := req.Body
		if len(body) == 0 {
			body, _ = json.Marshal(req.Messages)
		}
		h.Write(body)
		rng := rand.New(rand.NewPCG(h.Sum64(), m.seed))
		reply.Content = shape(reply.Content, schema, rng, &shaped)
	}
	shaped.Content = reply.Content
	m.mu.Lock()
	m.log = append(m.log, shaped)
	m.mu.Unlock()
	return reply
}

// reply returns the reply logged at i, if any.
func (m *SmallModel) reply(i int) (Shaped, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 || i >= len(m.log) {
		return Shaped{}, false
	}
	return m.log[i], true
}

// reaskOf returns the index of the reply, to a request for schema name,
// that req asks again for: the one its last message but one, from the
// assistant, repeats; -1 for none.
func (m *SmallModel) reaskOf(req *ChatRequest, name string) int {
	n := len(req.Messages)
	if name == "" || n < 2 || req.Messages[n-2].Role != "assistant" || req.Messages[n-1].Role != "user" {
		return -1
	}
	prev := strings.TrimSpace(req.Messages[n-2].Content)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.log) - 1; i >= 0; i-- {
		if m.log[i].Schema == name && strings.TrimSpace(m.log[i].Content) == prev {
			return i
		}
	}
	return -1
}

// Replies returns every reply sent so far, in order.
func (m *SmallModel) Replies() []Shaped {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Shaped(nil), m.log...)
}

// PromptSchemas returns respond wrapped for clients that describe the
// schema in the system prompt instead of sending it (a client in prompt
// mode): a request without response_format whose system prompt ends with
// one of schemas' hints reaches respond as if it had carried that schema
// as response_format json_schema, so that respond functions that tell
// agents apart by schema name, and SmallModel, serve both kinds of
// clients alike. The request the Server records is left as it was sent.
func PromptSchemas(respond func(*ChatRequest) Reply, schemas ...*llm.Schema) func(*ChatRequest) Reply {
	return func(req *ChatRequest) Reply {
		if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
			if js := SchemaOf(req, schemas...); js != nil {
				cp := *req
				cp.ResponseFormat = &ResponseFormat{Type: "json_schema", JSONSchema: js}
				req = &cp
			}
		}
		return respond(req)
	}
}

// SchemaOf returns the schema req asks for: its response_format
// json_schema, or else the one of schemas whose hint (llm.Schema.Hint) ends
// its system prompt, the longest when several do, the first of them when
// several have the same hint; nil for none.
func SchemaOf(req *ChatRequest, schemas ...*llm.Schema) *JSONSchema {
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		return rf.JSONSchema
	}
	system := req.System()
	var best *llm.Schema
	for _, s := range schemas {
		if s != nil && s.Hint != "" && strings.HasSuffix(system, s.Hint) && (best == nil || len(s.Hint) > len(best.Hint)) {
			best = s
		}
	}
	if best == nil {
		return nil
	}
	return &JSONSchema{Name: best.Name, Schema: json.RawMessage(best.JSON)}
}

// shape writes the JSON reply content, a value of schema, in a format
// and shapes drawn with rng, records them in out, and returns it; content
// that is not a JSON object or list is returned as it is. A re-ask is
// answered in the shapes that keep the value.
func shape(content string, schema json.RawMessage, rng *rand.Rand, out *Shaped) string {
	var v any
	d := json.NewDecoder(strings.NewReader(content))
	d.UseNumber()
	if d.Decode(&v) != nil || d.More() {
		return content
	}
	switch v.(type) {
	case map[string]any, []any:
	default:
		return content
	}
	var root map[string]any
	if json.Unmarshal(schema, &root) != nil {
		return content
	}
	s := &shaper{rng: rng, root: root, v: v, clean: copyValue(v), reask: out.ReaskOf >= 0}
	s.names = map[string]bool{}
	s.collectNames(root, 0)

	format := []string{replytest.FormatJSON, replytest.FormatJSON, replytest.FormatJSON, replytest.FormatJSON5,
		replytest.FormatYAML, replytest.FormatYAML, replytest.FormatLabelValue, replytest.FormatLabelValue, replytest.FormatTable}[rng.IntN(9)]
	var applied []string
	switch format {
	case replytest.FormatYAML, replytest.FormatLabelValue, replytest.FormatTable:
		// The values as models write them in these formats.
		for _, name := range formatShapes {
			if rng.IntN(3) == 0 && s.applies(name) && s.apply(name) {
				applied = append(applied, name)
			}
		}
		if text, ok := replytest.Write(s.v, format); ok {
			switch r := rng.IntN(3); {
			case format == replytest.FormatYAML:
				if r == 0 {
					text = "```yaml\n" + text + "```\n"
					applied = append(applied, ShapeFence)
				}
			default:
				// Labels in bold, or prose around, or both: label-value
				// text as models write it, which YAML does not read.
				if r != 0 {
					text = boldLabelRE.ReplaceAllString(text, "$1**$2:**$3")
					applied = append(applied, ShapeBoldLabels)
				}
				if r != 1 {
					text = "Here is my answer.\n\n" + text + "\nI hope this helps."
					applied = append(applied, ShapeProse)
				}
			}
			out.Format, out.Shapes, out.Unusable, out.MayAsk = format, applied, s.unusable, s.mayAsk
			return text
		}
		// The format cannot write this value plainly: JSON instead.
		format = replytest.FormatJSON
	case replytest.FormatJSON5:
		s.json5 = true
	}

	var usable []int
	for i, name := range Shapes {
		if s.applies(name) {
			usable = append(usable, i)
		}
	}
	rng.Shuffle(len(usable), func(i, j int) { usable[i], usable[j] = usable[j], usable[i] })
	if rng.IntN(2) == 0 {
		// Half the time, one of the slips among them.
		for i, j := range usable {
			if slices.Contains(slips, Shapes[j]) {
				usable[0], usable[i] = usable[i], usable[0]
				break
			}
		}
	}
	usable = usable[:min(len(usable), 1+rng.IntN(3))]
	sort.Ints(usable)
	for _, i := range usable {
		if s.apply(Shapes[i]) {
			applied = append(applied, Shapes[i])
		}
	}
	if s.json5 && !anyValue(s.v, positive) {
		// Every number is written another way now.
		s.json5, format = false, replytest.FormatJSON
	}
	if len(applied) == 0 && !s.json5 {
		s.fence = true
		applied = []string{ShapeFence}
	}
	if s.json5 {
		format = replytest.FormatJSON5
	}
	out.Format, out.Shapes, out.Unusable, out.MayAsk = format, applied, s.unusable, s.mayAsk
	return s.text()
}

// shaper is a reply on its way to its shapes.
type shaper struct {
	rng  *rand.Rand
	root map[string]any // the schema
	v    any            // the value
	// names are the schema's property names, normalised: a wrapper
	// never uses one.
	names map[string]bool
	// The syntax and the text around.
	trailing, comments, python, single, bare, fence, prose bool
	// tags is "think" or "json" for ShapeTags.
	tags string
	// cut: the value is no longer the schema's root (a bare list, a
	// wrapper): the value shapes no longer apply.
	cut bool
	// json5: numbers in JSON5 forms. rawQuotes: the double quotes of
	// list items' texts left unescaped where they can be.
	json5, rawQuotes bool
	// clean is the value as base gave it; draft, when set, is written
	// before the answer, which then presents itself as corrected (lead).
	clean, draft any
	lead         string
	// reask: the reply answers a re-ask, and keeps its value.
	reask bool
	// unusable and mayAsk: see Shaped.
	unusable, mayAsk bool
	// inItem counts the lists that each, or write, is inside of.
	inItem int
}

// applies reports whether shape name can change the reply as it is now.
func (s *shaper) applies(name string) bool {
	switch name {
	case ShapeNumberWords:
		return s.some(func(x any, sc map[string]any) bool {
			_, ok := x.(json.Number)
			return ok && s.isOnly(sc, "number", "integer")
		})
	case ShapeBoolWords:
		return s.some(func(x any, sc map[string]any) bool { _, ok := x.(bool); return ok && s.isOnly(sc, "boolean") })
	case ShapeEnumDecor:
		return s.some(func(x any, sc map[string]any) bool { return s.isEnum(x, sc) })
	case ShapeBullets:
		return s.some(func(x any, sc map[string]any) bool { return s.plainList(x, sc) })
	case ShapeExtraField:
		return s.some(func(x any, sc map[string]any) bool { return s.closedObject(x, sc) })
	case ShapeKeyStyle:
		return s.some(func(x any, sc map[string]any) bool { return s.declaredKeys(x, sc) > 0 })
	case ShapeUnitsInItems:
		return s.some(func(x any, sc map[string]any) bool { return s.itemNumber(x, sc) })
	case ShapePlaceholder:
		return !s.reask && s.some(func(x any, sc map[string]any) bool { return len(s.placeholderKeys(x, sc)) > 0 })
	case ShapeSynonymKey:
		return !s.reask && s.some(func(x any, sc map[string]any) bool { return len(s.requiredKeys(x, sc)) > 0 })
	case ShapeStatusWrappers:
		return !s.cut && s.statusFree()
	case ShapeRawQuotes:
		return !s.single && rawQuotable(s.v, false)
	case ShapeDraft:
		return !s.cut && s.draft == nil && s.redraft(copyValue(s.clean))
	case ShapeBareList:
		return s.soleList() != ""
	case ShapeWrapper:
		return true
	case ShapeListAround:
		return !s.allows(s.root, "array")
	case ShapePython:
		return hasLiteral(s.v)
	case ShapeSingleQuotes:
		return quotable(s.v)
	case ShapeBareKeys:
		return hasKey(s.v)
	case ShapeTrailingCommas, ShapeComments, ShapeTags, ShapeFence, ShapeProse:
		return true
	}
	return false
}

// apply applies shape name, and reports whether it changed the reply.
func (s *shaper) apply(name string) bool {
	switch name {
	case ShapeNumberWords:
		return s.each(func(x any, sc map[string]any) (any, bool) {
			n, ok := x.(json.Number)
			if !ok || !s.isOnly(sc, "number", "integer") {
				return x, false
			}
			return s.numberForm(n, sc)
		})
	case ShapeBoolWords:
		return s.each(func(x any, sc map[string]any) (any, bool) {
			b, ok := x.(bool)
			if !ok || !s.isOnly(sc, "boolean") {
				return x, false
			}
			forms := []string{"no", "No", "NO", "false"}
			if b {
				forms = []string{"yes", "Yes", "YES", "true"}
			}
			return forms[s.rng.IntN(len(forms))], true
		})
	case ShapeEnumDecor:
		return s.each(func(x any, sc map[string]any) (any, bool) {
			if !s.isEnum(x, sc) {
				return x, false
			}
			return s.enumForm(x.(string)), true
		})
	case ShapeBullets:
		first := true
		return s.each(func(x any, sc map[string]any) (any, bool) {
			if !s.plainList(x, sc) || (!first && s.rng.IntN(2) == 0) {
				return x, false
			}
			first = false
			return s.bullets(x.([]any)), true
		})
	case ShapeUnitsInItems:
		return s.eachOne(func(x any, sc map[string]any) bool { return s.itemNumber(x, sc) },
			func(x any, sc map[string]any) any { return s.unitForm(x.(json.Number), sc) })
	case ShapePlaceholder:
		if s.reask {
			return false
		}
		done := s.eachOne(func(x any, sc map[string]any) bool { return len(s.placeholderKeys(x, sc)) > 0 },
			func(x any, sc map[string]any) any {
				keys := s.placeholderKeys(x, sc)
				words := []string{"N/A", "n/a", "TBD", "-", "unknown", "none", ""}
				x.(map[string]any)[keys[s.rng.IntN(len(keys))]] = words[s.rng.IntN(len(words))]
				return x
			})
		s.unusable = s.unusable || done
		return done
	case ShapeSynonymKey:
		if s.reask {
			return false
		}
		done := s.eachOne(func(x any, sc map[string]any) bool { return len(s.requiredKeys(x, sc)) > 0 },
			func(x any, sc map[string]any) any {
				o, keys := x.(map[string]any), s.requiredKeys(x, sc)
				k := keys[s.rng.IntN(len(keys))]
				props, _ := sc["properties"].(map[string]any)
				for _, name := range []string{"the_" + k, k + "_value", "main_value"} {
					if _, declared := props[name]; !declared && o[name] == nil {
						o[name] = o[k]
						delete(o, k)
						break
					}
				}
				return o
			})
		s.mayAsk = s.mayAsk || done
		return done
	case ShapeStatusWrappers:
		if s.cut || !s.statusFree() {
			return false
		}
		s.v = map[string]any{"status": "ok", "data": s.v}
		if s.rng.IntN(2) == 0 {
			s.v = map[string]any{"success": true, "code": json.Number("200"), "response": s.v}
		}
		s.cut = true
		return true
	case ShapeRawQuotes:
		s.rawQuotes = !s.single && rawQuotable(s.v, false)
		return s.rawQuotes
	case ShapeDraft:
		d := copyValue(s.clean)
		if s.cut || s.draft != nil || !s.redraft(d) {
			return false
		}
		s.draft, s.trailing = d, true
		s.lead = []string{"On reflection that is wrong. The corrected answer:", "Let me fix that. Final answer:",
			"Wait, a few values are off. Here it is again:"}[s.rng.IntN(3)]
	case ShapeExtraField:
		done := false
		return s.each(func(x any, sc map[string]any) (any, bool) {
			if done || !s.closedObject(x, sc) {
				return x, false
			}
			done = true
			x.(map[string]any)["model_remark"] = "written quickly, check the numbers"
			return x, true
		})
	case ShapeKeyStyle:
		style := s.rng.IntN(keyStyles)
		return s.each(func(x any, sc map[string]any) (any, bool) {
			o, ok := x.(map[string]any)
			if !ok || s.declaredKeys(x, sc) == 0 {
				return x, false
			}
			props, _ := sc["properties"].(map[string]any)
			out := make(map[string]any, len(o))
			changed := false
			for _, k := range sortedKeys(o) {
				v, nk := o[k], k
				if _, declared := props[k]; declared {
					if forms := replytest.KeyForms(k); len(forms) > style {
						nk = forms[style]
					}
					if _, clash := props[nk]; clash || nk == "" {
						nk = k
					}
				}
				if _, taken := out[nk]; taken {
					nk = k
				}
				changed = changed || nk != k
				out[nk] = v
			}
			return out, changed
		})
	case ShapeBareList:
		key := s.soleList()
		if key == "" {
			return false
		}
		s.v, s.cut = s.v.(map[string]any)[key], true
		return true
	case ShapeWrapper:
		var free []string
		for _, w := range []string{"response", "result", "data", "output", "answer", "json"} {
			if !s.names[normal(w)] {
				free = append(free, w)
			}
		}
		if len(free) == 0 {
			return false
		}
		s.v, s.cut = map[string]any{free[s.rng.IntN(len(free))]: s.v}, true
		return true
	case ShapeListAround:
		s.v, s.cut = []any{s.v}, true
		return true
	case ShapeTrailingCommas:
		s.trailing = true
	case ShapeComments:
		s.comments = true
	case ShapePython:
		s.python = hasLiteral(s.v)
		return s.python
	case ShapeSingleQuotes:
		s.single = quotable(s.v)
		return s.single
	case ShapeBareKeys:
		s.bare = hasKey(s.v)
		return s.bare
	case ShapeTags:
		s.tags = []string{"think", "json"}[s.rng.IntN(2)]
	case ShapeFence:
		s.fence = true
	case ShapeProse:
		s.prose = true
	}
	return true
}

// some reports whether f holds for a value of the reply, with its schema.
func (s *shaper) some(f func(x any, sc map[string]any) bool) bool {
	found := false
	s.each(func(x any, sc map[string]any) (any, bool) {
		found = found || f(x, sc)
		return x, false
	})
	return found
}

// each replaces every value of the reply that has a schema with what f
// makes of it, depth first, children before their parent, and reports
// whether f changed any.
func (s *shaper) each(f func(x any, sc map[string]any) (any, bool)) bool {
	if s.cut {
		return false
	}
	changed := false
	var walk func(x any, sc map[string]any) any
	walk = func(x any, sc map[string]any) any {
		sc = s.resolve(sc, x)
		switch y := x.(type) {
		case map[string]any:
			props, _ := sc["properties"].(map[string]any)
			for _, k := range sortedKeys(y) {
				v := y[k]
				ps, _ := props[k].(map[string]any)
				if _, declared := props[k]; !declared {
					ps, _ = sc["additionalProperties"].(map[string]any)
				}
				y[k] = walk(v, ps)
			}
		case []any:
			items, _ := sc["items"].(map[string]any)
			s.inItem++
			for i, v := range y {
				y[i] = walk(v, items)
			}
			s.inItem--
		}
		if sc == nil {
			return x
		}
		out, ok := f(x, sc)
		changed = changed || ok
		return out
	}
	s.v = walk(s.v, s.root)
	return changed
}

// resolve returns the schema sc of value x with its local reference
// followed and, of its anyOf or oneOf alternatives, the one alternative
// whose type is x's; nil when it cannot tell.
func (s *shaper) resolve(sc map[string]any, x any) map[string]any {
	for depth := 0; sc != nil && depth < 8; depth++ {
		if ref, ok := sc["$ref"].(string); ok {
			sc = s.ref(ref)
			continue
		}
		alts, _ := sc["anyOf"].([]any)
		if len(alts) == 0 {
			alts, _ = sc["oneOf"].([]any)
		}
		if len(alts) == 0 {
			return sc
		}
		var fit map[string]any
		n := 0
		for _, a := range alts {
			as, _ := a.(map[string]any)
			as = s.resolve(as, x)
			if as != nil && s.allows(as, jsonType(x)) {
				fit, n = as, n+1
			}
		}
		if n != 1 {
			return nil
		}
		return fit
	}
	return sc
}

// ref follows a local reference: "#/$defs/X", "#/definitions/X".
func (s *shaper) ref(ref string) map[string]any {
	var cur any = s.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(part)]
	}
	m, _ := cur.(map[string]any)
	return m
}

// collectNames adds the property names of sc and the schemas inside it.
func (s *shaper) collectNames(sc any, depth int) {
	if depth > 16 {
		return
	}
	switch x := sc.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			for k := range props {
				s.names[normal(k)] = true
			}
		}
		for _, v := range x {
			s.collectNames(v, depth+1)
		}
	case []any:
		for _, v := range x {
			s.collectNames(v, depth+1)
		}
	}
}

// types returns the JSON types sc allows; nil for any.
func types(sc map[string]any) []string {
	switch t := sc["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	if _, ok := sc["properties"]; ok {
		return []string{"object"}
	}
	return nil
}

func (s *shaper) allows(sc map[string]any, t string) bool {
	ts := types(sc)
	if ts == nil {
		return true
	}
	for _, x := range ts {
		if x == t || (x == "number" && t == "integer") {
			return true
		}
	}
	return false
}

// isOnly reports whether sc allows some of want and nothing else but
// null.
func (s *shaper) isOnly(sc map[string]any, want ...string) bool {
	ts := types(sc)
	found := false
	for _, t := range ts {
		switch {
		case t == "null":
		case contains(want, t):
			found = true
		default:
			return false
		}
	}
	return found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *shaper) isEnum(x any, sc map[string]any) bool {
	str, ok := x.(string)
	if !ok || !s.isOnly(sc, "string") {
		return false
	}
	enum, _ := sc["enum"].([]any)
	for _, e := range enum {
		if e == str {
			return true
		}
	}
	return false
}

// bulletLike matches a text that a reader would take for a list line.
var bulletLike = regexp.MustCompile(`^\s*(?:[-*•‣◦▪·–—+]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)])\s`)

// plainList reports whether x is a non-empty list of one-line texts, each
// written plainly, for a list of texts.
func (s *shaper) plainList(x any, sc map[string]any) bool {
	list, ok := x.([]any)
	if !ok || len(list) == 0 || !s.isOnly(sc, "array") {
		return false
	}
	items, _ := sc["items"].(map[string]any)
	if items == nil || !s.isOnly(items, "string") {
		return false
	}
	for _, it := range list {
		str, ok := it.(string)
		if !ok || str == "" || strings.TrimSpace(str) != str || strings.ContainsAny(str, "\r\n") || bulletLike.MatchString(str) {
			return false
		}
	}
	return true
}

// closedObject reports whether x is an object whose schema declares its
// properties and no others, none of them like the field ShapeExtraField
// adds.
func (s *shaper) closedObject(x any, sc map[string]any) bool {
	if _, ok := x.(map[string]any); !ok {
		return false
	}
	props, _ := sc["properties"].(map[string]any)
	if len(props) == 0 {
		return false
	}
	if ap, ok := sc["additionalProperties"]; ok && ap != false {
		return false
	}
	for k := range props {
		if strings.Contains(normal(k), "remark") || strings.Contains("modelremark", normal(k)) {
			return false
		}
	}
	return true
}

// declaredKeys counts the keys of x that its schema declares.
func (s *shaper) declaredKeys(x any, sc map[string]any) int {
	o, ok := x.(map[string]any)
	if !ok {
		return 0
	}
	props, _ := sc["properties"].(map[string]any)
	n := 0
	for k := range o {
		if _, ok := props[k]; ok {
			n++
		}
	}
	return n
}

// soleList returns the key of the reply's only member when it is the
// root schema's one list (its key perhaps in another style) and every
// other property is optional.
func (s *shaper) soleList() string {
	o, ok := s.v.(map[string]any)
	if s.cut || !ok || len(o) != 1 {
		return ""
	}
	props, _ := s.root["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := s.root["required"].([]any); ok {
		for _, x := range r {
			if k, ok := x.(string); ok {
				req[k] = true
			}
		}
	}
	list := ""
	for k, p := range props {
		ps, _ := p.(map[string]any)
		ps = s.resolve(ps, []any{})
		switch {
		case ps != nil && s.isOnly(ps, "array"):
			if list != "" {
				return ""
			}
			list = k
		case req[k]:
			return ""
		}
	}
	for k, v := range o {
		if _, ok := v.([]any); ok && list != "" && normal(k) == normal(list) {
			return k
		}
	}
	return ""
}

// anyValue reports whether f holds for x or a value inside it.
func anyValue(x any, f func(any) bool) bool {
	if f(x) {
		return true
	}
	switch y := x.(type) {
	case map[string]any:
		for _, v := range y {
			if anyValue(v, f) {
				return true
			}
		}
	case []any:
		for _, v := range y {
			if anyValue(v, f) {
				return true
			}
		}
	}
	return false
}

// quotable reports whether every text of x, keys included, can go between
// single quotes as it is: none holds a quote or a backslash.
func quotable(x any) bool {
	bad := func(t string) bool { return strings.ContainsAny(t, `'"\`) }
	return !anyValue(x, func(v any) bool {
		switch y := v.(type) {
		case string:
			return bad(y)
		case map[string]any:
			return slices.ContainsFunc(sortedKeys(y), bad)
		}
		return false
	})
}

// identRE matches the keys that may go unquoted.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// hasKey reports whether x holds an object key that may go unquoted.
func hasKey(x any) bool {
	return anyValue(x, func(v any) bool {
		m, ok := v.(map[string]any)
		return ok && slices.ContainsFunc(sortedKeys(m), identRE.MatchString)
	})
}

// hasLiteral reports whether x holds a boolean or a null.
func hasLiteral(x any) bool {
	return anyValue(x, func(v any) bool {
		_, b := v.(bool)
		return v == nil || b
	})
}

var numberNames = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
	"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"}

// numberForm writes n, a value of sc, in words or with a unit.
func (s *shaper) numberForm(n json.Number, sc map[string]any) (any, bool) {
	x, err := n.Float64()
	if err != nil {
		return n, false
	}
	str := n.String()
	if strings.ContainsAny(str, "eE") {
		str = strconv.FormatFloat(x, 'f', -1, 64)
	}
	forms := []string{str + " points"}
	lo, hasLo := sc["minimum"].(float64)
	hi, hasHi := sc["maximum"].(float64)
	if hasHi && hi > 0 && x >= 0 && x <= hi && (!hasLo || lo <= x) {
		top := strconv.FormatFloat(hi, 'f', -1, 64)
		forms = append(forms, str+"/"+top, str+" out of "+top)
	}
	if hasHi && hi <= 1 && hasLo && lo >= 0 {
		if k := math.Round(x * 100); k/100 == x {
			forms = append(forms, strconv.FormatFloat(k, 'f', -1, 64)+"%")
		}
	}
	if x == math.Trunc(x) && x >= 0 && x <= 20 {
		forms = append(forms, numberNames[int(x)])
	}
	if x == math.Trunc(x) && math.Abs(x) >= 1000 && math.Abs(x) < 1e15 {
		forms = append(forms, thousands(int64(x)))
	}
	return forms[s.rng.IntN(len(forms))], true
}

// thousands writes n with commas between its groups of three digits.
func thousands(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	digits := strconv.FormatInt(n, 10)
	var groups []string
	for len(digits) > 3 {
		groups = append([]string{digits[len(digits)-3:]}, groups...)
		digits = digits[:len(digits)-3]
	}
	return sign + strings.Join(append([]string{digits}, groups...), ",")
}

// enumForm decorates the enum value v: another case, emphasis,
// punctuation, a qualifier.
func (s *shaper) enumForm(v string) string {
	spaced := strings.ReplaceAll(v, "_", " ")
	forms := []string{"**" + v + "**", "`" + v + "`", v + ".", v + "!", strings.ToUpper(v)}
	if r := []rune(spaced); len(r) > 0 {
		forms = append(forms, string(unicode.ToUpper(r[0]))+string(r[1:]))
	}
	if len([]rune(v)) > 1 {
		forms = append(forms, spaced+" (with minor reservations)", "**"+spaced+"** — on balance")
	}
	var fresh []string
	for _, f := range forms {
		if f != v {
			fresh = append(fresh, f)
		}
	}
	return fresh[s.rng.IntN(len(fresh))]
}

// bullets writes a list of texts as one text of list lines, or a list of
// one as its text.
func (s *shaper) bullets(list []any) string {
	if len(list) == 1 && s.rng.IntN(3) == 0 {
		return list[0].(string)
	}
	marker := []string{"- ", "* ", "• ", "1. "}[s.rng.IntN(4)]
	var lines []string
	if s.rng.IntN(3) == 0 {
		lines = append(lines, "Here they are:")
	}
	for i, it := range list {
		m := marker
		if m == "1. " {
			m = strconv.Itoa(i+1) + ". "
		}
		lines = append(lines, m+it.(string))
	}
	return strings.Join(lines, "\n")
}

// keyStyles is how many styles replytest.KeyForms writes a key in.
var keyStyles = len(replytest.KeyForms("a_b"))

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// normal is a key in lower case, letters and digits only.
func normal(k string) string {
	var b strings.Builder
	for _, r := range k {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// jsonType names the JSON type of a decoded value.
func jsonType(x any) string {
	switch y := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := strconv.ParseInt(y.String(), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// text writes the reply: the value in its syntax, then the text around.
func (s *shaper) text() string {
	var b bytes.Buffer
	s.write(&b, s.v, 0)
	body := b.String()
	if s.tags == "json" {
		body = "<json>\n" + body + "\n</json>"
	}
	if s.fence {
		body = "```json\n" + body + "\n```"
	}
	if s.draft != nil {
		d, _ := json.Marshal(s.draft)
		body = "A first draft:\n" + string(d) + "\n\n" + s.lead + "\n" + body
	}
	if s.prose {
		body = "Sure! Here is the answer in the format you asked for.\n\n" + body + "\n\nI hope this helps. Let me know if you want any changes."
	}
	if s.tags == "think" {
		body = "<think>\nThe answer should follow the format. I will keep every value as it is and write it out now.\n</think>\n\n" + body
	}
	return body
}

// write writes x as indented JSON in the shaper's syntax: trailing
// commas, comments after members, Python literals, single quotes,
// unquoted keys.
func (s *shaper) write(b *bytes.Buffer, x any, depth int) {
	indent := strings.Repeat("  ", depth+1)
	closing := strings.Repeat("  ", depth)
	switch y := x.(type) {
	case nil:
		b.WriteString(map[bool]string{true: "None", false: "null"}[s.python])
	case bool:
		switch {
		case s.python && y:
			b.WriteString("True")
		case s.python:
			b.WriteString("False")
		default:
			b.WriteString(strconv.FormatBool(y))
		}
	case map[string]any:
		if len(y) == 0 {
			b.WriteString("{}")
			return
		}
		keys := sortedKeys(y)
		b.WriteString("{\n")
		if s.comments && depth == 0 {
			b.WriteString(indent + "// the answer, as asked\n")
		}
		for i, k := range keys {
			b.WriteString(indent)
			if s.bare && identRE.MatchString(k) {
				b.WriteString(k)
			} else {
				s.writeString(b, k)
			}
			b.WriteString(": ")
			s.write(b, y[k], depth+1)
			if i < len(keys)-1 || s.trailing {
				b.WriteByte(',')
			}
			if s.comments && i == 0 {
				b.WriteString(" // " + fmt.Sprintf("%d fields", len(keys)))
			}
			b.WriteByte('\n')
		}
		b.WriteString(closing + "}")
	case []any:
		if len(y) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		if s.comments && depth == 0 {
			b.WriteString(indent + "// the answer, as asked\n")
		}
		s.inItem++
		for i, e := range y {
			b.WriteString(indent)
			s.write(b, e, depth+1)
			if i < len(y)-1 || s.trailing {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		s.inItem--
		b.WriteString(closing + "]")
	case string:
		if raw, ok := replytest.RawQuoted(y); ok && s.rawQuotes && s.inItem > 0 {
			b.WriteString(raw)
			return
		}
		s.writeString(b, y)
	case json.Number:
		if f, err := y.Float64(); err == nil && s.json5 {
			b.WriteString(replytest.JSON5Number(f))
		} else {
			b.WriteString(y.String())
		}
	default:
		vb, _ := json.Marshal(y)
		b.Write(vb)
	}
}

// writeString writes t as a JSON string, between single quotes for
// ShapeSingleQuotes.
func (s *shaper) writeString(b *bytes.Buffer, t string) {
	var q bytes.Buffer
	enc := json.NewEncoder(&q)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(t)
	out := bytes.TrimSuffix(q.Bytes(), []byte("\n"))
	if s.single {
		out[0], out[len(out)-1] = '\'', '\''
	}
	b.Write(out)
}
