package flowrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/sqlite"
)

func load(t *testing.T, name string) *flow.Pipeline {
	t.Helper()
	p, err := flow.Load(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// counting answers from the schema like the mock, counts calls per agent
// and the most calls in flight at once. Calls of the agents in together
// wait until all of them are in flight: agents that run one after the
// other would never get past it (the test would time out), so the
// concurrency is observed, not timed.
type counting struct {
	mu       sync.Mutex
	calls    map[string]int
	inFlight int
	maxIn    int
	together map[string]bool
	arrived  int
	gate     chan struct{}
	fail     func(agent string) error
	reply    func(req *llm.Request) (string, bool)
}

func newCounting() *counting { return &counting{calls: map[string]int{}, gate: make(chan struct{})} }

func (c *counting) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c.mu.Lock()
	c.calls[req.Agent]++
	c.inFlight++
	c.maxIn = max(c.maxIn, c.inFlight)
	wait := c.together[req.Agent]
	if wait {
		if c.arrived++; c.arrived == len(c.together) {
			close(c.gate)
		}
	}
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.inFlight--; c.mu.Unlock() }()
	if wait {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.fail != nil {
		if err := c.fail(req.Agent); err != nil {
			return nil, err
		}
	}
	if c.reply != nil {
		if text, ok := c.reply(req); ok {
			return &llm.Response{Text: text, Usage: llm.Usage{LLMCalls: 1}}, nil
		}
	}
	v, err := mock.FromSchema(req.Agent, req.Schema.JSON)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(v)
	return &llm.Response{Text: string(b), Usage: llm.Usage{LLMCalls: 1}}, nil
}

func (c *counting) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

func newEngine(t *testing.T, c llm.Client) *engine.Engine {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &engine.Engine{Store: db, Client: c}
}

// runDef runs p through the registry as the queue and the API do.
func runDef(t *testing.T, e *engine.Engine, p *flow.Pipeline, params string) (*engine.Run, map[string]any, error) {
	t.Helper()
	reg := pipeline.NewRegistry()
	if err := reg.Register(p.Definition()); err != nil {
		t.Fatal(err)
	}
	pp, err := reg.Decode(p.Name, json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Start(t.Context(), engine.RunInfo{Pipeline: p.Name, Mode: "live", Params: pp}, nil)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := reg.Get(p.Name)
	res, runErr := def.Run(t.Context(), r, pp)
	if err := r.Finish(t.Context(), res, runErr); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		return r, nil, runErr
	}
	b, _ := json.Marshal(res)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return r, m, nil
}

func TestPitchEndToEnd(t *testing.T) {
	p := load(t, "pitch.yaml")
	c := newCounting()
	c.together = map[string]bool{"pitch.fan": true, "pitch.critic": true}
	var prompts sync.Map
	c.reply = func(req *llm.Request) (string, bool) {
		prompts.Store(req.Agent, req.Messages[0].Content)
		return "", false
	}
	e := newEngine(t, c)
	r, res, err := runDef(t, e, p, `{"topic":"community tool libraries"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"pitch.writer", "pitch.fan", "pitch.critic", "pitch.editor"} {
		if c.calls[a] != 1 {
			t.Errorf("%s called %d times, want 1", a, c.calls[a])
		}
	}
	if c.maxIn != 2 {
		t.Errorf("at most %d calls in flight, want fan and critic at once", c.maxIn)
	}
	for _, a := range []string{"writer", "fan", "critic", "editor"} {
		if _, ok := res[a].(map[string]any); !ok {
			t.Errorf("result has no %s: %v", a, res)
		}
	}
	if res["editor"].(map[string]any)["score"] != 5.0 {
		t.Errorf("editor %v", res["editor"])
	}
	w, _ := prompts.Load("pitch.writer")
	if w != "Write a one-paragraph pitch about community tool libraries." {
		t.Errorf("writer prompt %q", w)
	}
	ed, _ := prompts.Load("pitch.editor")
	if !strings.Contains(ed.(string), "\n- mock strengths for pitch.fan 1\n- mock strengths for pitch.fan 2") {
		t.Errorf("editor prompt does not list the strengths: %q", ed)
	}
	if u := r.Usage(); u.LLMCalls != 4 {
		t.Errorf("usage %+v, want 4 calls", u)
	}
}

func TestResumeReplaysFinishedSteps(t *testing.T) {
	p := load(t, "pitch.yaml")
	c := newCounting()
	c.fail = func(agent string) error {
		if agent != "pitch.writer" {
			return errors.New("provider down")
		}
		return nil
	}
	e := newEngine(t, c)
	r, _, err := runDef(t, e, p, `{"topic":"tools"}`)
	if err == nil {
		t.Fatal("the run did not fail")
	}
	if c.calls["pitch.writer"] != 1 {
		t.Fatalf("writer called %d times", c.calls["pitch.writer"])
	}
	c.fail = nil
	before := c.total()
	r2, err := e.Resume(t.Context(), r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var params flow.Params
	_ = json.Unmarshal(r2.Params(), &params)
	if _, err := p.Run(t.Context(), r2, params); err != nil {
		t.Fatal(err)
	}
	if c.calls["pitch.writer"] != 1 {
		t.Errorf("the writer was called again on resume (%d calls)", c.calls["pitch.writer"])
	}
	if got := c.total() - before; got != 3 {
		t.Errorf("resume made %d calls, want 3 (fan, critic, editor)", got)
	}
}

const loopFile = `name: review
inputs:
  idea: {type: string, required: true}
agents:
  analyst:
    prompt: "Assess {{.idea}}.{{if .reviewer.feedback}} Address: {{.reviewer.feedback}}{{end}}"
    output: {analysis: string}
  reviewer:
    prompt: "Review {{.analyst.analysis}}"
    output: {verdict: string, feedback: string, score: number}
steps:
  - loop: {steps: [analyst, reviewer], until: "reviewer.verdict == 'approve' or reviewer.score >= 9", max: 3}
`

func TestLoopStopsOnCondition(t *testing.T) {
	p, err := flow.Parse("review.yaml", []byte(loopFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newCounting()
	n := 0
	c.reply = func(req *llm.Request) (string, bool) {
		if req.Agent != "review.reviewer" {
			return "", false
		}
		n++
		if n == 2 {
			return `{"verdict":"Approve","feedback":"fine","score":7}`, true
		}
		return `{"verdict":"revise","feedback":"more data","score":4}`, true
	}
	_, res, err := runDef(t, newEngine(t, c), p, `{"idea":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.calls["review.analyst"] != 2 || c.calls["review.reviewer"] != 2 {
		t.Errorf("calls %v, want two iterations", c.calls)
	}
	loops := res["_loops"].([]any)[0].(map[string]any)
	if loops["iterations"] != 2.0 || loops["stopped_by"] != "condition" || len(loops["history"].([]any)) != 2 {
		t.Errorf("loop %v", loops)
	}
	if res["reviewer"].(map[string]any)["verdict"] != "Approve" {
		t.Errorf("last iteration not kept: %v", res["reviewer"])
	}
}

func TestLoopStopsAtMax(t *testing.T) {
	p, err := flow.Parse("review.yaml", []byte(loopFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newCounting()
	var prompts []string
	c.reply = func(req *llm.Request) (string, bool) {
		if req.Agent == "review.analyst" {
			prompts = append(prompts, req.Messages[0].Content)
			return "", false
		}
		return `{"verdict":"revise","feedback":"more data","score":4}`, true
	}
	_, res, err := runDef(t, newEngine(t, c), p, `{"idea":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.calls["review.analyst"] != 3 || c.calls["review.reviewer"] != 3 {
		t.Errorf("calls %v, want three iterations", c.calls)
	}
	loops := res["_loops"].([]any)[0].(map[string]any)
	if loops["stopped_by"] != "max" {
		t.Errorf("loop %v", loops)
	}
	if prompts[0] != "Assess x." || prompts[1] != "Assess x. Address: more data" {
		t.Errorf("analyst prompts %q", prompts)
	}
}

func TestForEach(t *testing.T) {
	for _, mode := range []string{"each", "batch"} {
		t.Run(mode, func(t *testing.T) {
			src := fmt.Sprintf(`name: fe
inputs:
  topic: {type: string, default: tools}
agents:
  lister:
    prompt: "Ideas about {{.topic}}"
    output: {ideas: [string]}
  scorer:
    prompt: "Score {{.idea}}"
    output: {score: number, why: string}
    for_each: {over: lister.ideas, as: idea, mode: %s}
  summary:
    prompt: "Summarise {{.scorer}}"
    output: {text: string}
steps: [lister, scorer, summary]
`, mode)
			p, err := flow.Parse("fe.yaml", []byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			c := newCounting()
			_, res, err := runDef(t, newEngine(t, c), p, `{}`)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"each": 2, "batch": 1}[mode]
			if c.calls["fe.scorer"] != want {
				t.Errorf("scorer called %d times, want %d", c.calls["fe.scorer"], want)
			}
			if l, ok := res["scorer"].([]any); !ok || len(l) != 2 {
				t.Errorf("scorer result %v", res["scorer"])
			}
		})
	}
}

func TestMockProviderRunsExample(t *testing.T) {
	p, err := flow.Load("../../examples/pipelines/pitch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := runDef(t, newEngine(t, mock.New(nil)), p, `{"topic":"t"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res["writer"].(map[string]any)["pitch"] != "mock pitch for pitch.writer" {
		t.Errorf("writer %v", res["writer"])
	}
}

func TestInputsSchema(t *testing.T) {
	src := `name: s
inputs:
  topic: {type: string, required: true, description: What to pitch}
  tone: {type: string, enum: [dry, warm], default: dry}
  n: {type: integer, default: 3}
  tags: {type: [string], default: [a]}
agents:
  a:
    prompt: "{{.topic}} {{.tone}} {{.n}} {{join .tags \", \"}}"
    output: {x: string}
steps: [a]
`
	p, err := flow.Parse("s.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	if err := reg.Register(p.Definition()); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Decode("s", json.RawMessage(`{"topic":"x","tone":"loud"}`)); err == nil {
		t.Error("a value outside the enum was accepted")
	}
	raw, err := p.InputsJSON([]string{"topic=x", "n=4", "tags=b, c"})
	if err != nil {
		t.Fatal(err)
	}
	pp, err := reg.Decode("s", raw)
	if err != nil {
		t.Fatal(err)
	}
	got := *pp.(*flow.Params)
	if got["tone"] != "dry" || got["n"] != int64(4) || len(got["tags"].([]any)) != 2 {
		t.Errorf("params %v", got)
	}
	// A whole number is kept whole, to the last digit; one beyond int64,
	// or a number that is not finite, is refused by name.
	raw, err = p.InputsJSON([]string{"topic=x", "n=9223372036854775807"})
	if err != nil {
		t.Fatal(err)
	}
	if pp, err = reg.Decode("s", raw); err != nil || (*pp.(*flow.Params))["n"] != int64(9223372036854775807) {
		t.Errorf("the largest int64: %v, %v", pp, err)
	}
	for in, want := range map[string]string{
		"n=9223372036854775808": "--input n is beyond the range of a whole number",
		"n=NaN":                 "--input n must be a whole number, got NaN",
		"n=1.5":                 "--input n must be a whole number, got 1.5",
	} {
		if _, err := p.InputsJSON([]string{"topic=x", in}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v", in, err)
		}
	}
	if _, err := reg.Decode("s", json.RawMessage(`{"topic":"x","n":99999999999999999999}`)); err == nil || !strings.Contains(err.Error(), "s parameters: n is beyond the range of a whole number") {
		t.Errorf("an integer beyond int64 in JSON: %v", err)
	}
	if _, err := p.InputsJSON([]string{"nope=1"}); err == nil {
		t.Error("an unknown input was accepted")
	}
	if _, err := p.InputsJSON([]string{"n=2"}); err == nil || err.Error() != "s needs --input topic=VALUE" {
		t.Errorf("a required input left out: %v", err)
	}
	if p.Definition().QueryParam != "topic" {
		t.Errorf("query param %q", p.Definition().QueryParam)
	}
}

func TestExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("../../examples/pipelines/*.yaml")
	if len(files) < 2 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		if _, err := flow.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat("../testdata/fuzz/FuzzParse"); err != nil {
		t.Errorf("no fuzz corpus: %v", err)
	}
}

func TestAgentOptionsIncludesAndRepairs(t *testing.T) {
	p := load(t, "include/tagline.yaml")
	c := newCounting()
	var got llm.Request
	c.reply = func(req *llm.Request) (string, bool) {
		got = *req
		// A score as text and out of range, an extra field: repaired.
		return "Sure!\n```json\n{\"tagline\": \"Fix it together\", \"score\": \"14\", \"mood\": \"upbeat\"}\n```", true
	}
	r, res, err := runDef(t, newEngine(t, c), p, `{"product":"a tool library"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got.System != "Write in plain words, for engineers." || got.Model != "big-model" || got.Provider != "anthropic" || got.MaxTokens != 200 || got.Temperature != 0.4 {
		t.Errorf("request: system %q model %q provider %q max_tokens %d temperature %v", got.System, got.Model, got.Provider, got.MaxTokens, got.Temperature)
	}
	w := res["writer"].(map[string]any)
	if w["score"] != 10.0 || w["mood"] != nil || w["tagline"] != "Fix it together" {
		t.Errorf("writer %v", w)
	}
	if len(r.Repairs()) == 0 {
		t.Error("no repair recorded")
	}
	reps, _ := res["repairs"].([]any)
	paths := 0
	for _, rep := range reps {
		if m, _ := rep.(map[string]any); m["path"] != nil {
			paths++
		}
	}
	if len(reps) != len(r.Repairs()) || paths == 0 {
		t.Errorf("result repairs %v, want the run's %v, with their paths", res["repairs"], r.Repairs())
	}
	if c.total() != 1 {
		t.Errorf("%d calls: a usable reply was sent back", c.total())
	}
}

func TestUnusableReplyIsAskedAgainOnce(t *testing.T) {
	p := load(t, "pitch.yaml")
	c := newCounting()
	n := 0
	c.reply = func(req *llm.Request) (string, bool) {
		if req.Agent == "pitch.writer" {
			if n++; n == 1 {
				return "I cannot answer in JSON.", true
			}
		}
		return "", false
	}
	_, _, err := runDef(t, newEngine(t, c), p, `{"topic":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.calls["pitch.writer"] != 2 {
		t.Errorf("writer called %d times, want 2 (one re-ask)", c.calls["pitch.writer"])
	}
}

func TestOptionalInputLeftOutReadsEmpty(t *testing.T) {
	p, err := flow.Parse("o.yaml", []byte("name: o\ninputs:\n  topic: {type: string, required: true}\n  tone: {type: string}\nagents:\n  a: {prompt: \"{{.topic}}[{{.tone}}]\", output: {t: string}}\nsteps: [a]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newCounting()
	var prompt string
	c.reply = func(req *llm.Request) (string, bool) { prompt = req.Messages[0].Content; return "", false }
	if _, _, err := runDef(t, newEngine(t, c), p, `{"topic":"x"}`); err != nil {
		t.Fatal(err)
	}
	if prompt != "x[]" {
		t.Errorf("prompt %q", prompt)
	}
}
