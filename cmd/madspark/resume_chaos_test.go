package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
)

// taggedReplies answers chaos's agents over the wire, marking each reply
// with a tag of its own, and remembers which request body each tag
// answered: a journaled step's output carries the tag of the reply it came
// from.
type taggedReplies struct {
	mu     sync.Mutex
	n      int
	bodies map[string][32]byte // tag → request body hash
	order  [][32]byte          // request body hashes, in order of arrival
}

var replyTag = regexp.MustCompile(`ref-\d{4}`)

// body returns the hash of the request that tag answered.
func (tr *taggedReplies) body(tag string) [32]byte {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.bodies[tag]
}

// since returns the hashes of the requests after the first n.
func (tr *taggedReplies) since(n int) [][32]byte {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([][32]byte(nil), tr.order[n:]...)
}

// count returns how many requests arrived.
func (tr *taggedReplies) count() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.order)
}

func (tr *taggedReplies) respond(req *openaitest.ChatRequest) openaitest.Reply {
	tr.mu.Lock()
	tr.n++
	tag := fmt.Sprintf("ref-%04d", tr.n)
	sum := sha256.Sum256(req.Body)
	tr.bodies[tag] = sum
	tr.order = append(tr.order, sum)
	tr.mu.Unlock()
	if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
		if req.ResponseFormat.JSONSchema.Name != "chaos_judgement" {
			return openaitest.Reply{Content: "unexpected schema " + req.ResponseFormat.JSONSchema.Name}
		}
		list := []string{"a point " + tag}
		b, _ := json.Marshal(map[string]any{
			"accepted_ideas": []map[string]any{{
				"idea_name": "Idea " + tag, "quality_score": 8.0, "feasibility_score": 7.0, "impact_score": 7.5, "originality_score": 8.5,
				"key_points": list, "implementation_path": "Pilot, then scale. " + tag, "required_resources": list,
				"success_metrics": list, "next_steps": list,
			}},
			"rejected_ideas":       []map[string]any{{"idea_name": "Weak " + tag, "rejection_reason": "Too vague.", "quality_score": 3.0, "fatal_flaw": "No plan."}},
			"synthesis":            "Synthesis " + tag,
			"top_recommendations":  list,
			"strategic_insights":   list,
			"unresolved_questions": list,
		})
		return openaitest.Reply{Content: string(b), PromptTokens: 100, CompletionTokens: 80}
	}
	return openaitest.Reply{Content: "1. A distinct idea with its own mechanism (" + tag + ").\n2. Another one.", PromptTokens: 60, CompletionTokens: 30}
}

// TestKillNineThenResumeChaos kills a chaos run (a pipeline other than
// spark, with an idea memory) after some of its steps, resumes it through
// the registry, and checks that no request that had produced a journaled
// step was sent again.
func TestKillNineThenResumeChaos(t *testing.T) {
	tr := &taggedReplies{bodies: map[string][32]byte{}}
	srv := openaitest.NewServer(t, tr.respond)
	srv.Latency(150 * time.Millisecond)
	dbPath := filepath.Join(t.TempDir(), "m.db")
	env := map[string]string{"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": dbPath}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "chaos", "reduce food waste in cities", "--iterations", "2", "--seed", "3", "--no-cache", "--output-dir", t.TempDir())
	cmd.Env = []string{"MADSPARK_TEST_AS_MAIN=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Kill -9 once the first iteration is judged (its ideas remembered)
	// and the second has begun.
	var runID string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the run never reached its second iteration")
		}
		runs, _ := db.Runs(ctx, madspark.RunFilter{})
		if len(runs) == 0 {
			continue
		}
		runID = runs[0].ID
		steps, _ := db.Steps(ctx, runID)
		if doneKeys(steps)["i2/chaos"] {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	steps, _ := db.Steps(ctx, runID)
	done := doneKeys(steps)
	// The requests that produced journaled steps, found by their replies'
	// tags in the steps' outputs.
	paid := map[[32]byte]bool{}
	llmSteps := 0
	for _, s := range steps {
		if s.Status != madspark.StepDone || strings.HasSuffix(s.Key, "/shared_state") {
			continue
		}
		llmSteps++
		tag := replyTag.FindString(string(s.Output))
		if tag == "" {
			t.Fatalf("step %s carries no reply tag: %s", s.Key, s.Output)
		}
		paid[tr.body(tag)] = true
	}
	// Requests in flight at the kill may still arrive; they are counted
	// as before the kill (the kill is the cut-off of what was paid).
	time.Sleep(300 * time.Millisecond)
	before := tr.count()

	files := filepath.Join(t.TempDir(), "files")
	r := invoke(t, env, "resume", runID, "--output-dir", files)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	var out struct {
		RunID  string `json:"run_id"`
		Result struct {
			Iterations []any `json:"iterations"`
			Accepted   []struct {
				IdeaName string `json:"idea_name"`
			} `json:"accepted"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.RunID != runID || len(out.Result.Iterations) != 2 {
		t.Fatalf("resume output: %v\n%s", err, r.stdout)
	}
	// Both iterations' ideas are accepted: the first iteration's were not
	// rejected as repeats of themselves.
	if len(out.Result.Accepted) != 2 {
		t.Fatalf("accepted %+v, want one idea per iteration", out.Result.Accepted)
	}
	after := tr.since(before)
	for _, h := range after {
		if paid[h] {
			t.Fatal("a request whose reply was journaled before the kill was sent again")
		}
	}
	// Two iterations of six LLM steps: only the unfinished ones were asked for.
	if len(after) != 12-llmSteps {
		t.Fatalf("%d requests after the kill, want %d (journaled at the kill: %v)", len(after), 12-llmSteps, done)
	}
	rec, _ := db.Run(ctx, runID)
	if rec.Status != madspark.RunSucceeded || rec.Usage.LLMCalls != 12 {
		t.Fatalf("run %s with %d calls", rec.Status, rec.Usage.LLMCalls)
	}
	for _, f := range []string{"final_output.txt", "result.json", "iteration_2/judge.json"} {
		if _, err := os.Stat(filepath.Join(files, f)); err != nil {
			t.Errorf("resume --output-dir lacks %s: %v", f, err)
		}
	}
}

func doneKeys(steps []*madspark.Step) map[string]bool {
	m := map[string]bool{}
	for _, s := range steps {
		if s.Status == madspark.StepDone {
			m[s.Key] = true
		}
	}
	return m
}
