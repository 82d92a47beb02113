package openaitest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
	"github.com/madspark/madspark/structured/replytest"
)

// A ShapeCheck runs a pipeline through an OpenAI-compatible client against
// a Server twice for each way the client sends schemas: once with Base's
// replies as they are, then with every reply in the formats and shapes of
// a SmallModel (one run per seed). It checks that the shaped run
// completes, that its result holds what the clean run's holds once
// repairs, usage, timing, ids and timestamps are set aside (the same
// scores on the same ideas, every list item), that the shapes were
// recorded as repairs and each reply's format beyond JSON by a repair
// naming it, and that the calls are the clean run's and the re-asks of
// the replies that needed one: every reply with a placeholder for a
// required text asked again, no other reply but one with a key under
// another name, and no re-ask of a re-ask.
type ShapeCheck struct {
	// Base returns a respond function answering every agent well. It is
	// called once per run, so that respond functions with a state (the
	// n-th reply of an agent) start afresh.
	Base func() func(*ChatRequest) Reply
	// Agents are the pipeline's agents whose replies are JSON; a client
	// that puts their schemas in the system prompt is answered as one
	// that sends them (see PromptSchemas).
	Agents []structured.Agent
	// Run runs the pipeline through a client of srv that sends schemas
	// the way mode says (the client's setting: "native", "prompt" or
	// "both"), and returns its result, the repairs it recorded and its
	// error.
	Run func(t *testing.T, srv *Server, mode string) (result any, repairs []llm.Repair, err error)
	// Drop names more fields of the result, at any depth, that differ
	// from run to run whatever the replies (ids of the pipeline's own).
	Drop []string
	// Seeds is the number of shaped runs for each mode; 5 when 0. Their
	// seeds come from the test's name and the agents' names: the same
	// each time, others for each test.
	Seeds int
}

// dropped are the fields of a result that Content sets aside at any
// depth: repairs, usage, timing, run ids and timestamps.
var dropped = []string{"repairs", "usage", "run_id", "duration", "elapsed", "timestamp"}

// droppedSuffixes end the names of more fields that Content sets aside:
// usage ("judge_usage"), times in milliseconds ("wall_ms") and moments
// ("created_at").
var droppedSuffixes = []string{"_usage", "_ms", "_at"}

// alignments are the repair rules of a reply's syntax and its alignment to
// the schema: what the shapes are recorded as.
var alignments = map[string]bool{"format": true, "candidate": true, "syntax": true, "shape": true, "key": true, "type": true, "enum": true, "split": true, "extra": true}

// formatNames are the words that the repair recording a format beyond
// JSON holds.
var formatNames = map[string]string{
	replytest.FormatJSON5:      "JSON5 numbers",
	replytest.FormatYAML:       "read as YAML",
	replytest.FormatLabelValue: "read as label-value text",
	replytest.FormatTable:      "markdown table",
}

// NamesFormat reports whether one of actions, the actions of a reply's
// repairs, names format, one of replytest.Formats: "read as YAML", "read
// as label-value text", a list "read as a markdown table", "JSON5
// numbers"; always for JSON.
func NamesFormat(actions []string, format string) bool {
	name, ok := formatNames[format]
	if !ok {
		return true
	}
	for _, a := range actions {
		if strings.Contains(a, name) {
			return true
		}
	}
	return false
}

// Check runs the check for each mode, each a subtest.
func (c ShapeCheck) Check(t *testing.T, modes ...string) {
	t.Helper()
	total := &tally{formats: map[string]int{}, shapes: map[string]int{}}
	defer func() { t.Logf("over %s", total) }()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			clean := c.once(t, mode, nil)
			if clean.err != nil {
				t.Fatalf("the clean run failed: %v", clean.err)
			}
			for _, r := range clean.repairs {
				if alignments[r.Rule] || r.Rule == "prose" {
					t.Fatalf("the clean run needed an alignment: %+v", r)
				}
			}
			want, err := Content(clean.result, c.Drop...)
			if err != nil {
				t.Fatal(err)
			}
			seeds := c.Seeds
			if seeds == 0 {
				seeds = 5
			}
			for i := range seeds {
				h := fnv.New64a()
				for _, a := range c.Agents {
					fmt.Fprintln(h, a.Name)
				}
				fmt.Fprintf(h, "%s/%d", t.Name(), i)
				seed := h.Sum64() % 1e6
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					got := c.once(t, mode, &seed)
					c.compare(t, clean, got, want)
					total.add(got.replies)
				})
			}
		})
	}
}

// run is what one run gave.
type run struct {
	result  any
	repairs []llm.Repair
	err     error
	// calls are the requests by schema name ("" for none).
	calls   map[string]int
	replies []Shaped
}

// once runs the pipeline against Base, its replies shaped by a SmallModel
// with seed unless seed is nil.
func (c ShapeCheck) once(t *testing.T, mode string, seed *uint64) run {
	t.Helper()
	schemas := make([]*llm.Schema, len(c.Agents))
	for i, a := range c.Agents {
		schemas[i] = a.Spec.Schema()
	}
	respond := c.Base()
	var small *SmallModel
	if seed != nil {
		small = NewSmallModel(respond, *seed)
		respond = small.Respond
	}
	srv := NewServer(t, PromptSchemas(respond, schemas...))
	var r run
	r.result, r.repairs, r.err = c.Run(t, srv, mode)
	r.calls = map[string]int{}
	for _, req := range srv.Requests() {
		name := ""
		if js := SchemaOf(req, schemas...); js != nil {
			name = js.Name
		}
		r.calls[name]++
		sent := req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil
		if name != "" && sent != (mode != "prompt") {
			t.Fatalf("in mode %s, a request for %s was sent with response_format %v", mode, name, sent)
		}
	}
	if small != nil {
		r.replies = small.Replies()
	}
	return r
}

func (c ShapeCheck) compare(t *testing.T, clean, got run, want string) {
	t.Helper()
	shapes, formats := map[string]int{}, map[string]int{}
	shaped := 0
	// The replies asked again, by the index of the re-ask's reply.
	reasked := map[int]int{}
	for i, r := range got.replies {
		if r.ReaskOf >= 0 {
			reasked[r.ReaskOf] = i
		}
	}
	// The agents a request for a schema may be of: those of its name,
	// and, as a client in prompt mode sends it, those of its hint.
	agents := map[string][]string{}
	for _, a := range c.Agents {
		sa := a.Spec.Schema()
		for _, b := range c.Agents {
			if sb := b.Spec.Schema(); sb.Name == sa.Name || (sb.Hint != "" && sb.Hint == sa.Hint) {
				agents[sa.Name] = append(agents[sa.Name], b.Name)
			}
		}
	}
	// What the replies used need in the repairs, by their agents: how
	// many name each format.
	need := map[string]map[string]int{}
	reasks := map[string]int{}
	unusable, mayAsk, keysAsked := 0, 0, 0
	for i, r := range got.replies {
		for _, s := range r.Shapes {
			shapes[s]++
		}
		if r.Format != "" {
			formats[r.Format]++
		}
		if len(r.Shapes) > 0 || (r.Format != "" && r.Format != replytest.FormatJSON) {
			shaped++
		}
		if r.Unusable {
			unusable++
		}
		if r.MayAsk {
			mayAsk++
		}
		at, again := reasked[i]
		switch {
		case r.Unusable && !again:
			t.Errorf("a reply to %s with %v was used; it must be asked again\n%s", r.Schema, r.Shapes, r.Content)
		case again && !r.Unusable && !r.MayAsk:
			t.Errorf("a usable reply to %s in %s, %v, was asked again:\n%s\n--- asked again, answered:\n%s", r.Schema, r.Format, r.Shapes, r.Content, got.replies[at].Content)
		case again:
			reasks[r.Schema]++
			if !r.Unusable {
				keysAsked++
			}
		case r.Format != "" && r.Format != replytest.FormatJSON:
			key := strings.Join(agents[r.Schema], " or ")
			if need[key] == nil {
				need[key] = map[string]int{}
			}
			need[key][r.Format]++
		}
	}
	if got.err != nil {
		t.Fatalf("the run failed on shaped replies: %v\n%s", got.err, lastReplies(got.replies, 3))
	}
	if shaped == 0 {
		t.Fatal("no reply was shaped")
	}
	have, err := Content(got.result, c.Drop...)
	if err != nil {
		t.Fatal(err)
	}
	if have != want {
		t.Errorf("the result differs from the clean run's: %s\n%s", Diff(want, have), lastReplies(got.replies, 0))
	}
	aligned := 0
	for _, r := range got.repairs {
		switch {
		case r.Rule == "prose":
			t.Errorf("a shaped JSON reply was taken as prose: %+v", r)
		case alignments[r.Rule]:
			aligned++
		}
	}
	if aligned == 0 {
		t.Errorf("%d shaped replies, but no alignment was recorded: %+v", shaped, got.repairs)
	}
	// Each reply used in a format beyond JSON is recorded by a repair of
	// its agent naming the format.
	for key, byFormat := range need {
		for format, n := range byFormat {
			var named []string
			for _, r := range got.repairs {
				if slices.Contains(strings.Split(key, " or "), r.Agent) && NamesFormat([]string{r.Action}, format) {
					named = append(named, r.Action)
				}
			}
			if len(named) < n {
				t.Errorf("%d replies to %s used in %s, %d repairs naming it: %v", n, key, format, len(named), named)
			}
		}
	}
	names := make([]string, 0, len(clean.calls))
	for name := range clean.calls {
		names = append(names, name)
	}
	for name := range got.calls {
		if _, ok := clean.calls[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var line []string
	for _, name := range names {
		line = append(line, fmt.Sprintf("%s %d→%d", orText(name), clean.calls[name], got.calls[name]))
		if got.calls[name] != clean.calls[name]+reasks[name] {
			t.Errorf("%s was asked %d times on shaped replies, %d on clean ones, and %d replies needed a re-ask\n%s",
				orText(name), got.calls[name], clean.calls[name], reasks[name], lastReplies(got.replies, 0))
		}
	}
	t.Logf("calls clean→shaped: %s; %d of %d replies shaped (formats: %s; shapes: %s); %d with a placeholder for a required text, all asked again; %d with a key under another name, %d of those without a placeholder asked again; %d alignments recorded",
		strings.Join(line, ", "), shaped, len(got.replies), fmtFormats(formats), fmtShapes(shapes), unusable, mayAsk, keysAsked, aligned)
}

func fmtFormats(m map[string]int) string {
	var out []string
	for _, f := range replytest.Formats {
		if m[f] > 0 {
			out = append(out, fmt.Sprintf("%s ×%d", f, m[f]))
		}
	}
	return strings.Join(out, ", ")
}

// tally counts the replies of shaped runs, by format and by shape.
type tally struct {
	runs, replies, unusable, mayAsk, asked int
	formats, shapes                        map[string]int
}

func (t *tally) add(replies []Shaped) {
	t.runs++
	asked := map[int]bool{}
	for _, r := range replies {
		if r.ReaskOf >= 0 {
			asked[r.ReaskOf] = true
		}
	}
	for i, r := range replies {
		if r.Format == "" {
			continue
		}
		t.replies++
		t.formats[r.Format]++
		for _, s := range r.Shapes {
			t.shapes[s]++
		}
		switch {
		case r.Unusable:
			t.unusable++
		case r.MayAsk:
			t.mayAsk++
			if asked[i] {
				t.asked++
			}
		}
	}
}

func (t *tally) String() string {
	return fmt.Sprintf("%d shaped runs, %d replies in a format: %s; shapes: %s; %d with a placeholder for a required text, each asked again; %d with a key under another name and no placeholder, %d of them asked again",
		t.runs, t.replies, fmtFormats(t.formats), fmtShapes(t.shapes), t.unusable, t.mayAsk, t.asked)
}

func orText(name string) string {
	if name == "" {
		return "(text)"
	}
	return name
}

func fmtShapes(m map[string]int) string {
	var out []string
	for _, s := range append(Shapes, ShapeBoldLabels) {
		if m[s] > 0 {
			out = append(out, fmt.Sprintf("%s ×%d", s, m[s]))
		}
	}
	return strings.Join(out, ", ")
}

// lastReplies shows the last n shaped replies (every one when n is 0).
func lastReplies(replies []Shaped, n int) string {
	var shaped []Shaped
	for _, r := range replies {
		if r.Format != "" {
			shaped = append(shaped, r)
		}
	}
	if n > 0 && len(shaped) > n {
		shaped = shaped[len(shaped)-n:]
	}
	var b strings.Builder
	for _, r := range shaped {
		fmt.Fprintf(&b, "--- reply to %s in %s, %s:\n%s\n", r.Schema, r.Format, strings.Join(r.Shapes, ", "), r.Content)
	}
	return b.String()
}

// Content returns the JSON of v, indented, with its keys sorted and these
// fields removed at any depth: those named in drop; repairs, usage, run
// ids, timing and timestamps ("repairs", "usage", "run_id", "duration",
// "elapsed", "timestamp", and names ending in "_usage", "_ms" or "_at");
// and those holding a timestamp (RFC 3339) or a UUID. What is left is
// what a run's result says, apart from how and when it was made.
func Content(v any, drop ...string) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("openaitest: content: %w", err)
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return "", fmt.Errorf("openaitest: content: %w", err)
	}
	set := map[string]bool{}
	for _, k := range append(append([]string(nil), dropped...), drop...) {
		set[k] = true
	}
	var strip func(x any) any
	strip = func(x any) any {
		switch y := x.(type) {
		case map[string]any:
			for k, v := range y {
				if set[k] || stamp(v) || slices.ContainsFunc(droppedSuffixes, func(x string) bool { return strings.HasSuffix(k, x) }) {
					delete(y, k)
					continue
				}
				y[k] = strip(v)
			}
		case []any:
			for i, v := range y {
				y[i] = strip(v)
			}
		}
		return x
	}
	out, err := json.MarshalIndent(strip(x), "", "  ")
	if err != nil {
		return "", fmt.Errorf("openaitest: content: %w", err)
	}
	return string(out), nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// stamp reports whether v is a timestamp or a UUID: made by the run, not
// read from a reply.
func stamp(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return true
	}
	return uuidRE.MatchString(s)
}

// Diff names the first place where the JSON texts a and b differ: its
// path and both values.
func Diff(a, b string) string {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return "not JSON"
	}
	if p, u, v, ok := firstDiff("", x, y); ok {
		ju, _ := json.Marshal(u)
		jv, _ := json.Marshal(v)
		return fmt.Sprintf("at %s: %s, then %s", orRoot(p), clip(ju), clip(jv))
	}
	return "no difference"
}

func orRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func firstDiff(path string, x, y any) (string, any, any, bool) {
	switch a := x.(type) {
	case map[string]any:
		b, ok := y.(map[string]any)
		if !ok {
			return path, x, y, true
		}
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if p, u, v, ok := firstDiff(path+"/"+k, a[k], b[k]); ok {
				return p, u, v, true
			}
		}
		return "", nil, nil, false
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) {
			return path, x, y, true
		}
		for i := range a {
			if p, u, v, ok := firstDiff(fmt.Sprintf("%s/%d", path, i), a[i], b[i]); ok {
				return p, u, v, true
			}
		}
		return "", nil, nil, false
	}
	if !reflect.DeepEqual(x, y) {
		return path, x, y, true
	}
	return "", nil, nil, false
}
