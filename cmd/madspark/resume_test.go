package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
)

// TestMain lets the test binary act as the madspark command, so that a test
// can run it as a subprocess and kill it.
func TestMain(m *testing.M) {
	if upstream := os.Getenv("MADSPARK_TEST_AS_PROXY"); upstream != "" {
		os.Exit(bareProxy(upstream))
	}
	if os.Getenv("MADSPARK_TEST_AS_MAIN") == "1" {
		if path := os.Getenv("MADSPARK_TEST_CPUPROFILE"); path != "" {
			os.Exit(profiledMain(path))
		}
		main()
		return
	}
	os.Exit(m.Run())
}

// schemaOf maps spark's steps to the structured-output schema their request
// carries.
var schemaOf = map[string]string{
	"generate": "spark_ideas", "evaluate": "spark_evaluations", "advocate": "spark_advocacy",
	"skeptic": "spark_skepticism", "improve": "spark_improvements", "re_evaluate": "spark_evaluations",
}

// startLiveSpark starts `madspark spark` as a subprocess against an
// in-process OpenAI wire fake answering with latency, and returns the fake,
// the environment of a second command on the same database, the process
// and the database.
func startLiveSpark(t *testing.T, latency time.Duration) (*openaitest.Server, map[string]string, *exec.Cmd, *sqlite.DB) {
	t.Helper()
	srv := openaitest.NewServer(t, liveReply)
	srv.Latency(latency)
	dbPath := filepath.Join(t.TempDir(), "m.db")
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": dbPath}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "spark", "urban farming", "cheap", "--no-cache")
	cmd.Env = append(os.Environ(), "MADSPARK_TEST_AS_MAIN=1", "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=sk-test", "MADSPARK_DB="+dbPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	db, err := sqlite.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return srv, env, cmd, db
}

func TestKillNineThenResume(t *testing.T) {
	srv, env, cmd, db := startLiveSpark(t, 250*time.Millisecond)
	ctx := context.Background()

	// Kill -9 once two steps are journaled.
	var runID string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the run never journaled two steps")
		}
		runs, _ := db.Runs(ctx, madspark.RunFilter{})
		if len(runs) == 0 {
			continue
		}
		runID = runs[0].ID
		if steps, _ := db.Steps(ctx, runID); countDone(steps) >= 2 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	stepsAtKill, _ := db.Steps(ctx, runID)
	done := map[string]bool{}
	for _, s := range stepsAtKill {
		if s.Status == madspark.StepDone {
			done[s.Key] = true
		}
	}
	before := len(srv.Requests())
	// Its process is gone: the run is shown interrupted, with how to
	// finish it.
	list := invoke(t, env, "runs", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "interrupted") || !strings.Contains(list.stderr, "madspark resume RUN_ID") {
		t.Fatalf("runs list after kill -9: %+v", list)
	}
	if rec, _ := db.Run(ctx, runID); rec.Status != madspark.RunInterrupted || !strings.Contains(rec.Error, "madspark resume "+runID) {
		t.Fatalf("a killed run is %s (%q), want interrupted, saying how to resume", rec.Status, rec.Error)
	}

	r := invoke(t, env, "resume", runID, "--output-format", "json")
	rep := decode(t, r)
	if rep.RunID != runID || len(rep.Candidates) != 3 {
		t.Fatalf("resumed report %+v", rep)
	}
	// After the kill, the provider saw exactly the unfinished steps.
	after := map[string]int{}
	for _, q := range srv.Requests()[before:] {
		after[q.ResponseFormat.JSONSchema.Name]++
	}
	want := map[string]int{}
	for key, schema := range schemaOf {
		if !done[key] {
			want[schema]++
		}
	}
	for schema, n := range after {
		if n != want[schema] {
			t.Fatalf("after resume, %s was requested %d times, want %d (done at kill: %v)", schema, n, want[schema], done)
		}
	}
	if len(after) != len(want) {
		t.Fatalf("requests after resume %v, want %v", after, want)
	}
	// The run's usage counts each step once: the journaled ones and the new
	// ones. (Calls that were in flight at the kill were lost with it.)
	rec, _ := db.Run(ctx, runID)
	if rec.Status != madspark.RunSucceeded || rec.Usage.LLMCalls != 6 {
		t.Fatalf("status %s, usage %+v", rec.Status, rec.Usage)
	}
	again := invoke(t, env, "resume", runID)
	if again.code != 2 || !strings.Contains(again.stderr, "already succeeded") {
		t.Fatalf("resuming a finished run: %+v", again)
	}
}

func countDone(steps []*madspark.Step) int {
	n := 0
	for _, s := range steps {
		if s.Status == madspark.StepDone {
			n++
		}
	}
	return n
}

// TestResumeRefusedWhileRunning starts a run in one process and resumes it
// from another while it goes: the second is refused, naming the first, and
// the provider is paid once for each call.
func TestResumeRefusedWhileRunning(t *testing.T) {
	srv, env, cmd, db := startLiveSpark(t, 300*time.Millisecond)
	ctx := context.Background()
	var runID string
	for deadline := time.Now().Add(20 * time.Second); runID == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the run never started")
		}
		if runs, _ := db.Runs(ctx, madspark.RunFilter{}); len(runs) > 0 {
			runID = runs[0].ID
		}
	}
	r := invoke(t, env, "resume", runID, "--no-cache")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the first process: %v", err)
	}
	if r.code != 1 || !strings.Contains(r.stderr, "is being worked by madspark spark (pid ") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("resume of a running run: %+v; want exit 1 and one line naming the process", r)
	}
	if n := len(srv.Requests()); n != 6 {
		t.Errorf("the provider got %d requests for a 6-call run", n)
	}
	if rec, _ := db.Run(ctx, runID); rec.Status != madspark.RunSucceeded || rec.Usage.LLMCalls != 6 {
		t.Errorf("run = %s with %d calls", rec.Status, rec.Usage.LLMCalls)
	}
}
