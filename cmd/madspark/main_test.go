package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/pipeline/spark/sparktest"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// result is one invocation of run.
type result struct {
	code           int
	stdout, stderr string
}

// invoke runs the CLI in-process with exactly the environment vars.
func invoke(t testing.TB, vars map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return vars[k] }
	code := run(context.Background(), args, getenv, strings.NewReader(""), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func mockEnv(t *testing.T) map[string]string {
	return map[string]string{"MADSPARK_MODE": "mock", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
}

// report is the JSON contract of a spark run.
type report struct {
	RunID      string `json:"run_id"`
	Pipeline   string `json:"pipeline"`
	Mode       string `json:"mode"`
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Topic      string `json:"topic"`
	Context    string `json:"context"`
	Candidates []map[string]any
	Usage      struct {
		LLMCalls     int     `json:"llm_calls"`
		CachedCalls  int     `json:"cached_calls"`
		InputTokens  int     `json:"input_tokens"`
		OutputTokens int     `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
	} `json:"usage"`
	DurationMS *int64 `json:"duration_ms"`
}

func decode(t *testing.T, r result) report {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d, stderr: %s", r.code, r.stderr)
	}
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return rep
}

func TestMockRunJSONContract(t *testing.T) {
	env := mockEnv(t)
	r := invoke(t, env, "spark", "AI in education", "accessible to all", "--enhanced-reasoning", "--logical-inference", "--output-format", "json")
	rep := decode(t, r)
	if rep.Pipeline != "spark" || rep.Mode != "mock" || rep.Provider != "mock" || rep.RunID == "" || rep.Topic != "AI in education" || rep.Context != "accessible to all" || rep.DurationMS == nil {
		t.Fatalf("envelope = %+v", rep)
	}
	if !strings.Contains(r.stderr, "mock mode") {
		t.Fatalf("no mock notice on stderr: %q", r.stderr)
	}
	if rep.Usage.LLMCalls != 9 || rep.Usage.CachedCalls != 0 || rep.Usage.InputTokens == 0 {
		t.Fatalf("usage = %+v, want 9 calls", rep.Usage)
	}
	if len(rep.Candidates) != 3 {
		t.Fatalf("%d candidates", len(rep.Candidates))
	}
	for _, c := range rep.Candidates {
		for _, k := range []string{"idea", "initial_score", "initial_critique", "advocacy", "skepticism", "improved_idea",
			"improved_score", "improved_critique", "score_delta", "multi_dimensional_evaluation",
			"improved_multi_dimensional_evaluation", "logical_inference"} {
			if _, ok := c[k]; !ok {
				t.Fatalf("candidate lacks %q: %v", k, c)
			}
		}
		for _, k := range []string{"initial_score", "improved_score"} {
			s, ok := c[k].(float64)
			if !ok || s < 0 || s > 10 {
				t.Fatalf("%s = %v, want a number 0-10", k, c[k])
			}
		}
		md := c["multi_dimensional_evaluation"].(map[string]any)
		if len(md["dimensions"].(map[string]any)) != 7 || md["weighted_score"] == nil || md["mean"] == nil {
			t.Fatalf("multi-dimensional evaluation = %v", md)
		}
	}
}

func TestBareFormIsSpark(t *testing.T) {
	env := mockEnv(t)
	bare := decode(t, invoke(t, env, "sustainable urban farming", "low-cost", "--output-format", "json", "--no-cache"))
	sub := decode(t, invoke(t, env, "spark", "sustainable urban farming", "low-cost", "--output-format", "json", "--no-cache"))
	a, _ := json.Marshal(bare.Candidates)
	b, _ := json.Marshal(sub.Candidates)
	if string(a) != string(b) {
		t.Fatal("bare form and spark subcommand differ")
	}
	// Context is optional; a topic named like a command works after "spark".
	rep := decode(t, invoke(t, env, "spark", "runs", "--output-format", "json", "--num-candidates", "2", "--num-top-candidates", "1"))
	if rep.Topic != "runs" || rep.Context != "" || len(rep.Candidates) != 1 {
		t.Fatalf("spark runs = %+v", rep)
	}
	// A one-word topic follows "--" (a word alone is a command:
	// TestCommandWordsNeverStartARun).
	for _, topic := range []string{"shark", "patch", "assets"} {
		if rep := decode(t, invoke(t, env, "--output-format", "json", "--num-candidates", "1", "--num-top-candidates", "1", "--", topic)); rep.Topic != topic {
			t.Fatalf("%s: %+v", topic, rep)
		}
	}
}

func TestOutputFormats(t *testing.T) {
	env := mockEnv(t)
	for format, want := range map[string]string{
		"brief":    "score ",
		"detailed": "Advocacy:",
		"markdown": "### Skepticism",
	} {
		r := invoke(t, env, "urban farming", "--output-format", format)
		if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "MOCK DATA") && !strings.Contains(r.stdout, "Mock data") {
			t.Errorf("%s: exit %d, output lacks %q or the mock notice:\n%s", format, r.code, want, r.stdout)
		}
	}
}

func TestCachedRerunMakesNoCalls(t *testing.T) {
	env := mockEnv(t)
	first := decode(t, invoke(t, env, "ocean cleanup", "--output-format", "json"))
	second := decode(t, invoke(t, env, "ocean cleanup", "--output-format", "json"))
	if first.Usage.LLMCalls != 6 || second.Usage.LLMCalls != 0 || second.Usage.CachedCalls != 6 {
		t.Fatalf("first %+v, second %+v", first.Usage, second.Usage)
	}
	third := decode(t, invoke(t, env, "ocean cleanup", "--output-format", "json", "--no-cache"))
	if third.Usage.LLMCalls != 6 {
		t.Fatalf("--no-cache usage %+v", third.Usage)
	}
}

func TestOutputFile(t *testing.T) {
	env := mockEnv(t)
	path := filepath.Join(t.TempDir(), "out.json")
	r := invoke(t, env, "urban farming", "--output-format", "json", "--output", path)
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "wrote "+path) {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil || !json.Valid(data) {
		t.Fatalf("output file: %v", err)
	}
	// An output path that cannot be written is a usage error before any
	// run: a directory, or a file whose directory is missing (which is not
	// created).
	for _, bad := range []string{filepath.Dir(path), filepath.Join(path, "x.json"), filepath.Join(filepath.Dir(path), "nope", "x.json")} {
		r = invoke(t, env, "ocean cleanup", "--output-format", "json", "--output", bad)
		if r.code != 2 || !strings.Contains(r.stderr, "--output:") || strings.Contains(r.stderr, "run ") {
			t.Fatalf("--output %s: exit %d stderr %q", bad, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "nope")); !os.IsNotExist(err) {
		t.Fatalf("a missing directory was created: %v", err)
	}
}

func TestRunsListAndShow(t *testing.T) {
	env := mockEnv(t)
	rep := decode(t, invoke(t, env, "urban farming", "--output-format", "json"))
	list := invoke(t, env, "runs", "list")
	if list.code != 0 || !strings.Contains(list.stdout, rep.RunID) || !strings.Contains(list.stdout, "succeeded") {
		t.Fatalf("runs list: %+v", list)
	}
	show := decode(t, invoke(t, env, "runs", "show", rep.RunID, "--output-format", "json"))
	a, _ := json.Marshal(show.Candidates)
	b, _ := json.Marshal(rep.Candidates)
	if string(a) != string(b) || show.Usage != rep.Usage {
		t.Fatal("runs show differs from the run's output")
	}
	rec := invoke(t, env, "runs", "show", rep.RunID, "--output-format", "record")
	if rec.code != 0 || !strings.Contains(rec.stdout, `"key": "improve"`) {
		t.Fatalf("record lacks steps: %s", rec.stdout)
	}
	// A run that does not exist is bad input, as for export and resume.
	missing := invoke(t, env, "runs", "show", "nope")
	if missing.code != 2 || missing.stderr != "madspark: no run nope (madspark runs list)\n" {
		t.Fatalf("missing run: %+v", missing)
	}
	// The table names what each pipeline's run is about.
	if r := invoke(t, env, "debate", "what is a B-tree"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := invoke(t, env, "runs", "list", "--pipeline", "debate"); r.code != 0 || !strings.Contains(r.stdout, "what is a B-tree") {
		t.Fatalf("runs list lacks the debate's query: %+v", r)
	}
	if r := invoke(t, env, "runs", "list", "--status", "done"); r.code != 2 || !strings.Contains(r.stderr, `unknown --status "done"`) {
		t.Fatalf("bad status: %+v", r)
	}
	if r := invoke(t, env, "runs", "list", "--pipeline", "sparks"); r.code != 0 || r.stdout != "" || r.stderr != "madspark: no runs match\n" {
		t.Fatalf("no runs: %+v", r)
	}
}

// TestHelpOfACommand: "madspark help runs list" is that command's help.
func TestHelpOfACommand(t *testing.T) {
	r := invoke(t, mockEnv(t), "help", "runs", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "madspark runs list") || strings.Contains(r.stdout, "Available Commands:\n  assess") {
		t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestBadInputExitsTwoBeforeAnyCall(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{}, "a topic is required"},
		{[]string{""}, "topic must not be empty"},
		{[]string{"   "}, "topic must not be empty"},
		{[]string{"spark", strings.Repeat("a", 2001)}, "limit is 2000"},
		{[]string{"ok topic", strings.Repeat("c", 5001)}, "limit is 5000"},
		{[]string{"bad \xff utf8"}, "UTF-8"},
		{[]string{"ok topic", "--temperature-preset", "spicy"}, `unknown temperature preset "spicy"`},
		{[]string{"ok topic", "--num-candidates", "2", "--num-top-candidates", "3"}, "must not exceed num_candidates"},
		{[]string{"ok topic", "--inference-type", "deduction"}, "inference_type must be one of full_reasoning, causal_chain"},
		{[]string{"ok topic", "--num-top-candidates", "6"}, "num_top_candidates must be 1..5"},
		{[]string{"ok topic", "--num-candidates", "x"}, `--num-candidates wants a whole number, got "x"`},
		{[]string{"ok topic", "--timeout", "soon"}, `--timeout wants a duration such as 90s`},
		{[]string{"ok topic", "--novelty-threshold", "high"}, `--novelty-threshold wants a number, got "high"`},
		{[]string{"ok topic", "--temperature", "3"}, "--temperature must be within 0..2"},
		{[]string{"ok topic", "--novelty-threshold", "0"}, "novelty_threshold"},
		{[]string{"ok topic", "--output-format", "xml"}, `unknown output format "xml"`},
		{[]string{"ok topic", "--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{"ok topic", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"spark"}, "a topic is required"},
		{[]string{"spark", "a", "b", "c"}, `got 3: quote a topic of several words, as in madspark spark "a b c"`},
		{[]string{"urban", "farming", "ideas"}, `at most 2 arguments, TOPIC and CONTEXT, got 3: quote a topic of several words, as in madspark "urban farming ideas"`},
		{[]string{"chaos"}, "chaos needs PROMPT; usage: madspark chaos PROMPT"},
		{[]string{"sprak", "AI"}, `unknown command "sprak"; did you mean madspark spark? (a spark run on a topic of one word: madspark spark sprak AI; on a topic of several words, quoted: madspark 'sprak AI')`},
		{[]string{"bookmark", "list"}, `unknown command "bookmark"; did you mean madspark bookmarks?`},
		{[]string{"run", "list"}, `did you mean madspark runs list?`},
		{[]string{"exprot", "my run"}, `did you mean madspark export? (a spark run on a topic of one word: madspark spark exprot 'my run'; on a topic of several words, quoted: madspark 'exprot my run')`},
		{[]string{"ok"}, `unknown command "ok"; madspark --help lists its commands (a spark run on a topic of one word: madspark spark ok)`},
		{[]string{"help", "nope"}, `no command "nope"; the commands are listed by madspark --help`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := invoke(t, env, tt.args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			if r.code != 2 || !strings.HasPrefix(last, "madspark: ") || !strings.Contains(last, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, tt.want)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "strconv.") {
				t.Fatalf("stack trace on stderr: %s", r.stderr)
			}
		})
	}
	bad := map[string]string{"MADSPARK_PROVIDER": "cohere", "MADSPARK_DB": env["MADSPARK_DB"]}
	if r := invoke(t, bad, "ok topic"); r.code != 2 || !strings.Contains(r.stderr, "MADSPARK_PROVIDER must be one of") {
		t.Fatalf("bad provider: %+v", r)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d LLM requests were made for bad input", n)
	}
}

// liveReply answers spark's agents the way a model would, from what the
// wire request says (sparktest.Reply).
func liveReply(req *openaitest.ChatRequest) openaitest.Reply { return sparktest.Reply(req) }

func TestLiveOpenAICompatible(t *testing.T) {
	srv := openaitest.NewServer(t, liveReply)
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test-secret-123", "MADSPARK_MODEL": "gpt-4o-mini",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	rep := decode(t, invoke(t, env, "urban farming", "cheap", "--output-format", "json", "--num-candidates", "7", "--num-top-candidates", "4"))
	if rep.Mode != "live" || rep.Provider != "openai" || rep.Model != "gpt-4o-mini" || len(rep.Candidates) != 4 {
		t.Fatalf("report = %+v", rep)
	}
	reqs := srv.Requests()
	if len(reqs) != 6 || rep.Usage.LLMCalls != 6 || rep.Usage.InputTokens != 600 || rep.Usage.OutputTokens != 300 {
		t.Fatalf("%d requests, usage %+v", len(reqs), rep.Usage)
	}
	if rep.Usage.CostUSD != 0 {
		t.Fatalf("a server on this machine costs nothing: %+v", rep.Usage)
	}
	for _, q := range reqs {
		if q.ResponseFormat == nil || q.ResponseFormat.Type != "json_schema" || len(q.ResponseFormat.JSONSchema.Schema) == 0 {
			t.Fatalf("request without json_schema: %s", q.Body)
		}
		if q.Header.Get("Authorization") != "Bearer sk-test-secret-123" {
			t.Fatalf("key not sent")
		}
	}
	if c := rep.Candidates[0]; c["initial_score"].(float64) != 8 || !strings.HasPrefix(c["improved_idea"].(string), "Better idea 0") {
		t.Fatalf("first candidate = %v", c)
	}
}

func TestProviderFailureExitsOneAndKeepsRun(t *testing.T) {
	srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Fault: &openaitest.Fault{Status: 401, Message: "Incorrect API key provided: sk-live-***123"}}
	})
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-live-supersecret-123",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	r := invoke(t, env, "urban farming", "--quiet")
	if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want exit 1 and one line", r.code, r.stderr)
	}
	for _, want := range []string{"openai", "stage generate", "401"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr %q lacks %q", r.stderr, want)
		}
	}
	// The message says how to finish the kept run.
	if m := regexp.MustCompile(`^madspark: run (\S+) \(openai/gpt-4o-mini\) failed: the model server at http://127\.0\.0\.1:\d+/v1 refused the API key \(HTTP 401: Incorrect API key provided: \[redacted\]\) \(stage generate, agent spark\.generate\) — check the key \(OPENAI_API_KEY\) and that it may use this model\. Once the cause is fixed, madspark resume (\S+) finishes it\n$`).FindStringSubmatch(r.stderr); m == nil || m[1] != m[2] {
		t.Fatalf("no resume hint: %q", r.stderr)
	}
	list := invoke(t, env, "runs", "list", "--status", "failed", "--output-format", "json")
	if list.code != 0 || !strings.Contains(list.stdout, `"status": "failed"`) || !strings.Contains(list.stdout, "stage generate") {
		t.Fatalf("failed run not kept: %s", list.stdout)
	}
	db, _ := os.ReadFile(env["MADSPARK_DB"])
	wal, _ := os.ReadFile(env["MADSPARK_DB"] + "-wal")
	for _, s := range []string{r.stderr, r.stdout, list.stdout, string(db), string(wal)} {
		if strings.Contains(s, "supersecret") {
			t.Fatal("the API key leaked into output or the database")
		}
	}
}

func TestTimeoutFailsTheRun(t *testing.T) {
	env := mockEnv(t)
	env["MADSPARK_MOCK_LATENCY"] = "300ms"
	r := invoke(t, env, "urban farming", "--timeout", "100ms", "--no-cache")
	if r.code != 1 || !strings.Contains(lastLine(r.stderr), "the run took longer than its time limit of 100ms and was stopped (stage generate, agent spark.generate) — try again with a longer --timeout") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// interruptMidRun runs the CLI with args and cancels it, as Ctrl-C would,
// once its run is recorded as running. It returns the exit code and stderr.
func interruptMidRun(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		list := invoke(t, env, "runs", "list", "--output-format", "json")
		if strings.Contains(list.stdout, `"status": "running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
	}
	cancel()
	return <-done, errb.String()
}

func TestInterruptRecordsInterruptedRun(t *testing.T) {
	env := mockEnv(t)
	env["MADSPARK_MOCK_LATENCY"] = "50ms"
	// Exit 130, as for a process killed by SIGINT, and one line that says
	// how to finish the run.
	code, stderr := interruptMidRun(t, env, "urban farming", "--no-cache")
	hint := regexp.MustCompile(`^madspark: interrupted; run (\S+) is kept, finish it with: madspark resume (\S+)$`).FindStringSubmatch(lastLine(stderr))
	if code != 130 || hint == nil || hint[1] != hint[2] {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	list := invoke(t, env, "runs", "list", "--status", "interrupted", "--output-format", "json")
	if !strings.Contains(list.stdout, `"error": "interrupted at stage `) || !strings.Contains(list.stdout, hint[1]) {
		t.Fatalf("interrupted run not recorded as interrupted: %s", list.stdout)
	}
	// The hint works: the run finishes.
	if r := invoke(t, env, "resume", hint[1], "--output-format", "json"); r.code != 0 || !strings.Contains(r.stdout, hint[1]) {
		t.Fatalf("resume: exit %d %s", r.code, r.stderr)
	}
}

// TestInterruptedChaosResumesIntoItsDirectory: the hint of an interrupted
// run that writes files names its output directory, and following it
// writes them there.
func TestInterruptedChaosResumesIntoItsDirectory(t *testing.T) {
	env := mockEnv(t)
	env["MADSPARK_MOCK_LATENCY"] = "50ms"
	dir := filepath.Join(t.TempDir(), "chaos out")
	code, stderr := interruptMidRun(t, env, "chaos", "food waste", "--no-cache", "--output-dir", dir)
	hint := regexp.MustCompile(`finish it with: madspark resume (\S+) --output-dir '([^']+)' \(outputs so far in `).FindStringSubmatch(stderr)
	if code != 130 || hint == nil || hint[2] != dir {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if r := invoke(t, env, "resume", hint[1], "--output-dir", hint[2]); r.code != 0 {
		t.Fatalf("resume: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "final_output.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestChaosWritesOutputs(t *testing.T) {
	env := mockEnv(t)
	dir := filepath.Join(t.TempDir(), "out")
	r := invoke(t, env, "chaos", "new ways to reduce food waste in cities", "--iterations", "2", "--seed", "3", "--output-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, s := range []string{"MOCK DATA", "seed 3", "ITERATION 2", "ACCEPTED IDEAS", "REJECTED IDEAS", "SYNTHESIS", "UNRESOLVED QUESTIONS", "12 LLM calls"} {
		if !strings.Contains(r.stdout, s) {
			t.Fatalf("summary lacks %q:\n%s", s, r.stdout)
		}
	}
	final, err := os.ReadFile(filepath.Join(dir, "final_output.txt"))
	if err != nil || string(final) != r.stdout {
		t.Fatalf("final_output.txt differs from the printed summary: %v", err)
	}
	for _, f := range []string{"iteration_1/chaos.txt", "iteration_1/creative_b.txt", "iteration_2/refinement_a.txt", "iteration_2/judge.json", "result.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("missing %s: %v", f, err)
		}
	}
	var ideas struct {
		Ideas      []map[string]any `json:"ideas"`
		Statistics map[string]any   `json:"statistics"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "ideas.json"))
	if err := json.Unmarshal(data, &ideas); err != nil || len(ideas.Ideas) == 0 || ideas.Statistics["total_accepted"] != float64(len(ideas.Ideas)) {
		t.Fatalf("ideas.json: %v\n%s", err, data)
	}
	// The same seed again: the memory rejects every repeat, so nothing new is accepted twice.
	again := invoke(t, env, "chaos", "new ways to reduce food waste in cities", "--seed", "3", "--output-dir", dir+"2", "--output-format", "json", "--no-cache")
	var rep struct {
		Result struct {
			Accepted []any `json:"accepted"`
		} `json:"result"`
		Usage struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"usage"`
	}
	if again.code != 0 || json.Unmarshal([]byte(again.stdout), &rep) != nil || rep.Usage.LLMCalls != 6 || len(rep.Result.Accepted) != 0 {
		t.Fatalf("repeat run: exit %d, %d accepted, %d calls; %s", again.code, len(rep.Result.Accepted), rep.Usage.LLMCalls, again.stderr)
	}
}

func TestChaosBadInput(t *testing.T) {
	env := mockEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"chaos", ""}, "prompt must not be empty"},
		{[]string{"chaos", "x", "--iterations", "0"}, "iterations must be 1..10"},
		{[]string{"chaos", "x", "--accept-threshold", "11"}, "accept_threshold"},
		{[]string{"chaos", "x", "--output-format", "pdf"}, "unknown output format"},
		{[]string{"chaos"}, "chaos needs PROMPT"},
		{[]string{"chaos", "x", "--output-dir", filepath.Join(writeTemp(t, "file", "x"), "sub")}, "output directory: cannot make the directory "},
	} {
		r := invoke(t, env, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, r.code, r.stderr)
		}
	}
}
