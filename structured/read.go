package structured

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/madspark/madspark/llm"
)

// parsed is a reply read against a schema, before a Go type's rules: the
// value in the schema's shape (as encoding/json decodes JSON into an any)
// with the alignments made, or the problems that leave none.
type parsed struct {
	value any
	// fixes, asks and hard are as in aligned; the syntax repairs come
	// first.
	fixes, asks, hard []fixed
	// noJSON: the reply held no JSON value at all; truncated: the reply
	// read was cut off before its end.
	noJSON, truncated bool
	// jsonShaped: the reply is JSON, or mostly JSON, even if unreadable;
	// formatted: it is written in a format beyond JSON with a field of
	// the schema, even if that reading has hard problems. Either is never
	// taken as prose.
	jsonShaped, formatted bool
	// stopped is the context's error when reading was stopped.
	stopped error
}

// parse reads text against n in two stages: the syntax (findCandidates:
// the JSON values of the reply, repaired) and the alignment of each to
// the schema; choose picks the reading among them. When no JSON value
// of the reply is a reading without hard problems, the reply is read in
// the other formats models write (formatCandidates: YAML, label-value
// text, tables).
func parse(ctx context.Context, al *aligner, n *node, text string) parsed {
	al = al.withFuel(len(text))
	cands := findCandidates(ctx, text)
	var best, fallback *parsed
	formatted := false
	shaped := jsonShaped(text, cands)
	if shaped {
		best, fallback = choose(ctx, al, n, text, cands)
	}
	if best == nil && ctx.Err() == nil && !shaped {
		// Text that is not JSON: its JSON fragments and its readings in
		// the other formats are candidates together.
		// Text that is not JSON: read by a JSON value on lines of its
		// own (prose around it), else in the other formats, when it is
		// in one, never by a fragment of it; else by its JSON.
		alone := standalone(text, cands)
		if alone {
			best, fallback = choose(ctx, al, n, text, cands)
		}
		if best == nil {
			if more := formatCandidates(ctx, text); len(more) > 0 {
				for _, c := range more {
					formatted = formatted || declaresAny(n, c.v)
				}
				var fb *parsed
				best, fb = choose(ctx, al, n, text, more)
				if fallback == nil {
					fallback = fb
				}
			} else if !alone {
				best, fallback = choose(ctx, al, n, text, cands)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return parsed{hard: []fixed{{rule: "syntax", action: "reading stopped: " + err.Error()}}, stopped: err}
	}
	if best == nil {
		best = fallback
	}
	if best == nil {
		best = &parsed{noJSON: true}
		msg := ErrNoJSON.Error()
		if strings.TrimSpace(text) == "" {
			msg = "the reply was empty"
		}
		best.hard = []fixed{{rule: "syntax", action: msg}}
	}
	best.jsonShaped, best.formatted = jsonShaped(text, cands), formatted
	return *best
}

// choose aligns each candidate to n and returns the reading to take: among
// the readings without hard problems (complete), the one the reply
// presents as its final or corrected answer, else the last one not
// introduced as an example, else the last one; of candidates that overlap
// (two readings of one part of the reply), the one with the fewest asks,
// then the fewest repairs. best is nil when no reading is complete;
// fallback is then the one with the fewest hard problems, the later on a
// tie, whose problems a re-ask names.
func choose(ctx context.Context, al *aligner, n *node, text string, cands []candidate) (best, fallback *parsed) {
	var complete []spanReading
	// revisions are readings with hard problems that may revise an
	// earlier complete one: objects with a field of the schema, under its
	// name or another, and any value the reply presents as its final or
	// corrected answer, readable or not.
	var revisions []spanReading
	var errCand *candidate // the fallback, when it is a candidate that could not be read
	prevEnd := 0
	for i := range cands {
		if ctx.Err() != nil {
			return nil, nil
		}
		c := &cands[i]
		presented := finalRE.MatchString(text[min(max(prevEnd, c.start-leadIn), c.start):c.start])
		prevEnd = max(prevEnd, c.end)
		if c.err != nil {
			if presented {
				revisions = append(revisions, spanReading{&parsed{fixes: c.fixes, hard: []fixed{{rule: "syntax", action: c.err.Error()}}}, c.start, c.end, c.labels})
			}
			// One hard problem, its message made only if shown.
			if fallback == nil || len(fallback.hard) >= 1 {
				fallback, errCand = nil, c
			}
			continue
		}
		p := &parsed{truncated: c.truncated}
		p.fixes = append(p.fixes, c.fixes...)
		r := al.align(n, c.v, "")
		if r.absent && len(r.hard) == 0 {
			r.problem("missing", "", "the reply holds no value")
		}
		p.value = r.v
		p.fixes = append(p.fixes, r.fixes...)
		p.asks, p.hard = r.asks, r.hard
		if c.truncated && len(p.hard) == 0 {
			p.asks = append(p.asks, fixed{rule: "length", action: "the reply was cut off before its end",
				then: "kept what was complete of a reply cut off before its end"})
		}
		if m, ok := p.value.(map[string]any); ok && c.format && len(m) == 0 && len(p.hard) == 0 && !declaresAny(n, c.v) {
			// Text read as fields of which none is the schema's: prose.
			p.hard = append(p.hard, fixed{rule: "missing", action: "the reply holds no field of the schema"})
		}
		if len(p.hard) == 0 {
			complete = append(complete, spanReading{p, c.start, c.end, c.labels})
			continue
		}
		if presented || declaresAny(n, c.v) || mapsKey(r.fixes) {
			revisions = append(revisions, spanReading{p, c.start, c.end, c.labels})
		}
		hard := 1
		if fallback != nil {
			hard = len(fallback.hard)
		}
		if (fallback == nil && errCand == nil) || len(p.hard) <= hard {
			fallback, errCand = p, nil
		}
	}
	if errCand != nil {
		fallback = &parsed{truncated: errCand.truncated, fixes: errCand.fixes,
			hard: []fixed{{rule: "syntax", action: errCand.err.Error()}}}
	}
	if len(complete) == 0 {
		return nil, fallback
	}
	// Readings that overlap are one part of the reply read two ways: a
	// cluster, whose best reading stands for it.
	type cluster struct {
		best               *parsed
		bestStart, bestEnd int
		bestLabels         bool
		start, end         int
		size               int
	}
	var clusters []cluster
	for _, r := range complete {
		if k := len(clusters) - 1; k >= 0 && r.start < clusters[k].end {
			c := &clusters[k]
			c.size++
			c.end = max(c.end, r.end)
			// Of two readings of one part, the one that reads more of it
			// (a whole text of fields, not a fragment of it), then the
			// one with fewer asks, fewer of the reply set aside, fewer
			// repairs.
			take := false
			switch span, best := r.end-r.start, c.bestEnd-c.bestStart; {
			case len(r.p.asks) != len(c.best.asks):
				take = len(r.p.asks) < len(c.best.asks)
			case span != best:
				take = span > best
			case drops(r.p.fixes) != drops(c.best.fixes):
				take = drops(r.p.fixes) < drops(c.best.fixes)
			case r.labels != c.bestLabels:
				take = !r.labels
			default:
				take = !worseParse(r.p, c.best)
			}
			if take {
				c.best, c.bestStart, c.bestEnd, c.bestLabels = r.p, r.start, r.end, r.labels
			}
			continue
		}
		clusters = append(clusters, cluster{best: r.p, bestStart: r.start, bestEnd: r.end, bestLabels: r.labels, start: r.start, end: r.end, size: 1})
	}
	pick, why := len(clusters)-1, "the last"
	final, examples := -1, 0
	for k := range clusters {
		from := 0
		if k > 0 {
			from = clusters[k-1].end
		}
		lead := text[max(from, clusters[k].start-leadIn):clusters[k].start]
		switch {
		case finalRE.MatchString(lead):
			final = k
		case exampleRE.MatchString(lead):
			examples++
			if k == pick {
				// The last is an example: the last before it that is not.
				for j := k - 1; j >= 0; j-- {
					jfrom := 0
					if j > 0 {
						jfrom = clusters[j-1].end
					}
					if !exampleRE.MatchString(text[max(jfrom, clusters[j].start-leadIn):clusters[j].start]) {
						pick, why = j, "the last not given as an example"
						break
					}
				}
			}
		}
	}
	if final >= 0 {
		pick, why = final, "the one the reply gives as its final or corrected answer"
	}
	// A later value with a field of the schema that cannot be read may
	// be the reply's revision of the one picked: never read around it.
	for _, r := range revisions {
		if r.start >= clusters[pick].end && !exampleRE.MatchString(text[max(clusters[pick].end, r.start-leadIn):r.start]) {
			return nil, r.p
		}
	}
	best = clusters[pick].best
	if clusters[pick].size > 1 && readsApart(complete, clusters[pick].start, clusters[pick].end) {
		return nil, &parsed{hard: []fixed{{rule: "format", action: "the reply reads as two different values, as YAML and as label-value text"}}}
	}
	var record []fixed
	if len(clusters) > 1 {
		record = append(record, fixed{rule: "candidate", action: fmt.Sprintf("%s of %d values in the reply taken (value %d)", why, len(clusters), pick+1)})
	}
	if clusters[pick].size > 1 {
		record = append(record, fixed{rule: "candidate", action: fmt.Sprintf("of %d readings of one part of the reply, the one with the fewest repairs taken", clusters[pick].size)})
	}
	if len(record) > 0 {
		cp := *best
		cp.fixes = append(record, best.fixes...)
		best = &cp
	}
	return best, nil
}

// standalone reports whether a JSON value of the reply stands on lines
// of its own, or in a code fence, rather than inside a line of other text.
func standalone(text string, cands []candidate) bool {
	for _, c := range cands {
		if c.err != nil {
			continue
		}
		if c.fenced {
			return true
		}
		before := strings.TrimRight(text[:c.start], " \t")
		after := strings.TrimLeft(text[c.end:], " \t\r")
		if (before == "" || strings.HasSuffix(before, "\n")) && (after == "" || strings.HasPrefix(after, "\n")) {
			return true
		}
	}
	return false
}

// spanReading is a candidate's reading and where it stands in the reply.
type spanReading struct {
	p          *parsed
	start, end int
	// labels: read as label-value text, which a YAML reading of the
	// same text beats on a tie.
	labels bool
}

// readsApart reports whether the complete readings within [start, end)
// give different values: a text that YAML and label-value text read
// apart ("Note: solar #1" is "solar" in YAML) states no one value. Texts
// that differ only in their white space (a long line folded: YAML joins
// its lines with a space, label-value text with a line break) state the
// same.
func readsApart(complete []spanReading, start, end int) bool {
	var first []byte
	for _, r := range complete {
		if r.start < start || r.end > end {
			continue
		}
		b, _ := json.Marshal(foldSpace(r.p.value))
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			return true
		}
	}
	return false
}

// foldSpace returns a copy of v, an aligned value, with each run of
// white space in its texts one space.
func foldSpace(v any) any {
	switch x := v.(type) {
	case string:
		return strings.Join(strings.Fields(x), " ")
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = foldSpace(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = foldSpace(e)
		}
		return out
	}
	return v
}

// declaresAny reports whether v is an object with a key of n's.
func declaresAny(n *node, v any) bool {
	o, ok := v.(*object)
	if !ok {
		return false
	}
	for _, k := range o.keys {
		if n.declares(k) {
			return true
		}
	}
	return false
}

// mapsKey reports whether fixes map a key of the reply to a field of the
// schema: a value whose fields are under other names holds fields of
// the schema too.
func mapsKey(fixes []fixed) bool {
	for _, f := range fixes {
		if f.rule == "key" {
			return true
		}
	}
	return false
}

// leadIn is how far before a value choose looks for the words that
// present it.
const leadIn = 200

// finalRE and exampleRE are the words that present a value as the
// reply's final answer, or as an example.
var (
	finalRE   = regexp.MustCompile(`(?i)\b(final|corrected|revised|updated|amended|fixed version|instead)\b`)
	exampleRE = regexp.MustCompile(`(?i)\b(?:example|for instance|e\.g\.|template|such as)`)
)

func worseParse(a, b *parsed) bool {
	x := aligned{fixes: a.fixes, asks: a.asks, hard: a.hard}
	y := aligned{fixes: b.fixes, asks: b.asks, hard: b.hard}
	return x.worse(&y)
}

// jsonShaped reports whether a reply is JSON rather than prose: it starts
// with a bracket, holds a code fence of JSON, or its JSON spans cover at
// least half of it.
func jsonShaped(text string, cands []candidate) bool {
	t := strings.TrimSpace(text)
	if t == "" {
		return false
	}
	if t[0] == '{' || t[0] == '[' {
		return true
	}
	covered := 0
	for _, c := range cands {
		if c.fenced {
			return true
		}
		covered += c.end - c.start
	}
	return covered*2 >= len(t)
}

// hardErr returns the hard problems of p as one error, wrapping
// ErrNoJSON or ErrTruncated where they apply.
func (p *parsed) hardErr() error {
	if len(p.hard) == 0 {
		return nil
	}
	msgs := make([]string, len(p.hard))
	for i, h := range p.hard {
		msgs[i] = h.say()
	}
	msg := strings.Join(msgs, "; ")
	switch {
	case p.stopped != nil:
		return p.stopped
	case p.noJSON:
		if msg == ErrNoJSON.Error() {
			return ErrNoJSON
		}
		return fmt.Errorf("%w: %s", ErrNoJSON, msg)
	case p.truncated:
		return fmt.Errorf("%w: %s", ErrTruncated, msg)
	}
	return errors.New(msg)
}

// read reads text into a T: the syntax, the alignment to the schema, the
// hard schema as a last check, then T's rules and check.
func (s *Spec[T]) read(ctx context.Context, text string, check func(*T, *Problems)) *reading[T] {
	rd := &reading[T]{}
	p := parse(ctx, s.al, s.node, text)
	switch {
	case p.stopped != nil:
		rd.decodeErr = p.stopped
		return rd
	case s.prose != nil && len(p.hard) > 0 && !p.jsonShaped && !p.formatted && strings.TrimSpace(text) != "":
		rd.val = s.prose(strings.TrimSpace(text))
		rd.fixes = append(rd.fixes, fixed{rule: "prose", action: "a reply in prose, not JSON, taken as the answer"})
	case len(p.hard) > 0:
		rd.decodeErr = p.hardErr()
		return rd
	default:
		rd.fixes, rd.asks, rd.aligned = p.fixes, p.asks, p.value
		if err := s.fill(&rd.val, p.value); err != nil {
			rd.decodeErr = err
			return rd
		}
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

// fill checks an aligned value against the hard schema and decodes it
// into dst.
func (s *Spec[T]) fill(dst *T, value any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if err := s.v.Validate(inst); err != nil {
		return schemaError(err)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("does not fit %s: %w", s.name, err)
	}
	return nil
}

// Parsed is what a reply read against a schema gave, as madspark parse
// shows it.
type Parsed struct {
	// Value is the aligned value, with every repair applied; nil when the
	// reply is not usable.
	Value json.RawMessage `json:"value"`
	// Repairs are the alignments and repairs made, in order.
	Repairs []Repair `json:"repairs"`
	// Usable says whether the reply became a value of the schema. A
	// usable reply may still hold problems that the model would be asked
	// to fix once (Asks) before its value is used as it is.
	Usable bool `json:"usable"`
	// Asks are the problems a re-ask would name; Problem, when the reply
	// is not usable, is why, in one line.
	Asks    []string `json:"asks,omitempty"`
	Problem string   `json:"problem,omitempty"`
	// Aligned is the value as the reply held it, aligned to the schema,
	// before the rules of the Spec's type repaired it.
	Aligned json.RawMessage `json:"-"`
}

// Parse reads text as Generate reads a reply, without a call's rules and
// without asking again: the value with the repairs it took, or why there
// is none. Reading stops when ctx is done, with ctx's error as the
// problem.
func (s *Spec[T]) Parse(ctx context.Context, text string) Parsed {
	rd := s.read(ctx, text, nil)
	out := Parsed{Repairs: []Repair{}}
	if err := rd.hardErr(); err != nil {
		out.Problem = oneLine(err.Error())
		return out
	}
	if err := rd.askErr(); err != nil {
		for _, a := range rd.asks {
			out.Asks = append(out.Asks, a.say())
		}
		for _, pr := range rd.probs.list {
			if pr.ask {
				out.Asks = append(out.Asks, pr.msg)
			}
		}
	}
	for _, f := range rd.finish() {
		out.Repairs = append(out.Repairs, Repair{Rule: f.rule, Path: f.path, Action: f.action})
	}
	raw, err := json.Marshal(rd.val)
	if err != nil {
		out.Problem = oneLine(err.Error())
		return out
	}
	out.Value, out.Usable = raw, true
	out.Aligned, _ = json.Marshal(rd.aligned)
	return out
}

// Repair is one change made to read a reply: the rule, where (a JSON
// pointer; "" for the whole reply) and what was done.
type Repair struct {
	Rule   string `json:"rule"`
	Path   string `json:"path"`
	Action string `json:"action"`
}

// Name returns the name of the Spec's schema.
func (s *Spec[T]) Name() string { return s.name }

// Reader reads replies against a schema: a Spec of any type.
type Reader interface {
	// Name is the name of the schema.
	Name() string
	Schema() *llm.Schema
	Parse(ctx context.Context, text string) Parsed
}

// Agent is an agent whose replies are JSON: its name, as requests,
// repairs and the inspector give it ("spark.evaluate"), and the Spec its
// replies are read with.
type Agent struct {
	Name string
	Spec Reader
}
