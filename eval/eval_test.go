package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
)

func TestWilsonKnownValues(t *testing.T) {
	for _, c := range []struct {
		p        float64
		n        int
		low, hig float64
	}{
		{0.7, 10, 0.3968, 0.8922},
		{0.5, 100, 0.4038, 0.5962},
		{0, 10, 0, 0.2775},
		{1, 10, 0.7225, 1},
		{0.25, 20, 0.1119, 0.4687},
		{0, 0, 0, 1},
	} {
		lo, hi := eval.Wilson(c.p, c.n)
		if math.Abs(lo-c.low) > 5e-5 || math.Abs(hi-c.hig) > 5e-5 {
			t.Errorf("Wilson(%v, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.p, c.n, lo, hi, c.low, c.hig)
		}
	}
}

func TestCombine(t *testing.T) {
	for _, c := range []struct {
		ab, ba     string
		want       eval.Outcome
		consistent bool
	}{
		{"A", "B", eval.Win, true},
		{"B", "A", eval.Loss, true},
		{"tie", "tie", eval.Tie, true},
		{"A", "A", eval.Tie, false}, // the judge favours position A
		{"B", "B", eval.Tie, false},
		{"A", "tie", eval.Tie, false},
		{"tie", "A", eval.Tie, false},
	} {
		if o, ok := eval.Combine(c.ab, c.ba); o != c.want || ok != c.consistent {
			t.Errorf("Combine(%s, %s) = %s, %v; want %s, %v", c.ab, c.ba, o, ok, c.want, c.consistent)
		}
	}
}

// toyParams are the parameters of the toy pipeline the tests measure.
type toyParams struct {
	Topic string `json:"topic" jsonschema:"required,title=Topic,description=What to answer"`
}

func (p *toyParams) Validate() error {
	if strings.TrimSpace(p.Topic) == "" {
		return errors.New("topic is required")
	}
	return nil
}

// toy is a one-step pipeline: its answer is one call.
func toy(t *testing.T) pipeline.Definition {
	a, err := agent.FromText("toy.answer", "You are the toy pipeline.", "Answer: {{.Topic}}")
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Definition{
		Name: "toy", Title: "Toy", Description: "One call.",
		NewParams: func() pipeline.Params { return &toyParams{} },
		Run: func(ctx context.Context, r *engine.Run, p pipeline.Params) (any, error) {
			in := p.(*toyParams)
			text, err := engine.Step(ctx, r, "answer", in, func(ctx context.Context, c llm.Client) (string, error) {
				return a.Text(ctx, c, in, agent.Options{})
			})
			return map[string]any{"answer": text, "repairs": []any{}}, err
		},
		Topic:      func(p pipeline.Params) string { return p.(*toyParams).Topic },
		QueryParam: "topic",
		Document: func(run *madspark.Run) (*document.Document, error) {
			var res struct{ Answer string }
			if err := json.Unmarshal(run.Result, &res); err != nil {
				return nil, err
			}
			return &document.Document{Title: "Toy", TitleLines: []string{"run " + run.ID}, Sections: []document.Section{{Title: "Answer", Blocks: []document.Block{document.Text(res.Answer)}}}}, nil
		},
	}
}

var topicRe = regexp.MustCompile(`topic: (\S+)`)

// script says what the judge answers for a topic: the verdict when the
// pipeline's answer is A, and when it is B.
var script = map[string][2]string{
	"win":    {"A", "B"},
	"loss":   {"B", "A"},
	"tie":    {"tie", "tie"},
	"biased": {"A", "A"}, // the judge always picks the first: a tie
	"half":   {"A", "tie"},
	// The judge's own words for the sides, mapped as synonyms: a win.
	"words": {"first answer", "Answer B"},
}

// responder answers the toy pipeline with "PIPELINE <topic>", the
// baseline with "BASELINE <topic>", and the judge by script.
func responder(req *openaitest.ChatRequest) openaitest.Reply {
	prompt := req.Prompt()
	switch {
	case req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil && req.ResponseFormat.JSONSchema.Name == "eval_verdict":
		topic := topicRe.FindStringSubmatch(prompt)[1]
		s := script[topic]
		a := prompt[strings.Index(prompt, "=== Answer A ==="):]
		verdict := s[1]
		if strings.Contains(a[:strings.Index(a, "=== End of answer A")], "PIPELINE") {
			verdict = s[0]
		}
		b, _ := json.Marshal(map[string]string{"winner": verdict, "reasons": "because of " + topic})
		return openaitest.Reply{Content: string(b), PromptTokens: 100, CompletionTokens: 10}
	case strings.HasPrefix(prompt, "Answer: "):
		return openaitest.Reply{Content: "PIPELINE " + strings.TrimPrefix(prompt, "Answer: "), PromptTokens: 10, CompletionTokens: 5}
	default:
		return openaitest.Reply{Content: "BASELINE " + topicRe.FindStringSubmatch(prompt)[1], PromptTokens: 20, CompletionTokens: 7}
	}
}

type fixture struct {
	srv *openaitest.Server
	db  *sqlite.DB
	eng *engine.Engine
	reg *pipeline.Registry
	def pipeline.Definition
}

func newFixture(t *testing.T, client func(llm.Client) llm.Client) *fixture {
	t.Helper()
	srv := openaitest.NewServer(t, responder)
	var c llm.Client = openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test"})
	if client != nil {
		c = client(c)
	}
	return fixtureOver(t, srv, c)
}

// fixtureOver is the fixture of evals over c, a client of srv.
func fixtureOver(t *testing.T, srv *openaitest.Server, c llm.Client) *fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := &engine.Engine{Store: db, Client: c}
	reg := pipeline.NewRegistry()
	if err := reg.Register(toy(t)); err != nil {
		t.Fatal(err)
	}
	def, err := eval.Definition(eval.Deps{Registry: reg, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(def); err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, db: db, eng: eng, reg: reg, def: def}
}

// params are an eval's parameters for these topics, decoded as a run's.
func (f *fixture) params(t *testing.T, concurrency int, topics ...string) pipeline.Params {
	t.Helper()
	got, err := eval.Topics(f.reg, "toy", "test", []byte(strings.Join(topics, "\n")), 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"pipeline": "toy", "topics": got, "concurrency": concurrency})
	p, err := f.reg.Decode(eval.Name, raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs an eval to its end.
func (f *fixture) run(t *testing.T, ctx context.Context, p pipeline.Params) (*eval.Report, error) {
	t.Helper()
	r, err := f.eng.Start(context.Background(), engine.RunInfo{Pipeline: eval.Name, Mode: "live", Provider: "openai", Model: "gpt-test", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f.finish(t, ctx, r, p)
}

func (f *fixture) finish(t *testing.T, ctx context.Context, r *engine.Run, p pipeline.Params) (*eval.Report, error) {
	res, runErr := f.def.Run(ctx, r, p)
	if err := r.Finish(ctx, res, runErr); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		return nil, runErr
	}
	rec := r.Record()
	return eval.ReportOf(&rec)
}

func TestCountingWithOrderSwaps(t *testing.T) {
	f := newFixture(t, nil)
	rep, err := f.run(t, context.Background(), f.params(t, 3, "win", "loss", "tie", "biased", "half", "words"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != 6 || rep.Wins != 2 || rep.Losses != 1 || rep.Ties != 3 || rep.Failures != 0 {
		t.Fatalf("n %d, wins %d, losses %d, ties %d, failures %d", rep.N, rep.Wins, rep.Losses, rep.Ties, rep.Failures)
	}
	if rep.WinRate != 0.5833 || rep.PositionConsistency != 0.6667 {
		t.Fatalf("win rate %v, consistency %v", rep.WinRate, rep.PositionConsistency)
	}
	lo, hi := eval.Wilson(3.5/6, 6)
	if math.Abs(rep.CI[0]-lo) > 1e-4 || math.Abs(rep.CI[1]-hi) > 1e-4 {
		t.Fatalf("ci %v, want [%v %v]", rep.CI, lo, hi)
	}
	want := map[string]string{"win": "pipeline", "loss": "baseline", "tie": "tie", "biased": "tie", "half": "tie", "words": "pipeline"}
	for _, it := range rep.Items {
		if it.Winner != want[it.Topic] || it.RunID == "" || len(it.Verdicts) != 2 || !strings.Contains(it.Reasons(), it.Topic) {
			t.Errorf("item %+v, want winner %s", it, want[it.Topic])
		}
		if it.Topic == "biased" && (it.Consistent || it.Verdicts[0].Winner != "pipeline" || it.Verdicts[1].Winner != "baseline") {
			t.Errorf("biased: %+v", it)
		}
	}
	// The judge's own words were mapped onto the enum and recorded.
	enum := 0
	for _, r := range rep.Repairs {
		if r.Agent == "eval.judge" && r.Rule == "enum" && strings.HasPrefix(r.Step, "t6/judge_") {
			enum++
		}
	}
	if enum != 2 {
		t.Fatalf("repairs %+v, want the two synonyms of t6", rep.Repairs)
	}
	// 6 topics × (1 pipeline + 1 baseline + 2 judge) calls, no re-ask.
	if n := len(f.srv.Requests()); n != 24 {
		t.Fatalf("%d requests, want 24", n)
	}
	u := rep.Usage
	if u.Pipeline.LLMCalls != 6 || u.Baseline.LLMCalls != 6 || u.Judge.LLMCalls != 12 || u.Judge.InputTokens != 1200 || u.Total.LLMCalls != 24 {
		t.Fatalf("usage %+v", u)
	}
	// Each pipeline run is a run of its own, tagged with the eval.
	child, err := f.db.Run(context.Background(), rep.Items[0].RunID)
	if err != nil || child.Pipeline != "toy" || child.Status != madspark.RunSucceeded || len(child.Tags) != 1 || child.Tags[0] != "eval:"+rep.RunID {
		t.Fatalf("child run %+v, %v", child, err)
	}
	// The eval's record counts every call.
	rec, _ := f.db.Run(context.Background(), rep.RunID)
	if rec.Usage.LLMCalls != 24 {
		t.Fatalf("eval usage %+v", rec.Usage)
	}
}

func TestSucceededRunsAreReused(t *testing.T) {
	f := newFixture(t, nil)
	first, err := f.run(t, context.Background(), f.params(t, 2, "win", "loss"))
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.srv.Requests())
	second, err := f.run(t, context.Background(), f.params(t, 2, "win", "loss"))
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range second.Items {
		if !it.Reused || it.RunID != first.Items[i].RunID || it.PipelineUsage.LLMCalls != 0 {
			t.Fatalf("item %+v, want run %s reused and its calls not counted again", it, first.Items[i].RunID)
		}
	}
	if second.ReusedRuns != 2 || second.Usage.Pipeline.LLMCalls != 0 || second.Usage.Total.LLMCalls != second.Usage.Baseline.LLMCalls+second.Usage.Judge.LLMCalls {
		t.Fatalf("second eval: %d reused, usage %+v", second.ReusedRuns, second.Usage)
	}
	for _, q := range f.srv.Requests()[before:] {
		if strings.HasPrefix(q.Prompt(), "Answer: ") {
			t.Fatal("a reused run called the pipeline again")
		}
	}
	// fresh runs it anyway.
	p := f.params(t, 2, "win").(*eval.Params)
	p.Fresh = true
	third, err := f.run(t, context.Background(), p)
	if err != nil || third.Items[0].Reused || third.Items[0].RunID == first.Items[0].RunID {
		t.Fatalf("fresh: %+v, %v", third, err)
	}
}

func TestFailedTopicsAreCounted(t *testing.T) {
	f := newFixture(t, nil)
	f.srv.Inject(openaitest.Fault{Status: 400, Message: "bad request"})
	rep, err := f.run(t, context.Background(), f.params(t, 1, "win", "tie"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failures != 1 || rep.N != 1 || rep.Items[0].Error == "" || rep.Items[1].Winner != "tie" {
		t.Fatalf("report %+v", rep)
	}
}

// crashAt is a client that cancels the run's context once topic's pipeline
// or baseline asks, as a crash would stop it, failing those calls.
type crashAt struct {
	llm.Client
	topic  string
	cancel func()
	once   sync.Once
}

func (c *crashAt) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if strings.Contains(req.Prompt(), "topic: "+c.topic) || req.Prompt() == "Answer: "+c.topic {
		c.once.Do(c.cancel)
		return nil, context.Canceled
	}
	return c.Client.Generate(ctx, req)
}

func TestResumeAfterCrashPaysNothingTwice(t *testing.T) {
	crash := &crashAt{topic: "tie"}
	f := newFixture(t, func(c llm.Client) llm.Client { crash.Client = c; return crash })
	ctx, cancel := context.WithCancel(context.Background())
	crash.cancel = cancel
	p := f.params(t, 1, "win", "loss", "tie", "biased", "half")
	if _, err := f.run(t, ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("crash: %v", err)
	}
	runs, _ := f.db.Runs(context.Background(), madspark.RunFilter{Pipeline: eval.Name})
	id := runs[0].ID
	done := map[string]bool{}
	steps, _ := f.db.Steps(context.Background(), id)
	for _, s := range steps {
		if s.Status == madspark.StepDone {
			done[s.Key] = true
		}
	}
	for _, k := range []string{"t1/pipeline", "t1/baseline", "t1/judge_ab", "t1/judge_ba", "t2/judge_ba"} {
		if !done[k] {
			t.Fatalf("step %s not journaled before the crash: %v", k, done)
		}
	}
	before := f.srv.Requests()
	crash.topic = "never"
	r, err := f.eng.Resume(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err = f.reg.Decode(eval.Name, r.Params())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := f.finish(t, context.Background(), r, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunID != id || rep.N != 5 || rep.Wins != 1 || rep.Losses != 1 || rep.Ties != 3 {
		t.Fatalf("resumed report %+v", rep)
	}
	// Every call was paid once: the provider saw 5 × 4 calls in all, and
	// none for topics 1 and 2 after the crash.
	all := f.srv.Requests()
	if len(all) != 20 {
		t.Fatalf("%d requests in all, want 20", len(all))
	}
	for _, q := range all[len(before):] {
		if m := topicRe.FindStringSubmatch(q.Prompt()); m != nil && (m[1] == "win" || m[1] == "loss") || strings.Contains(q.Prompt(), "Answer: win") || strings.Contains(q.Prompt(), "Answer: loss") {
			t.Fatalf("after resume, a finished topic was asked again: %q", q.Prompt())
		}
	}
	if rec, _ := f.db.Run(context.Background(), id); rec.Status != madspark.RunSucceeded || rec.Usage.LLMCalls != 20 {
		t.Fatalf("eval record %+v", rec)
	}
}

func TestTopicsInput(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct{ name, data, want string }{
		{"empty", "\n# only a comment\n\n", "no topics"},
		{"malformed JSON", "one\n{\"topic\": \n", "line 2"},
		{"unknown field", `{"topic": "x", "colour": "red"}`, "colour"},
		{"invalid", `{"topic": " "}`, "topic is required"},
	} {
		if _, err := eval.Topics(f.reg, "toy", "topics.txt", []byte(c.data), 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	got, err := eval.Topics(f.reg, "toy", "t", []byte("a\n\n# skip\n{\"topic\": \"b\"}\nc\n"), 2)
	if err != nil || len(got) != 2 || got[0]["topic"] != "a" || got[1]["topic"] != "b" {
		t.Fatalf("topics %v, %v", got, err)
	}
	if _, err := eval.Topics(f.reg, "nope", "t", []byte("a"), 0); !errors.Is(err, pipeline.ErrUnknown) {
		t.Fatalf("unknown pipeline: %v", err)
	}
	for _, name := range []string{"spark", "chaos", "debate", "assess"} {
		data, err := eval.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				n++
			}
		}
		if n < 15 || n > 30 {
			t.Errorf("%s: %d built-in topics", name, n)
		}
	}
	if _, err := eval.Builtin("proposal"); err == nil {
		t.Fatal("proposal has no built-in topics")
	}
	// The eval's own parameters are checked against the registry.
	for _, raw := range []string{
		`{"pipeline": "nope", "topics": [{"topic": "a"}]}`,
		`{"pipeline": "toy", "topics": []}`,
		`{"pipeline": "toy", "topics": [{"topic": ""}]}`,
		`{"pipeline": "toy", "topics": [{"topic": "a"}], "judge_provider": "acme"}`,
		`{"pipeline": "eval", "topics": [{"topic": "a"}]}`,
	} {
		if _, err := f.reg.Decode(eval.Name, []byte(raw)); err == nil {
			t.Errorf("%s was accepted", raw)
		}
	}
}

func TestReportFormats(t *testing.T) {
	f := newFixture(t, nil)
	rep, err := f.run(t, context.Background(), f.params(t, 2, "win", "loss", "biased"))
	if err != nil {
		t.Fatal(err)
	}
	var text, md, js strings.Builder
	for format, w := range map[string]*strings.Builder{"text": &text, "markdown": &md, "json": &js} {
		if err := rep.Write(w, format); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(text.String(), "toy won 1, lost 1, tied 1 of 3: win rate 50.0%") || !strings.Contains(text.String(), "orders disagree") {
		t.Fatalf("text:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "95% Wilson interval") || !strings.Contains(md.String(), "| biased |") {
		t.Fatalf("markdown:\n%s", md.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(js.String()), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pipeline", "n", "wins", "losses", "ties", "win_rate", "ci", "items", "usage"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if fmt.Sprint(m["ci"]) != fmt.Sprint([]any{rep.CI[0], rep.CI[1]}) {
		t.Fatalf("ci %v", m["ci"])
	}
}

func TestCompareRunsInBothOrders(t *testing.T) {
	f := newFixture(t, nil)
	rep, err := f.run(t, context.Background(), f.params(t, 1, "win", "loss"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.db.Run(context.Background(), rep.Items[0].RunID)
	b, _ := f.db.Run(context.Background(), rep.Items[1].RunID)
	ev, err := eval.New(eval.Deps{Registry: f.reg, Engine: f.eng})
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.srv.Requests())
	// Both answers are the toy's, so the "win" script answers A in both
	// orders: the judge follows position, which is a tie.
	cmp, err := ev.CompareRuns(context.Background(), f.eng.Client, a, b, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Winner != "tie" || cmp.Consistent || cmp.Verdicts[0].Winner != "a" || cmp.Verdicts[1].Winner != "b" || cmp.Topic != "win" || len(f.srv.Requests())-before != 2 {
		t.Fatalf("comparison %+v", cmp)
	}
	if _, err := ev.CompareRuns(context.Background(), f.eng.Client, a, &madspark.Run{ID: "x", Pipeline: eval.Name, Status: madspark.RunSucceeded}, "", ""); err == nil {
		t.Fatal("an eval was compared with a run")
	}
}
