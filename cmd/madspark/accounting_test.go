package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/pipeline/spark/sparktest"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
)

// stepsView is `madspark runs show ID --steps --output-format json`.
func stepsView(t *testing.T, env map[string]string, id string) inspect.View {
	t.Helper()
	r := invoke(t, env, "runs", "show", id, "--steps", "--output-format", "json")
	var v inspect.View
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil {
		t.Fatalf("runs show --steps: %+v", r)
	}
	return v
}

// checkServed checks that the steps view of run id counts exactly what srv
// served: every request answered, and its tokens.
func checkServed(t *testing.T, env map[string]string, srv *openaitest.Server, id string) inspect.View {
	t.Helper()
	v := stepsView(t, env, id)
	served := srv.Served()
	var in, out, calls int
	for _, s := range v.Steps {
		in, out, calls = in+s.InputTokens, out+s.OutputTokens, calls+s.LLMCalls
	}
	if in != served.PromptTokens || out != served.CompletionTokens || calls != served.Answered {
		t.Errorf("the inspector counts %d calls, %d + %d tokens; the provider served %d requests, %d + %d tokens",
			calls, in, out, served.Answered, served.PromptTokens, served.CompletionTokens)
	}
	if v.Usage.InputTokens != in || v.Usage.OutputTokens != out || v.Usage.LLMCalls != calls {
		t.Errorf("view usage %+v, its steps %d calls, %d + %d tokens", v.Usage, calls, in, out)
	}
	return v
}

// TestUnusableRepliesUntilResume: evaluations that cannot be used fail the
// run after one re-ask; both replies were paid, and they stay counted
// (in the listing too) when the run is resumed and the evaluation asked
// again.
func TestUnusableRepliesUntilResume(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if broken.Load() && sparktest.Schema(req) == "spark_evaluations" {
			return openaitest.Reply{Content: "Scores: all good.", PromptTokens: 40, CompletionTokens: 4}
		}
		return sparktest.Reply(req)
	})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	r := invoke(t, env, "urban farming", "--num-candidates", "3", "--num-top-candidates", "2")
	if r.code != 1 || !strings.Contains(r.stderr, "stage evaluate") {
		t.Fatalf("run with unusable evaluations: %+v", r)
	}
	list := invoke(t, env, "runs", "list", "--output-format", "json")
	var runs []madspark.Run
	if err := json.Unmarshal([]byte(list.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs list: %v\n%s", err, list.stdout)
	}
	id := runs[0].ID
	if runs[0].Status != madspark.RunFailed || runs[0].Usage.LLMCalls != 3 || runs[0].Usage.InputTokens != 100+80 {
		t.Errorf("failed run listed with %+v", runs[0].Usage)
	}
	v := checkServed(t, env, srv, id)
	if ev := v.Step("evaluate"); ev.Status != madspark.StepFailed || len(ev.Calls) != 2 || ev.InputTokens != 80 {
		t.Errorf("evaluate = %+v", ev)
	}

	broken.Store(false)
	if r := invoke(t, env, "resume", id, "--output-format", "json"); r.code != 0 {
		t.Fatalf("resume: %+v", r)
	}
	v = checkServed(t, env, srv, id)
	ev := v.Step("evaluate")
	if ev.Status != madspark.StepDone || len(ev.Calls) != 3 || ev.Calls[0].Response != "Scores: all good." || ev.Calls[2].Attempt != 1 {
		t.Errorf("evaluate after resume = %+v", ev)
	}
	show := invoke(t, env, "runs", "show", id, "--steps")
	if show.code != 0 || !strings.Contains(show.stdout, "8 LLM calls") {
		t.Errorf("runs show --steps: %+v", show)
	}
}

// TestKilledRunResumedCountsWhatWasServed: a run killed (-9) while its
// improvement is being asked again keeps the unusable first reply it had
// paid for; the listing shows the interrupted run's calls and subject; once
// resumed, the inspector counts exactly what the provider served.
func TestKilledRunResumedCountsWhatWasServed(t *testing.T) {
	var improvements atomic.Int32
	var held atomic.Bool
	held.Store(true)
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if held.Load() && sparktest.Schema(req) == "spark_improvements" {
			if improvements.Add(1) == 1 {
				return openaitest.Reply{Content: "Improvements: see above.", PromptTokens: 70, CompletionTokens: 5}
			}
			// The re-ask is held until the process is killed.
			return openaitest.Reply{Fault: &openaitest.Fault{Delay: time.Hour}}
		}
		return sparktest.Reply(req)
	})
	dbPath := filepath.Join(t.TempDir(), "m.db")
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": dbPath}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "spark", "urban farming", "--no-cache", "--num-candidates", "3", "--num-top-candidates", "2")
	cmd.Env = append(os.Environ(), "MADSPARK_TEST_AS_MAIN=1", "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=sk-test", "MADSPARK_DB="+dbPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for deadline := time.Now().Add(30 * time.Second); improvements.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the improvement was never asked again")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	held.Store(false)

	db, err := sqlite.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(context.Background(), madspark.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	id := runs[0].ID
	list := invoke(t, env, "runs", "list")
	line := ""
	for l := range strings.SplitSeq(list.stdout, "\n") {
		if strings.HasPrefix(l, id) {
			line = l
		}
	}
	// 4 steps answered, and the unusable improvement: 5 calls paid.
	if f := strings.Fields(line); len(f) < 10 || f[2] != "interrupted" || f[6] != "5" || !strings.Contains(line, "urban farming") {
		t.Errorf("runs list shows the killed run as %q", line)
	}
	if r := invoke(t, env, "resume", id, "--output-format", "json"); r.code != 0 {
		t.Fatalf("resume: %+v", r)
	}
	v := checkServed(t, env, srv, id)
	imp := v.Step("improve")
	if imp.Status != madspark.StepDone || len(imp.Calls) != 2 || imp.Calls[0].Response != "Improvements: see above." || imp.Calls[0].InputTokens != 70 {
		t.Errorf("improve after resume = %+v", imp)
	}
}

// TestRunsListShowsAFileRunsSubject: a pipeline file's run is listed with
// its first input as its subject, also when its inputs have names the
// listing does not know.
func TestRunsListShowsAFileRunsSubject(t *testing.T) {
	env := mockEnv(t)
	file := filepath.Join(t.TempDir(), "explain.yaml")
	yaml := `name: explain
inputs:
  question: {type: string, required: true}
  audience: {type: string, required: true}
agents:
  teacher:
    prompt: "Answer {{.question}} for {{.audience}}."
    output: {answer: string}
steps:
  - teacher
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := invoke(t, env, "run", file, "--input", "audience=children", "--input", "question=How do bees find flowers?"); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	list := invoke(t, env, "runs", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "How do bees find flowers?") {
		t.Errorf("runs list:\n%s", list.stdout)
	}
	var runs []madspark.Run
	js := invoke(t, env, "runs", "list", "--output-format", "json")
	if err := json.Unmarshal([]byte(js.stdout), &runs); err != nil || len(runs) != 1 || runs[0].Subject != "How do bees find flowers?" || runs[0].Usage.LLMCalls != 1 {
		t.Errorf("runs list json: %v %s", err, js.stdout)
	}
}
