package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

const labIdea = "A subscription service for refurbished lab equipment"

func TestAssessMockRun(t *testing.T) {
	env := mockEnv(t)
	dir := t.TempDir()
	r := invoke(t, env, "assess", labIdea, "--with-review", "--output-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"MOCK DATA", "IDEA ASSESSMENT", "Approved after 2 iteration(s)", "reviewer: reject", "reviewer: approve", "4 LLM calls"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Count(r.stderr, "web tools off in mock mode") != 1 || !strings.Contains(r.stderr, "mock mode") {
		t.Errorf("stderr: %q", r.stderr)
	}
	slug := assess.Slug(labIdea)
	for _, f := range []string{"iterations/iteration_1.md", "iterations/iteration_2.md", "iterations/reviewer_feedback_iteration_1.json",
		"iterations/reviewer_feedback_iteration_2.json", "analysis.md", "metadata.json"} {
		if _, err := os.Stat(filepath.Join(dir, "analyses", slug, f)); err != nil {
			t.Error(err)
		}
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "logs", "runs", "*_"+slug, "*")); len(logs) != 2 {
		t.Errorf("log files %v", logs)
	}
	// The run is recorded like any other.
	list := invoke(t, env, "runs", "list", "--pipeline", "assess", "--output-format", "json")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(list.stdout), &runs); err != nil || len(runs) != 1 || runs[0]["status"] != "succeeded" {
		t.Fatalf("runs: %v %s", err, list.stdout)
	}

	js := invoke(t, env, "assess", labIdea, "--judge", "--with-review-and-fact-check", "--output-dir", dir, "--output-format", "json", "--no-cache")
	var out struct {
		Pipeline string `json:"pipeline"`
		Mode     string `json:"mode"`
		Result   struct {
			PipelineMode string `json:"pipeline_mode"`
			FactCheck    bool   `json:"fact_check"`
			Iterations   []struct {
				Feedback  map[string]any `json:"feedback"`
				FactCheck map[string]any `json:"fact_check"`
			} `json:"iterations"`
			Evaluation struct {
				WeightedScore float64 `json:"weighted_score"`
				Grades        map[string]struct {
					Grade, Rationale string
				} `json:"grades"`
			} `json:"evaluation"`
		} `json:"result"`
		Usage struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &out); err != nil {
		t.Fatalf("%v: %s %s", err, js.stdout, js.stderr)
	}
	if out.Pipeline != "assess" || out.Mode != "mock" || out.Result.PipelineMode != "analyze_review_and_judge" || !out.Result.FactCheck ||
		len(out.Result.Iterations) != 2 || out.Result.Iterations[0].FactCheck["verdict"] != "reject" || len(out.Result.Evaluation.Grades) != 7 || out.Usage.LLMCalls != 7 {
		t.Fatalf("json %+v", out)
	}
	// The rerun archived the first run's files.
	if h, _ := filepath.Glob(filepath.Join(dir, "analyses", slug, "history", "*", "iterations", "iteration_2.md")); len(h) != 1 {
		t.Fatalf("history %v", h)
	}

	md := invoke(t, env, "assess", labIdea, "--output-dir", t.TempDir(), "--output-format", "markdown")
	if md.code != 0 || !strings.HasPrefix(md.stdout, "> MOCK DATA") || !strings.Contains(md.stdout, "## Key Risks & Mitigation") {
		t.Fatalf("markdown: %s", md.stdout)
	}
}

func TestAssessBadInput(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	prompts := t.TempDir()
	os.MkdirAll(filepath.Join(prompts, "agents", "analyst"), 0o755)
	os.WriteFile(filepath.Join(prompts, "agents", "analyst", "loop.md"), []byte("{{include:agents/analyst/loop.md}}"), 0o644)
	ideas := filepath.Join(t.TempDir(), "ideas.md")
	os.WriteFile(ideas, []byte("# nothing here\n\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"assess"}, "an idea is required"},
		{[]string{"assess", " "}, "idea must not be empty"},
		{[]string{"assess", "x", "--max-iterations", "9"}, "--max-iterations must be 1..5"},
		{[]string{"assess", "x", "--min-words", "10"}, "--min-words must be"},
		{[]string{"assess", "x", "--strictness", "harsh"}, "--strictness must be lenient, normal or strict"},
		{[]string{"assess", "x", "--max-websearches", "50"}, "--max-websearches must be 1..20"},
		{[]string{"assess", "x", "--output-format", "pdf"}, `unknown output format "pdf"`},
		{[]string{"assess", "x", "--analyst-prompt", "nosuch.md"}, `analyst prompt "nosuch.md": not found`},
		{[]string{"assess", "x", "--analyst-prompt", "nosuch.md"}, "available: concise.md, system.md"},
		{[]string{"assess", "x", "--prompts-dir", prompts, "--analyst-prompt", "loop.md"}, "include cycle: agents/analyst/loop.md → agents/analyst/loop.md"},
		{[]string{"assess", "x", "--batch"}, "--batch takes its ideas from --ideas-file"},
		{[]string{"assess", "--batch"}, "--batch needs --ideas-file"},
		{[]string{"assess", "x", "--ideas-file", ideas}, "--ideas-file needs --batch"},
		{[]string{"assess", "--batch", "--ideas-file", ideas}, "holds no ideas"},
		{[]string{"assess", "--batch", "--ideas-file", filepath.Join(prompts, "none.md")}, "--ideas-file"},
		{[]string{"assess", "--batch", "--ideas-file", ideas, "--max-concurrent", "0"}, "--max-concurrent must be 1..16"},
		{[]string{"assess", "synthesize", "--output-dir", t.TempDir()}, "no judged analyses"},
		{[]string{"assess", "synthesize", "--top", "0"}, "--top must be 1..10"},
		{[]string{"assess", "synthesize", "--bogus"}, "unknown flag"},
		{[]string{"assess", "x", "--output-dir", filepath.Join(ideas, "sub")}, "--output-dir: cannot make the directory "},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := invoke(t, env, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 && !strings.Contains(r.stderr, "Usage") {
				t.Fatalf("exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, tt.want)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d LLM requests were made for bad input", n)
	}
}

// analysisReply answers the analyst as a model would: every section, no
// URL. An idea with "doomed" in it is refused with a 400, which no retry
// can fix.
func analysisReply(req *openaitest.ChatRequest) openaitest.Reply {
	if strings.Contains(req.Prompt(), "doomed") {
		return openaitest.Reply{Fault: &openaitest.Fault{Status: 400, Message: "this request was refused"}}
	}
	var b strings.Builder
	b.WriteString("# An analysis\n\n")
	for _, s := range assess.Sections {
		fmt.Fprintf(&b, "## %s\n\nThis section covers %s for the idea in plain words, with care and with enough detail to matter.\n\n", s.Title, strings.ToLower(s.Title))
	}
	return openaitest.Reply{Content: b.String(), PromptTokens: 400, CompletionTokens: 300}
}

func TestAssessBatchWithAFailingIdea(t *testing.T) {
	srv := openaitest.NewServer(t, analysisReply)
	const key = "sk-test-secret-assess-123"
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": key, "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	dir := t.TempDir()
	ideas := filepath.Join(t.TempDir(), "ideas.md")
	os.WriteFile(ideas, []byte("# Ideas\n\n- Refurbished lab equipment by subscription\n- A doomed idea that the provider refuses\n"+
		"- Drone delivery of blood samples\n- Insurance for freelance developers\n- refurbished lab equipment by subscription\n"), 0o644)
	r := invoke(t, env, "assess", "--batch", "--ideas-file", ideas, "--max-concurrent", "2", "--min-words", "100", "--output-dir", dir)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	for _, want := range []string{"BATCH: 4 ideas, 3 succeeded, 1 failed", "✓ refurbished-lab-equipment-by-subscription", "✓ drone-delivery-of-blood-samples",
		"✓ insurance-for-freelance-developers", `✗ line 4 "A doomed idea that the provider refuses"`, "this request was refused"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, want := range []string{"line 7 repeats an idea", "1 of 4 ideas failed", "[4/4]"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, assess.NoSearchNote); n != 1 {
		t.Errorf("the web tools note appears %d times", n)
	}
	// Each idea is its own recorded run.
	list := invoke(t, env, "runs", "list", "--pipeline", "assess", "--output-format", "json")
	var runs []struct{ Status string }
	json.Unmarshal([]byte(list.stdout), &runs)
	statuses := map[string]int{}
	for _, run := range runs {
		statuses[run.Status]++
	}
	if statuses["succeeded"] != 3 || statuses["failed"] != 1 {
		t.Fatalf("runs %v", statuses)
	}
	for _, slug := range []string{"refurbished-lab-equipment-by-subscription", "drone-delivery-of-blood-samples", "insurance-for-freelance-developers"} {
		if _, err := os.Stat(filepath.Join(dir, "analyses", slug, "analysis.md")); err != nil {
			t.Error(err)
		}
	}
	// A failed idea leaves no analysis behind: its run keeps its error.
	if _, err := os.Stat(filepath.Join(dir, "analyses", assess.Slug("A doomed idea that the provider refuses"))); !os.IsNotExist(err) {
		t.Errorf("the failed idea has files: %v", err)
	}
	// The key is nowhere in the outputs.
	if strings.Contains(r.stdout+r.stderr, key) {
		t.Fatal("the API key was printed")
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("%s contains the API key", p)
			}
		}
		return nil
	})
}

func TestAssessBatchFullAndSynthesize(t *testing.T) {
	env := mockEnv(t)
	dir := t.TempDir()
	ideas := filepath.Join(t.TempDir(), "ideas.txt")
	os.WriteFile(ideas, []byte(labIdea+"\nDrone delivery of blood samples between rural clinics\nA marketplace for unused commercial kitchen hours\nInsurance for freelance software developers\n"), 0o644)
	r := invoke(t, env, "assess", "--batch", "--ideas-file", ideas, "--full", "--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Succeeded int `json:"succeeded"`
		Items     []struct {
			Status string `json:"status"`
			RunID  string `json:"run_id"`
		} `json:"items"`
		Synthesis *struct {
			Ranking []struct {
				Slug string `json:"slug"`
			} `json:"ranking"`
			Narrative struct {
				Top []struct{ Slug string } `json:"top"`
			} `json:"narrative"`
		} `json:"synthesis"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if out.Succeeded != 4 || out.Synthesis == nil || len(out.Synthesis.Ranking) != 4 || len(out.Synthesis.Narrative.Top) != 3 {
		t.Fatalf("batch %+v", out)
	}
	if strings.Count(r.stderr, "mock mode") != 2 { // "web tools off in mock mode" and the mock notice, once each
		t.Errorf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "reports", "synthesis.md")); err != nil {
		t.Fatal(err)
	}
	// A later synthesis on its own: the same ranking.
	s := invoke(t, env, "assess", "synthesize", "--output-dir", dir, "--output-format", "markdown")
	if s.code != 0 || !strings.Contains(s.stdout, "# Synthesis of 4 judged ideas") || !strings.Contains(s.stdout, "## Top 3") {
		t.Fatalf("synthesize: %d %s %s", s.code, s.stdout, s.stderr)
	}
	text := invoke(t, env, "assess", "synthesize", "--output-dir", dir, "--top", "2")
	if text.code != 0 || !strings.Contains(text.stdout, "SYNTHESIS of 4 judged ideas") || !strings.Contains(text.stdout, " 1. ") {
		t.Fatalf("synthesize text: %s", text.stdout)
	}
	list := invoke(t, env, "runs", "list", "--pipeline", "assess-synthesis", "--output-format", "json")
	var runs []map[string]any
	if json.Unmarshal([]byte(list.stdout), &runs); len(runs) != 3 {
		t.Fatalf("synthesis runs: %s", list.stdout)
	}
}

// TestAssessLiveReviewOverTheWire runs the review loop through the OpenAI
// provider against the wire fake: the reviewer's schema goes out as
// response_format, and a reply whose verdict is "accept" comes back, fails
// validation, is sent back once and is answered with "approve".
func TestAssessLiveReviewOverTheWire(t *testing.T) {
	var mu sync.Mutex
	reviews := 0
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
			return analysisReply(req)
		}
		if name := req.ResponseFormat.JSONSchema.Name; name != "assess_reviewer_feedback" {
			return openaitest.Reply{Content: "unexpected schema " + name}
		}
		if !strings.Contains(string(req.ResponseFormat.JSONSchema.Schema), `"enum":["approve","reject"]`) {
			return openaitest.Reply{Content: "the verdict is not an enum in the schema sent"}
		}
		mu.Lock()
		reviews++
		verdict := "accept"
		if reviews > 1 {
			verdict = "approve"
		}
		mu.Unlock()
		return openaitest.Reply{Content: `{"overall_assessment": "Sound.", "strengths": ["clear"], "critical_issues": [], "improvements": [],
			"minor_suggestions": [], "iteration_recommendation": "` + verdict + `", "iteration_reason": "nothing critical remains"}`}
	})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	dir := t.TempDir()
	r := invoke(t, env, "assess", labIdea, "--with-review", "--min-words", "100", "--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Result struct {
			Approved   bool `json:"approved"`
			Iterations []struct {
				Feedback struct {
					Recommendation string `json:"iteration_recommendation"`
				} `json:"feedback"`
			} `json:"iterations"`
		} `json:"result"`
		Usage struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"usage"`
		Repairs []llm.Repair `json:"repairs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	// "accept" is taken as approve without asking again, and recorded.
	if !out.Result.Approved || len(out.Result.Iterations) != 1 || out.Result.Iterations[0].Feedback.Recommendation != "approve" || out.Usage.LLMCalls != 2 {
		t.Fatalf("result %+v", out)
	}
	if len(out.Repairs) != 1 || out.Repairs[0].Agent != "assess.reviewer" || out.Repairs[0].Rule != "enum" || out.Repairs[0].Step != "i1/review" {
		t.Fatalf("repairs %+v", out.Repairs)
	}
}

// TestAssessResume fails a run at its reviewer, then resumes it: the
// stored parameters decode, the analyst's journaled step is replayed with
// no call, and --output-dir gets the seed's layout.
func TestAssessResume(t *testing.T) {
	reviewer := func(fail bool) func(*openaitest.ChatRequest) openaitest.Reply {
		return func(req *openaitest.ChatRequest) openaitest.Reply {
			if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
				return analysisReply(req)
			}
			if fail {
				return openaitest.Reply{Fault: &openaitest.Fault{Status: 400, Message: "the reviewer is down"}}
			}
			return openaitest.Reply{Content: `{"overall_assessment": "Sound.", "strengths": ["clear"], "critical_issues": [], "improvements": [],
				"minor_suggestions": [], "iteration_recommendation": "approve", "iteration_reason": "nothing critical remains"}`}
		}
	}
	down := openaitest.NewServer(t, reviewer(true))
	env := map[string]string{"OPENAI_BASE_URL": down.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	r := invoke(t, env, "assess", labIdea, "--with-review", "--min-words", "100", "--output-dir", t.TempDir(), "--no-cache")
	if r.code != 1 || !strings.Contains(r.stderr, "assess.reviewer") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	list := invoke(t, env, "runs", "list", "--pipeline", "assess", "--output-format", "json")
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &runs); err != nil || len(runs) != 1 || runs[0].Status != "failed" {
		t.Fatalf("runs: %v %s", err, list.stdout)
	}

	up := openaitest.NewServer(t, reviewer(false))
	env["OPENAI_BASE_URL"] = up.URL
	out := t.TempDir()
	res := invoke(t, env, "resume", runs[0].RunID, "--output-dir", out)
	if res.code != 0 {
		t.Fatalf("resume: exit %d: %s", res.code, res.stderr)
	}
	reqs := up.Requests()
	if len(reqs) != 1 || reqs[0].ResponseFormat == nil || reqs[0].ResponseFormat.JSONSchema.Name != "assess_reviewer_feedback" {
		t.Fatalf("the resumed run made %d requests; want the reviewer's only", len(reqs))
	}
	slug := assess.Slug(labIdea)
	for _, f := range []string{"analysis.md", "iterations/iteration_1.md", "iterations/reviewer_feedback_iteration_1.json"} {
		if _, err := os.Stat(filepath.Join(out, "analyses", slug, f)); err != nil {
			t.Error(err)
		}
	}
}

// analysisOf is an analysis with every section and exactly words words.
func analysisOf(words int) string {
	var b strings.Builder
	for _, s := range assess.Sections {
		fmt.Fprintf(&b, "## %s\n\nThis covers %s.\n\n", s.Title, strings.ToLower(s.Title))
	}
	for n := assess.CountWords(b.String()); n < words; n++ {
		b.WriteString("detail ")
	}
	return b.String()
}

// TestAssessLiveFailuresAreRepaired drives the typical failures of a real
// model through the OpenAI wire: a reply cut off at the token limit, an
// analysis a few words short, JSON wrapped in prose. Each gets one repair
// turn saying what was wrong; a second failure ends the run with one line
// naming the agent.
func TestAssessLiveFailuresAreRepaired(t *testing.T) {
	const approve = `{"overall_assessment": "Sound.", "strengths": ["clear"], "critical_issues": [], "improvements": [],
		"minor_suggestions": [], "iteration_recommendation": "approve", "iteration_reason": "nothing critical remains"}`
	// script answers each agent from its list in turn, the last one again
	// once the list is spent.
	script := func(analyst, reviewer []openaitest.Reply) func(*openaitest.ChatRequest) openaitest.Reply {
		var mu sync.Mutex
		var na, nr int
		return func(req *openaitest.ChatRequest) openaitest.Reply {
			mu.Lock()
			defer mu.Unlock()
			if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
				na++
				return analyst[min(na, len(analyst))-1]
			}
			nr++
			return reviewer[min(nr, len(reviewer))-1]
		}
	}
	cut := openaitest.Reply{Content: analysisOf(60), FinishReason: "length"}
	short := openaitest.Reply{Content: analysisOf(99)}
	good := openaitest.Reply{Content: analysisOf(140)}
	lastUser := func(req *openaitest.ChatRequest) string { return req.Messages[len(req.Messages)-1].Content }
	// failure is the error line: the last of stderr, after the web tools
	// note.
	failure := func(stderr string) string {
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		return lines[len(lines)-1]
	}
	run := func(t *testing.T, analyst, reviewer []openaitest.Reply) (result, []*openaitest.ChatRequest, string) {
		srv := openaitest.NewServer(t, script(analyst, reviewer))
		env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
		dir := t.TempDir()
		r := invoke(t, env, "assess", labIdea, "--with-review", "--min-words", "100", "--output-dir", dir, "--no-cache")
		return r, srv.Requests(), dir
	}

	t.Run("cut off, then whole; JSON in prose", func(t *testing.T) {
		r, reqs, _ := run(t, []openaitest.Reply{cut, good},
			[]openaitest.Reply{{Content: "Here is my review:\n\n" + approve + "\n\nI hope this helps."}})
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if len(reqs) != 3 || !strings.Contains(lastUser(reqs[1]), "cut off at the length limit") {
			t.Fatalf("%d requests; the repair turn says %q", len(reqs), lastUser(reqs[min(1, len(reqs)-1)]))
		}
	})
	t.Run("a few words short: kept, marked, not asked again", func(t *testing.T) {
		r, reqs, dir := run(t, []openaitest.Reply{short}, []openaitest.Reply{{Content: approve}})
		if r.code != 0 || len(reqs) != 2 {
			t.Fatalf("exit %d, %d requests: %s", r.code, len(reqs), r.stderr)
		}
		if !strings.Contains(r.stdout, "99 words (below the word target)") || !strings.Contains(r.stdout, "; 1 repair") {
			t.Errorf("the summary does not mark the short analysis, or count the repair:\n%s", r.stdout)
		}
		b, err := os.ReadFile(filepath.Join(dir, "analyses", assess.Slug(labIdea), "metadata.json"))
		if err != nil || !strings.Contains(string(b), `"status": "succeeded"`) {
			t.Errorf("metadata: %v %s", err, b)
		}
	})
	t.Run("reviewer cut off twice", func(t *testing.T) {
		half := openaitest.Reply{Content: approve[:len(approve)/2], FinishReason: "length"}
		r, reqs, _ := run(t, []openaitest.Reply{good}, []openaitest.Reply{half})
		if r.code != 1 || len(reqs) != 3 {
			t.Fatalf("exit %d, %d requests: %s", r.code, len(reqs), r.stderr)
		}
		if msg := failure(r.stderr); !strings.HasPrefix(msg, "madspark: run ") || !strings.Contains(msg, "assess.reviewer: reply is truncated") || !strings.Contains(msg, "could not be used") {
			t.Errorf("stderr %q: want one line naming the reviewer", r.stderr)
		}
	})
}

// TestAssessEndToEndWithImperfectReplies runs a fact-checked, judged
// assessment through the CLI against a model whose every agent answers
// imperfectly but usably: a short analysis citing a made-up URL, "Accept"
// for approve, an approval contradicting an unsupported claim, a "b+"
// grade. The run succeeds and its JSON lists every repair.
func TestAssessEndToEndWithImperfectReplies(t *testing.T) {
	g := map[string]any{"grade": "B", "rationale": "solid"}
	replies := map[string]any{
		"assess_reviewer_feedback": map[string]any{"overall_assessment": "Sound.", "strengths": []string{"clear"}, "critical_issues": []any{}, "improvements": []any{},
			"minor_suggestions": []string{}, "iteration_recommendation": "approve", "iteration_reason": "Nothing critical remains."},
		"assess_fact_check": map[string]any{"claims": []any{map[string]any{"claim": "Labs replace equipment every five years", "section": "The Problem",
			"status": "supported", "source": "", "note": ""}}, "verdict": "approve", "summary": "Claims hold."},
		"assess_judgement": map[string]any{"grades": map[string]any{"market_potential": g, "competitive_landscape": g, "technical_feasibility": g,
			"capital_requirements": g, "regulatory_risks": g, "execution_difficulty": g, "evidence_quality": g}, "summary": "A fair idea.", "recommendation": "pursue"},
	}
	base := func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
			return openaitest.Reply{Content: analysisOf(80) + "\nSource: https://made.up/market-report\n"}
		}
		b, _ := json.Marshal(replies[req.ResponseFormat.JSONSchema.Name])
		return openaitest.Reply{Content: string(b)}
	}
	srv := openaitest.NewServer(t, openaitest.Imperfect(base, map[string][]openaitest.Flaw{
		"assess_reviewer_feedback": {openaitest.Set("iteration_recommendation", "Accept")},
		"assess_fact_check":        {openaitest.Set("claims/0/status", "unsupported")},
		"assess_judgement":         {openaitest.Set("grades/evidence_quality/grade", "b+"), openaitest.Fence()},
	}))
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	dir := t.TempDir()
	r := invoke(t, env, "assess", labIdea, "--judge", "--with-review-and-fact-check", "--max-iterations", "1", "--min-words", "100",
		"--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Result struct {
			Approved   bool `json:"approved"`
			Iterations []struct {
				Analysis string `json:"analysis"`
				Short    bool   `json:"short"`
			} `json:"iterations"`
			Evaluation struct {
				Grades assess.Grades `json:"grades"`
			} `json:"evaluation"`
			Repairs []llm.Repair `json:"repairs"`
		} `json:"result"`
		RunID   string       `json:"run_id"`
		Repairs []llm.Repair `json:"repairs"`
		Usage   struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	it := out.Result.Iterations
	if len(it) != 1 || !it[0].Short || strings.Contains(it[0].Analysis, "made.up") || out.Result.Approved ||
		out.Result.Evaluation.Grades.EvidenceQuality.Grade != "B" || out.Usage.LLMCalls != 4 {
		t.Fatalf("result %+v", out)
	}
	want := map[string]bool{"assess.analyst length": false, "assess.analyst reference": false, "assess.reviewer enum": false,
		"assess.fact_checker consistency": false, "assess.judge enum": false}
	for _, rep := range out.Repairs {
		want[rep.Agent+" "+rep.Rule] = true
		if rep.Step == "" || rep.Action == "" {
			t.Errorf("repair %+v", rep)
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no %s repair in %+v", k, out.Repairs)
		}
	}
	if len(out.Result.Repairs) != len(out.Repairs) {
		t.Errorf("the result holds %d repairs, the output %d", len(out.Result.Repairs), len(out.Repairs))
	}
	// The saved result carries them too.
	shown := invoke(t, env, "runs", "show", out.RunID)
	var rec struct {
		Status string `json:"status"`
		Result struct {
			Repairs []llm.Repair `json:"repairs"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(shown.stdout), &rec); err != nil || rec.Status != "succeeded" || len(rec.Result.Repairs) != len(out.Repairs) {
		t.Errorf("runs show: %v %s", err, shown.stdout)
	}
}

// TestAssessFullKeepsTheAnalysisWhenTheSynthesisFails: a synthesizer with
// nothing usable in its replies fails the synthesis, but the judged
// analysis is written and printed, and the error says how to rank again.
func TestAssessFullKeepsTheAnalysisWhenTheSynthesisFails(t *testing.T) {
	g := map[string]any{"grade": "B", "rationale": "solid"}
	replies := map[string]any{
		"assess_reviewer_feedback": map[string]any{"overall_assessment": "Sound.", "strengths": []string{"clear"}, "critical_issues": []any{}, "improvements": []any{},
			"minor_suggestions": []string{}, "iteration_recommendation": "approve", "iteration_reason": "Nothing critical remains."},
		"assess_judgement": map[string]any{"grades": map[string]any{"market_potential": g, "competitive_landscape": g, "technical_feasibility": g,
			"capital_requirements": g, "regulatory_risks": g, "execution_difficulty": g, "evidence_quality": g}, "summary": "A fair idea.", "recommendation": "pursue"},
	}
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
			return openaitest.Reply{Content: analysisOf(120)}
		}
		v, ok := replies[req.ResponseFormat.JSONSchema.Name]
		if !ok {
			return openaitest.Reply{Content: "These ideas are all promising."}
		}
		b, _ := json.Marshal(v)
		return openaitest.Reply{Content: string(b)}
	})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	dir := t.TempDir()
	r := invoke(t, env, "assess", labIdea, "--full", "--min-words", "100", "--output-dir", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "synthesis:") || !strings.Contains(r.stderr, "madspark assess synthesize --output-dir "+dir) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "EVALUATION: 7.5/10") {
		t.Errorf("the judged analysis was not printed:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "analyses", assess.Slug(labIdea), "evaluation.json")); err != nil {
		t.Error(err)
	}
}
