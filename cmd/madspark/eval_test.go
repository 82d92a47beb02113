package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/pipeline/spark/sparktest"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
)

// evalReport is the JSON contract of madspark eval.
type evalReport struct {
	RunID    string    `json:"run_id"`
	Pipeline string    `json:"pipeline"`
	N        *int      `json:"n"`
	Wins     *int      `json:"wins"`
	Losses   *int      `json:"losses"`
	Ties     *int      `json:"ties"`
	WinRate  *float64  `json:"win_rate"`
	CI       []float64 `json:"ci"`
	Notice   string    `json:"notice"`
	Usage    *struct {
		Pipeline struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"pipeline"`
		Baseline struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"baseline"`
		Judge struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"judge"`
	} `json:"usage"`
	Items []struct {
		Topic  string `json:"topic"`
		Winner string `json:"winner"`
		RunID  string `json:"run_id"`
		Reused bool   `json:"reused"`
	} `json:"items"`
}

func decodeEval(t *testing.T, r result) evalReport {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d, stderr: %s", r.code, r.stderr)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return rep
}

func TestEvalJSONContract(t *testing.T) {
	env := mockEnv(t)
	rep := decodeEval(t, invoke(t, env, "eval", "--pipeline", "spark", "--topics", "builtin", "--limit", "3", "--output-format", "json"))
	if rep.Pipeline != "spark" || rep.RunID == "" || rep.N == nil || *rep.N != 3 || rep.Wins == nil || rep.Losses == nil || rep.Ties == nil ||
		*rep.Wins+*rep.Losses+*rep.Ties != 3 || rep.WinRate == nil || len(rep.CI) != 2 || rep.CI[0] > *rep.WinRate || rep.CI[1] < *rep.WinRate || rep.Usage == nil {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(rep.Notice, "proves nothing") {
		t.Fatalf("a mock eval must say it proves nothing: %q", rep.Notice)
	}
	// spark is 6 calls a topic; the baseline 1; the judge 2.
	if rep.Usage.Pipeline.LLMCalls != 18 || rep.Usage.Baseline.LLMCalls != 3 || rep.Usage.Judge.LLMCalls != 6 {
		t.Fatalf("usage %+v", rep.Usage)
	}
	if len(rep.Items) != 3 || rep.Items[0].Topic != "Reducing food waste in university cafeterias" {
		t.Fatalf("items %+v", rep.Items)
	}
	for _, it := range rep.Items {
		if it.Winner != "pipeline" && it.Winner != "baseline" && it.Winner != "tie" || it.RunID == "" {
			t.Fatalf("item %+v", it)
		}
	}
	// The eval and its pipeline runs are runs.
	list := invoke(t, env, "runs", "list", "--limit", "10")
	if !strings.Contains(list.stdout, rep.RunID) || !strings.Contains(list.stdout, rep.Items[0].RunID) || !strings.Contains(list.stdout, "eval") {
		t.Fatalf("runs list:\n%s", list.stdout)
	}
	// A second eval of the same topics reuses the pipeline runs.
	again := decodeEval(t, invoke(t, env, "eval", "--pipeline", "spark", "--topics", "builtin", "--limit", "2", "--output-format", "json"))
	for i, it := range again.Items {
		if !it.Reused || it.RunID != rep.Items[i].RunID {
			t.Fatalf("item %+v, want run %s reused", it, rep.Items[i].RunID)
		}
	}
	// Two evals side by side.
	cmp := invoke(t, env, "eval", "--compare", rep.RunID, again.RunID, "--output-format", "json")
	var c struct {
		A, B struct {
			RunID string `json:"run_id"`
		}
		Difference *float64 `json:"difference"`
		Items      []any    `json:"items"`
	}
	if cmp.code != 0 || json.Unmarshal([]byte(cmp.stdout), &c) != nil || c.A.RunID != rep.RunID || c.B.RunID != again.RunID || c.Difference == nil || len(c.Items) != 2 {
		t.Fatalf("compare: %+v", cmp)
	}
	if text := invoke(t, env, "eval", "--compare", rep.RunID, again.RunID); text.code != 0 || !strings.Contains(text.stdout, "Difference in win rate") {
		t.Fatalf("compare text: %+v", text)
	}
	// Two runs of one pipeline are judged against each other, in both orders.
	runs := invoke(t, env, "eval", "--compare", rep.Items[0].RunID, rep.Items[1].RunID, "--output-format", "json")
	var rc struct {
		A, B, Winner string
		Verdicts     []struct{ Order, Winner string }
		Usage        struct {
			LLMCalls int `json:"llm_calls"`
		}
	}
	if runs.code != 0 || json.Unmarshal([]byte(runs.stdout), &rc) != nil || rc.A != rep.Items[0].RunID || len(rc.Verdicts) != 2 ||
		rc.Verdicts[1].Order != "b_first" || rc.Winner != "a" && rc.Winner != "b" && rc.Winner != "tie" || rc.Usage.LLMCalls != 2 {
		t.Fatalf("compare runs: %+v", runs)
	}
	if mixed := invoke(t, env, "eval", "--compare", rep.RunID, rep.Items[0].RunID); mixed.code != 2 || !strings.Contains(mixed.stderr, "not an eval with a run") {
		t.Fatalf("an eval with a run: %+v", mixed)
	}
}

func TestEvalOutputs(t *testing.T) {
	env := mockEnv(t)
	path := filepath.Join(t.TempDir(), "eval.md")
	r := invoke(t, env, "eval", "--pipeline", "debate", "--topics", "builtin", "--limit", "2", "--output-format", "markdown", "-o", path)
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "wrote "+path) {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	md, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(md), "95% Wilson interval") || !strings.Contains(string(md), "proves nothing") {
		t.Fatalf("markdown report: %v\n%s", err, md)
	}
	topics := filepath.Join(t.TempDir(), "topics.jsonl")
	os.WriteFile(topics, []byte(`{"idea": "A library of tools", "mode": "analyze"}`+"\n# a comment\nA repair café app\n"), 0o644)
	text := invoke(t, env, "eval", "--pipeline", "assess", "--topics", topics)
	if text.code != 0 || !strings.Contains(text.stdout, "assess won") || !strings.Contains(text.stdout, "A library of tools") || !strings.Contains(text.stdout, "proves nothing") {
		t.Fatalf("text: %+v", text)
	}
}

func TestEvalBadInputExitsTwoBeforeAnyCall(t *testing.T) {
	env := mockEnv(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		return p
	}
	empty := write("empty.txt", "\n# nothing\n\n")
	malformed := write("bad.jsonl", "urban farming\n{\"topic\": \n")
	wrongType := write("type.jsonl", `{"topic": 7}`)
	good := write("good.txt", "urban farming\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--pipeline", "nope", "--topics", good}, `unknown pipeline "nope"`},
		{[]string{"eval", "--pipeline", "eval", "--topics", good}, "eval itself"},
		{[]string{"eval", "--topics", good}, "--pipeline is required"},
		{[]string{"eval", "--pipeline", "spark"}, "--topics is required"},
		{[]string{"eval", "--pipeline", "spark", "--topics", empty}, "no topics"},
		{[]string{"eval", "--pipeline", "spark", "--topics", malformed}, "line 2"},
		{[]string{"eval", "--pipeline", "spark", "--topics", wrongType}, "want string"},
		{[]string{"eval", "--pipeline", "spark", "--topics", filepath.Join(dir, "missing.txt")}, "--topics: no file "},
		{[]string{"eval", "--pipeline", "spark", "--topics", good, "--limit", "0"}, "--limit must be at least 1"},
		{[]string{"eval", "--pipeline", "spark", "--topics", good, "--concurrency", "0"}, "--concurrency"},
		{[]string{"eval", "--pipeline", "spark", "--topics", good, "--judge-provider", "acme"}, "judge_provider"},
		{[]string{"eval", "--pipeline", "spark", "--topics", good, "--output-format", "pdf"}, "unknown output format"},
		{[]string{"eval", "--pipeline", "proposal", "--topics", "builtin"}, "no built-in topics for proposal"},
		{[]string{"eval", "--pipeline", "proposal", "--topics", good}, "JSON lines"},
		{[]string{"eval", "--compare", "only-one"}, "--compare needs two run IDs, got 1"},
		{[]string{"eval", "--compare", "a", "b"}, "no run a"},
	} {
		r := invoke(t, env, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if list := invoke(t, env, "runs", "list"); strings.Contains(list.stdout, "eval") {
		t.Fatalf("bad input recorded a run:\n%s", list.stdout)
	}
}

// evalReply answers spark as liveReply does, the baseline with a text and
// the judge with a verdict for the pipeline (sparktest.EvalReply).
func evalReply(req *openaitest.ChatRequest) openaitest.Reply { return sparktest.EvalReply(req) }

func TestEvalKillNineThenResume(t *testing.T) {
	srv := openaitest.NewServer(t, evalReply)
	srv.Latency(100 * time.Millisecond)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "m.db")
	topics := filepath.Join(dir, "topics.txt")
	os.WriteFile(topics, []byte("urban farming\nquiet cities\nocean cleanup\n"), 0o644)
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": dbPath}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "eval", "--pipeline", "spark", "--topics", topics, "--concurrency", "1", "--no-cache")
	cmd.Env = append(os.Environ(), "MADSPARK_TEST_AS_MAIN=1", "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=sk-test", "MADSPARK_DB="+dbPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Kill -9 once the first topic is judged.
	var evalID string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the eval never judged its first topic")
		}
		runs, _ := db.Runs(ctx, madspark.RunFilter{Pipeline: "eval"})
		if len(runs) == 0 {
			continue
		}
		evalID = runs[0].ID
		steps, _ := db.Steps(ctx, evalID)
		done := 0
		for _, s := range steps {
			if s.Status == madspark.StepDone && strings.HasPrefix(s.Key, "t1/judge_") {
				done++
			}
		}
		if done == 2 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before := len(srv.Requests())
	r := invoke(t, env, "resume", evalID)
	if r.code != 0 {
		t.Fatalf("resume: exit %d, %s", r.code, r.stderr)
	}
	for _, q := range srv.Requests()[before:] {
		if strings.Contains(q.Prompt(), "urban farming") {
			t.Fatalf("after resume, the judged topic was asked again: %.200q", q.Prompt())
		}
	}
	rec, err := db.Run(ctx, evalID)
	if err != nil || rec.Status != madspark.RunSucceeded {
		t.Fatalf("eval %+v, %v", rec, err)
	}
	show := invoke(t, env, "runs", "show", evalID, "--output-format", "record")
	var res struct {
		Result struct {
			N, Ties int
		} `json:"result"`
	}
	if show.code != 0 || json.Unmarshal([]byte(show.stdout), &res) != nil || res.Result.N != 3 || res.Result.Ties != 3 {
		t.Fatalf("resumed eval: %s", show.stdout)
	}
	// Every call was paid once: 3 topics × (6 spark + 1 baseline + 2 judge),
	// bar those in flight at the kill.
	if n := len(srv.Requests()); n < 27 || n > 29 {
		t.Fatalf("%d requests in all, want 27 (+ those lost at the kill)", n)
	}
}
