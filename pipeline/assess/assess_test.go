package assess

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/structured"
)

const idea = "A subscription service for refurbished lab equipment"

func newDB(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// responders returns the mock responders with some replaced.
func responders(over map[string]mock.Responder) map[string]mock.Responder {
	all := MockResponders()
	maps.Copy(all, over)
	return all
}

func params(dir string, mod func(*Params)) Params {
	p := DefaultParams()
	p.Idea, p.OutputDir = idea, dir
	if mod != nil {
		mod(&p)
	}
	return p
}

type harness struct {
	t    *testing.T
	db   *sqlite.DB
	pipe *Pipeline
	cnt  *mock.Recorder
	eng  *engine.Engine
}

func newHarness(t *testing.T, cfg Config, over map[string]mock.Responder) *harness {
	t.Helper()
	if cfg.Mock == false && cfg.Searcher == nil {
		cfg.Mock = true
	}
	pipe, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := newDB(t)
	cnt := &mock.Recorder{Next: mock.New(responders(over))}
	return &harness{t: t, db: db, pipe: pipe, cnt: cnt, eng: &engine.Engine{Store: db, Client: cnt}}
}

func (h *harness) run(ctx context.Context, p Params) (*Result, *engine.Run, error) {
	h.t.Helper()
	r, err := h.eng.Start(ctx, engine.RunInfo{Pipeline: "assess", Mode: "mock", Params: p}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := h.pipe.Run(ctx, r, p)
	if ferr := r.Finish(ctx, res, err); ferr != nil {
		h.t.Fatal(ferr)
	}
	return res, r, err
}

func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// noTempFiles fails when anything under dir looks like a temporary file
// left by an interrupted write: every name the pipeline writes starts with
// a letter.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if p != dir && (strings.HasPrefix(d.Name(), ".") || strings.Contains(d.Name(), ".tmp")) {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// TestModes runs every mode end to end in mock mode and checks the calls
// each agent made, the loop's outcome and the files written.
func TestModes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mod        func(*Params)
		calls      map[string]int
		iterations int
		approved   bool
		stop       string
	}{
		{"analyze", nil, map[string]int{"analyst": 1}, 1, false, StopNoReview},
		{"review approved first time", func(p *Params) { p.Mode, p.Strictness = AnalyzeAndReview, Lenient },
			map[string]int{"analyst": 1, "reviewer": 1}, 1, true, StopApproved},
		{"review with one revision", func(p *Params) { p.Mode = AnalyzeAndReview },
			map[string]int{"analyst": 2, "reviewer": 2}, 2, true, StopApproved},
		{"strict review hits the limit", func(p *Params) { p.Mode, p.Strictness, p.MaxIterations = AnalyzeAndReview, Strict, 2 },
			map[string]int{"analyst": 2, "reviewer": 2}, 2, false, StopMaxIterations},
		{"fact check", func(p *Params) { p.Mode, p.FactCheck = AnalyzeAndReview, true },
			map[string]int{"analyst": 2, "reviewer": 2, "fact_checker": 2}, 2, true, StopApproved},
		// The lenient reviewer approves the first draft, but its growth
		// figure has no source: the fact checker's reject forces a revision.
		{"fact check overrules a lenient reviewer", func(p *Params) { p.Mode, p.FactCheck, p.Strictness = AnalyzeAndReview, true, Lenient },
			map[string]int{"analyst": 2, "reviewer": 2, "fact_checker": 2}, 2, true, StopApproved},
		{"judge", func(p *Params) { p.Mode = AnalyzeReviewAndJudge },
			map[string]int{"analyst": 2, "reviewer": 2, "judge": 1}, 2, true, StopApproved},
		{"full evaluation with fact check", func(p *Params) { p.Mode, p.FactCheck = FullEvaluation, true },
			map[string]int{"analyst": 2, "reviewer": 2, "fact_checker": 2, "judge": 1}, 2, true, StopApproved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newHarness(t, Config{Mock: true}, nil)
			p := params(dir, tc.mod)
			res, r, err := h.run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.cnt.Calls(); !reflect.DeepEqual(got, tc.calls) {
				t.Errorf("calls %v, want %v", got, tc.calls)
			}
			if len(res.Iterations) != tc.iterations || res.Approved != tc.approved || res.StopReason != tc.stop {
				t.Errorf("%d iterations, approved %v, stop %s", len(res.Iterations), res.Approved, res.StopReason)
			}
			checkLayout(t, dir, res, p, r.ID())
			noTempFiles(t, dir)
		})
	}
}

// checkLayout checks the files of a finished run against its result.
func checkLayout(t *testing.T, dir string, res *Result, p Params, runID string) {
	t.Helper()
	slugDir := filepath.Join(dir, "analyses", res.Slug)
	for _, it := range res.Iterations {
		b, err := os.ReadFile(filepath.Join(slugDir, "iterations", iterationFile(it.Number)))
		if err != nil || strings.TrimSpace(string(b)) != it.Analysis {
			t.Fatalf("iteration %d file: %v", it.Number, err)
		}
		if !strings.Contains(string(b), MockNote) {
			t.Errorf("iteration %d does not say it is mock data", it.Number)
		}
		if it.Words < p.MinWords || len(MissingSections(it.Analysis)) > 0 {
			t.Errorf("iteration %d: %d words, missing %v", it.Number, it.Words, MissingSections(it.Analysis))
		}
		fb := filepath.Join(slugDir, "iterations", feedbackFile(it.Number))
		if p.Mode.Reviews() {
			got := readJSON[Feedback](t, fb)
			if got.IterationRecommendation != it.Feedback.IterationRecommendation {
				t.Errorf("feedback file %d: %+v", it.Number, got)
			}
		} else if _, err := os.Stat(fb); err == nil {
			t.Errorf("feedback written without review")
		}
		fc := filepath.Join(slugDir, "iterations", factFile(it.Number))
		if _, err := os.Stat(fc); (err == nil) != p.FactCheck {
			t.Errorf("fact check file %d: exists %v, fact check %v", it.Number, err == nil, p.FactCheck)
		}
	}
	// analysis.md is a relative link to the latest iteration.
	link := filepath.Join(slugDir, "analysis.md")
	target, err := os.Readlink(link)
	if err != nil || target != filepath.Join("iterations", iterationFile(len(res.Iterations))) {
		t.Errorf("analysis.md → %q, %v", target, err)
	}
	if b, err := os.ReadFile(link); err != nil || strings.TrimSpace(string(b)) != res.Final().Analysis {
		t.Errorf("analysis.md does not read as the latest iteration: %v", err)
	}
	meta := readJSON[Metadata](t, filepath.Join(slugDir, "metadata.json"))
	if meta.Idea != p.Idea || meta.Slug != res.Slug || meta.RunID != runID || meta.Status != "succeeded" || meta.Mode != "mock" ||
		meta.LatestIteration != len(res.Iterations) || len(meta.Iterations) != len(res.Iterations) || meta.Approved != res.Approved || meta.StopReason != res.StopReason {
		t.Errorf("metadata %+v", meta)
	}
	_, err = os.Stat(filepath.Join(slugDir, "evaluation.json"))
	if p.Mode.Judges() {
		ev := readJSON[Evaluation](t, filepath.Join(slugDir, "evaluation.json"))
		score, grade, err := Score(ev.Grades)
		if err != nil || ev.WeightedScore != score || ev.OverallGrade != grade || ev.Slug != res.Slug || ev.RunID != runID || len(ev.Weights) != 7 || ev.Mode != "mock" {
			t.Errorf("evaluation %+v %v", ev, err)
		}
	} else if err == nil {
		t.Error("evaluation.json written without the judge")
	}
	// logs/runs/{timestamp}_{slug}/
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "runs", "*_"+res.Slug))
	if len(logs) != 1 || filepath.ToSlash(mustRel(t, dir, logs[0])) != res.Files.LogDir {
		t.Fatalf("log dirs %v, result says %s", logs, res.Files.LogDir)
	}
	sum := readJSON[RunSummary](t, filepath.Join(logs[0], "run_summary.json"))
	if sum.RunID != runID || sum.Status != "succeeded" || sum.Iterations != len(res.Iterations) || sum.Mode != "mock" {
		t.Errorf("run summary %+v", sum)
	}
	lines := 0
	f, err := os.Open(filepath.Join(logs[0], "messages.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Agent == "" || m.Step == "" {
			t.Fatalf("messages.jsonl line %d: %v %+v", lines+1, err, m)
		}
		lines++
	}
	if lines != sum.Total.Calls || lines == 0 {
		t.Errorf("%d messages, %d calls in the summary", lines, sum.Total.Calls)
	}
	for agent, st := range sum.Agents {
		if st.Calls == 0 || st.LLMCalls != st.Calls {
			t.Errorf("summary of %s: %+v", agent, st)
		}
	}
}

func mustRel(t *testing.T, base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRevisionReadsFeedback checks that the second iteration's analyst is
// given the reviewer's issues and the fact checker's flagged claims, and
// that the reviewer sees its earlier feedback.
func TestRevisionReadsFeedback(t *testing.T) {
	h := newHarness(t, Config{Mock: true}, nil)
	res, _, err := h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.Mode, p.FactCheck = AnalyzeAndReview, true }))
	if err != nil {
		t.Fatal(err)
	}
	first := res.Iterations[0]
	issue := first.Feedback.CriticalIssues[0]
	flagged := first.FactCheck.Problems()
	if len(flagged) != 1 || !strings.Contains(flagged[0].Claim, "last year") {
		t.Fatalf("fact check of the first draft: %+v", first.FactCheck)
	}
	analyst := h.cnt.Of(agentAnalyst)
	revision := analyst[1].Prompt()
	for _, want := range []string{issue.Issue, issue.Suggestion, flagged[0].Claim, "<previous_analysis>", "iteration 2"} {
		if !strings.Contains(revision, want) {
			t.Errorf("revision prompt lacks %q", want)
		}
	}
	if strings.Contains(analyst[0].Prompt(), "<previous_analysis>") {
		t.Error("the first draft was asked as a revision")
	}
	if !strings.Contains(h.cnt.Of(agentReviewer)[1].Prompt(), issue.Issue) {
		t.Error("the reviewer does not see its earlier feedback")
	}
	// The revision acted on it: the flagged figure is now an estimate.
	final := res.Final().Analysis
	if strings.Contains(final, flagged[0].Claim) || !strings.Contains(final, "We estimate that spending") {
		t.Error("the revision still states the flagged claim as fact")
	}
}

// hasRepair reports whether repairs holds one by agent under rule whose
// action contains action.
func hasRepair(repairs []llm.Repair, agent, rule, action string) bool {
	for _, r := range repairs {
		if r.Agent == agent && r.Rule == rule && strings.Contains(r.Action, action) {
			return true
		}
	}
	return false
}

// TestReviewerVerdictIsAnEnum sends a reviewer reply with "accept" — the
// drift the original suffered — and checks it is mapped onto approve
// without a second call, and recorded; a reviewer that keeps replying a
// verdict with no meaning fails the run, naming the reviewer, with nothing
// half-written.
func TestReviewerVerdictIsAnEnum(t *testing.T) {
	drift := func(verdicts ...string) mock.Responder {
		var mu sync.Mutex
		n := 0
		return func(req *llm.Request) (any, error) {
			v, err := mockReviewer(req)
			if err != nil {
				return nil, err
			}
			fb := v.(Feedback)
			mu.Lock()
			if n < len(verdicts) {
				fb.IterationRecommendation = verdicts[n]
			}
			n++
			mu.Unlock()
			return fb, nil
		}
	}
	t.Run("accept is taken as approve", func(t *testing.T) {
		h := newHarness(t, Config{Mock: true}, map[string]mock.Responder{agentReviewer: drift("accept")})
		res, _, err := h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.Mode, p.Strictness = AnalyzeAndReview, Lenient }))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(h.cnt.Of(agentReviewer)); n != 1 || !res.Approved {
			t.Fatalf("%d reviewer calls, approved %v", n, res.Approved)
		}
		if !hasRepair(res.Repairs, agentReviewer, "enum", `"accept" → "approve"`) {
			t.Fatalf("repairs %+v", res.Repairs)
		}
	})
	t.Run("a verdict with no meaning twice fails the step", func(t *testing.T) {
		dir := t.TempDir()
		h := newHarness(t, Config{Mock: true}, map[string]mock.Responder{agentReviewer: drift("perhaps", "perhaps")})
		_, r, err := h.run(context.Background(), params(dir, func(p *Params) { p.Mode = AnalyzeAndReview }))
		var re *structured.ReplyError
		if !errors.As(err, &re) || re.Agent != agentReviewer || !strings.Contains(err.Error(), "assess.reviewer") ||
			!strings.Contains(err.Error(), "iteration_recommendation") || !strings.Contains(re.Raw, `"perhaps"`) {
			t.Fatalf("err = %v", err)
		}
		if n := len(h.cnt.Of(agentReviewer)); n != 2 {
			t.Fatalf("%d reviewer calls, want 2", n)
		}
		steps, _ := h.db.Steps(context.Background(), r.ID())
		last := steps[len(steps)-1]
		if last.Key != "i1/review" || last.Status != madspark.StepFailed || !strings.Contains(string(last.Output), "perhaps") {
			t.Fatalf("journal %+v", last)
		}
		slug := Slug(idea)
		meta := readJSON[Metadata](t, filepath.Join(dir, "analyses", slug, "metadata.json"))
		if meta.Status != "failed" || !strings.Contains(meta.Error, "assess.reviewer") || len(meta.Iterations) != 1 {
			t.Fatalf("metadata %+v", meta)
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "logs", "runs", "*", "run_summary.json"))
		if sum := readJSON[RunSummary](t, logs[0]); sum.Status != "failed" || sum.Agents["reviewer"].Calls != 2 {
			t.Fatalf("summary %+v", sum)
		}
		noTempFiles(t, dir)
	})
}

// cutAnalyst answers like the mock analyst, cut to its first words words,
// the first times times.
func cutAnalyst(words int, times int) mock.Responder {
	var mu sync.Mutex
	n := 0
	return func(req *llm.Request) (any, error) {
		v, err := mockAnalyst(req)
		if err != nil {
			return nil, err
		}
		text, ok := v.(string)
		mu.Lock()
		defer mu.Unlock()
		if ok && n < times {
			n++
			var kept []string
			for _, f := range strings.Fields(text) {
				if CountWords(strings.Join(kept, " ")) == words {
					break
				}
				kept = append(kept, f)
			}
			return strings.Join(kept, " "), nil
		}
		return v, nil
	}
}

func TestMinWordsAndSections(t *testing.T) {
	t.Run("missing sections are asked for once", func(t *testing.T) {
		h := newHarness(t, Config{Mock: true}, map[string]mock.Responder{agentAnalyst: cutAnalyst(150, 1)})
		res, _, err := h.run(context.Background(), params(t.TempDir(), nil))
		if err != nil {
			t.Fatal(err)
		}
		reqs := h.cnt.Of(agentAnalyst)
		if len(reqs) != 2 || res.Final().Words < 800 || res.Final().Short || len(res.Repairs) != 0 {
			t.Fatalf("%d analyst calls, %d words, repairs %+v", len(reqs), res.Final().Words, res.Repairs)
		}
		fix := reqs[1].Prompt()
		for _, want := range []string{"sections are missing", "References"} {
			if !strings.Contains(fix, want) {
				t.Errorf("repair turn lacks %q: %s", want, fix)
			}
		}
	})
	t.Run("short twice is kept and marked", func(t *testing.T) {
		dir := t.TempDir()
		h := newHarness(t, Config{Mock: true}, map[string]mock.Responder{agentAnalyst: cutAnalyst(150, 2)})
		res, _, err := h.run(context.Background(), params(dir, nil))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(h.cnt.Of(agentAnalyst)); n != 2 || !res.Final().Short || res.Final().Words != 150 {
			t.Fatalf("%d analyst calls, short %v, %d words", n, res.Final().Short, res.Final().Words)
		}
		if !hasRepair(res.Repairs, agentAnalyst, "length", "150 words, below the 800-word target") || !hasRepair(res.Repairs, agentAnalyst, "count", "kept without the sections") {
			t.Fatalf("repairs %+v", res.Repairs)
		}
		if !strings.Contains(res.Report(), "150 words (below the word target)") {
			t.Errorf("report does not mark the short analysis:\n%s", res.Report())
		}
		if _, err := os.Stat(filepath.Join(dir, "analyses", Slug(idea), "iterations", "iteration_1.md")); err != nil {
			t.Fatalf("iteration_1.md: %v", err)
		}
		noTempFiles(t, dir)
	})
	t.Run("min words is honoured by the mock", func(t *testing.T) {
		h := newHarness(t, Config{Mock: true}, nil)
		res, _, err := h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.MinWords = 2500 }))
		if err != nil || res.Final().Words < 2500 {
			t.Fatalf("%v, %d words", err, res.Final().Words)
		}
	})
}

// TestFencedAnalysis: an analysis sent inside a markdown code fence, as
// models sometimes do, is kept without the fence, with no repair call.
func TestFencedAnalysis(t *testing.T) {
	fenced := func(req *llm.Request) (any, error) {
		v, err := mockAnalyst(req)
		if text, ok := v.(string); ok {
			return "```markdown\n" + text + "\n```", err
		}
		return v, err
	}
	h := newHarness(t, Config{Mock: true}, map[string]mock.Responder{agentAnalyst: fenced})
	res, _, err := h.run(context.Background(), params(t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Final().Analysis; strings.Contains(a, "```") || !strings.HasPrefix(a, "> MOCK DATA") || len(h.cnt.Of(agentAnalyst)) != 1 {
		t.Fatalf("%d analyst calls; analysis starts %q", len(h.cnt.Of(agentAnalyst)), short(a, 40))
	}
	for in, want := range map[string]string{
		"```md\n# A\n```":            "# A",
		"```\n# A\n```":              "# A",
		"```\n# A\n```\nx\n```\n```": "```\n# A\n```\nx\n```\n```",
		"```go\nfunc main() {}\n```": "```go\nfunc main() {}\n```",
		"# A\n\n```\ncode\n```":      "# A\n\n```\ncode\n```",
		"```":                        "```",
	} {
		if got := unfence(in); got != want {
			t.Errorf("unfence(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChecks(t *testing.T) {
	if n := CountWords("## Market Size\n\n| a | b |\n|---|---|\n$4.2B in 2030 — really."); n != 8 {
		t.Errorf("CountWords = %d, want 8", n)
	}
	doc := "# X\n## 1. What We Do\n## The Problem\n## Solution\n## Market Size & Opportunity\n## Business Model\n## Why now?\n" +
		"## Competition and Moat\n## Key Risks & Mitigations\n## Milestones\n"
	if m := MissingSections(doc); !reflect.DeepEqual(m, []string{"References"}) {
		t.Errorf("missing %v", m)
	}
	text := "See https://a.example/x. and (https://b.example/y), https://A.EXAMPLE/x/ again, and https://c.example/z#frag"
	if got := CitedURLs(text); !reflect.DeepEqual(got, []string{"https://a.example/x", "https://b.example/y", "https://A.EXAMPLE/x/", "https://c.example/z#frag"}) {
		t.Errorf("CitedURLs %v", got)
	}
	if bad := uncited(text, []string{"https://a.example/x", "https://c.example/z"}); !reflect.DeepEqual(bad, []string{"https://b.example/y"}) {
		t.Errorf("uncited %v", bad)
	}
	for _, tc := range []struct{ in, want string }{
		{"See [the report](https://made.up/page) and https://made.up/x.", "See the report and ."},
		{"Kept https://ok.example/a, dropped (https://made.up/x) here.", "Kept https://ok.example/a, dropped here."},
		{"- <https://made.up/y>\n- [https://made.up/z](https://made.up/z)", "- \n- "},
	} {
		if got := dropURLs(tc.in, uncited(tc.in, []string{"https://ok.example/a"})); got != tc.want {
			t.Errorf("dropURLs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScore(t *testing.T) {
	var sum float64
	for _, c := range Criteria {
		sum += c.Weight
	}
	if sum < 0.999 || sum > 1.001 || len(Criteria) != 7 {
		t.Fatalf("%d criteria, weights sum to %v", len(Criteria), sum)
	}
	all := func(l string) Grades {
		g := Grade{Grade: l, Rationale: "r"}
		return Grades{g, g, g, g, g, g, g}
	}
	for l, want := range map[string]float64{"A": 10, "B": 7.5, "C": 5, "D": 2.5, "F": 0} {
		if s, grade, err := Score(all(l)); err != nil || s != want || grade != l {
			t.Errorf("all %s: %v %s %v", l, s, grade, err)
		}
	}
	// Market potential A (0.20·4), the rest C (0.80·2): 2.4 points of 4.
	g := all("C")
	g.MarketPotential.Grade = "A"
	if s, grade, _ := Score(g); s != 6 || grade != "C" {
		t.Errorf("mixed: %v %s", s, grade)
	}
	g.EvidenceQuality.Grade = "E"
	if _, _, err := Score(g); err == nil || !strings.Contains(err.Error(), "evidence_quality") {
		t.Errorf("bad grade: %v", err)
	}
}

func TestMockIsDeterministic(t *testing.T) {
	var texts []string
	for range 2 {
		h := newHarness(t, Config{Mock: true}, nil)
		res, _, err := h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.Mode = AnalyzeReviewAndJudge }))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Evaluation.Grades)
		texts = append(texts, res.Final().Analysis+string(b))
	}
	if texts[0] != texts[1] {
		t.Fatal("two mock runs of the same idea differ")
	}
	other := mockAnalysis(analystInput{Idea: "Drone delivery of blood samples between rural clinics", Iteration: 1, MinWords: 800, Sections: Sections})
	if !strings.Contains(other, "Drone Delivery Of Blood Samples") || strings.Contains(other, "refurbished") {
		t.Fatal("mock analysis is not flavoured by its idea")
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Params)
		want string
	}{
		{func(p *Params) { p.Idea = " " }, "idea must not be empty"},
		{func(p *Params) { p.Idea = "a\nb" }, "one line"},
		{func(p *Params) { p.Idea = strings.Repeat("x", MaxIdeaLen+1) }, "limit"},
		{func(p *Params) { p.Mode = "judge" }, "mode must be one of"},
		{func(p *Params) { p.FactCheck = true }, "fact_check needs a mode with review"},
		{func(p *Params) { p.MaxIterations = 6 }, "max_iterations must be 1..5"},
		{func(p *Params) { p.MinWords = 50 }, "min_words"},
		{func(p *Params) { p.Strictness = "harsh" }, "strictness"},
		{func(p *Params) { p.MaxWebsearches = 0 }, "max_websearches"},
		{func(p *Params) { p.OutputDir = "" }, "output_dir"},
	} {
		p := params("out", tc.mod)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", p, err, tc.want)
		}
	}
	p := params("out", nil)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

func runInfo() engine.RunInfo {
	return engine.RunInfo{Pipeline: "assess-synthesis", Mode: "mock", Params: map[string]string{}}
}
