package main

import (
	"bytes"
	"context"
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

	"github.com/jackc/pgx/v5"

	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/postgres/pgtest"
)

// ledger is the simulated provider's record of what it was asked: for each
// request, the run's topic and spark stage it belongs to, and when it
// arrived.
type ledger struct {
	mu   sync.Mutex
	reqs []asked
}

type asked struct {
	key string // topic + "/" + stage
	at  time.Time
}

var batchTopic = regexp.MustCompile(`batch topic \d+`)

// stageOf names the spark stage a wire request is for: the schema tells the
// stage, and a re-evaluation is the evaluation of the improved ideas.
func stageOf(req *openaitest.ChatRequest) string {
	if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
		return "?"
	}
	switch req.ResponseFormat.JSONSchema.Name {
	case "spark_ideas":
		return "generate"
	case "spark_evaluations":
		if strings.Contains(req.Prompt(), "Better idea") {
			return "re_evaluate"
		}
		return "evaluate"
	case "spark_advocacy":
		return "advocate"
	case "spark_skepticism":
		return "skeptic"
	case "spark_improvements":
		return "improve"
	}
	return "?"
}

func (l *ledger) respond(latency time.Duration) func(*openaitest.ChatRequest) openaitest.Reply {
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		l.mu.Lock()
		l.reqs = append(l.reqs, asked{key: batchTopic.FindString(req.Prompt()) + "/" + stageOf(req), at: time.Now()})
		l.mu.Unlock()
		time.Sleep(latency)
		return liveReply(req)
	}
}

func (l *ledger) all() []asked {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]asked(nil), l.reqs...)
}

// startWorkerProcess starts "madspark worker" as a process of its own.
func startWorkerProcess(t *testing.T, env map[string]string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"worker"}, args...)...)
	cmd.Env = []string{"MADSPARK_TEST_AS_MAIN=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &stderr
}

// TestTwoWorkersKillNine splits a batch of 50 items between two worker
// processes on one PostgreSQL database, kills one with SIGKILL mid-batch,
// and checks that the batch completes with each item once, and that the
// provider was never asked again for a step that had finished before the
// kill.
func TestTwoWorkersKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	url := pgtest.URL(t)
	book := &ledger{}
	srv := openaitest.NewServer(t, book.respond(60*time.Millisecond))
	env := map[string]string{
		"DATABASE_URL": url, "MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "unused.db"),
	}
	const items = 50
	var csv strings.Builder
	csv.WriteString("topic,num_candidates\n")
	for i := range items {
		fmt.Fprintf(&csv, "batch topic %02d,3\n", i)
	}
	file := writeTemp(t, "batch.csv", csv.String())
	out := filepath.Join(t.TempDir(), "results.json")

	// Two workers; the test decides which one dies.
	victim, victimErr := startWorkerProcess(t, env, "--max-concurrent", "4", "--lease", "3s", "--no-cache")
	survivor, survivorErr := startWorkerProcess(t, env, "--max-concurrent", "4", "--lease", "3s", "--no-cache")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var victimID string
	for deadline := time.Now().Add(30 * time.Second); victimID == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the workers never started:\n%s\n%s", victimErr, survivorErr)
		}
		_ = conn.QueryRow(ctx, `SELECT id FROM worker_leases WHERE pid = $1`, victim.Process.Pid).Scan(&victimID)
	}

	// The batch, from a third process that only enqueues and waits.
	done := make(chan result, 1)
	go func() { done <- invoke(t, env, "batch", file, "--no-worker", "--output", out) }()

	// Kill the victim once runs it holds have finished steps.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the victim never got far enough:\n%s", victimErr)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT COUNT(DISTINCT j.id) FROM river_job j JOIN steps s ON s.run_id = j.args->>'run_id'
WHERE j.state = 'running' AND j.attempted_by[array_length(j.attempted_by, 1)] = $1 AND s.status = 'done'`, victimID).Scan(&n); err != nil {
			continue // River's tables may not exist yet
		}
		if n >= 2 {
			break
		}
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	killedAt := time.Now()

	// What had finished before the kill: the journal, now frozen for the
	// victim's runs. (Steps the survivor finishes after the kill are
	// excluded by their time.)
	finished := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT r.params, s.key, s.finished_at FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.status = 'done'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var (
			params, key string
			at          time.Time
		)
		if err := rows.Scan(&params, &key, &at); err != nil {
			t.Fatal(err)
		}
		var p struct{ Topic string }
		json.Unmarshal([]byte(params), &p)
		if at.Before(killedAt) {
			finished[p.Topic+"/"+key] = true
		}
	}
	rows.Close()
	if len(finished) == 0 {
		t.Fatal("nothing had finished before the kill")
	}

	var r result
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the batch did not complete after the kill; survivor:\n%s", survivorErr)
	}
	survivor.Process.Signal(os.Interrupt)
	survivor.Wait()
	if r.code != 0 {
		t.Fatalf("batch exit %d:\n%s\nsurvivor:\n%s", r.code, r.stderr, survivorErr)
	}

	// Each item exactly once, all succeeded.
	res := readResults(t, out)
	if res.Total != items || res.Succeeded != items || len(res.Items) != items {
		t.Fatalf("results: %d items, %d succeeded", len(res.Items), res.Succeeded)
	}
	lines, runs := map[int]bool{}, map[string]bool{}
	for _, it := range res.Items {
		var sr struct {
			Topic      string `json:"topic"`
			Candidates []any  `json:"candidates"`
		}
		if lines[it.Line] || runs[it.RunID] || it.Status != "succeeded" || json.Unmarshal(it.Result, &sr) != nil || sr.Topic != it.Topic || len(sr.Candidates) != 3 {
			t.Fatalf("item %+v", it)
		}
		lines[it.Line], runs[it.RunID] = true, true
	}

	// No finished step was asked for again; every step was asked for, and
	// only the steps in flight at the kill twice.
	count, first := map[string]int{}, map[string]time.Time{}
	resumed := 0
	for _, q := range book.all() {
		if q.at.After(killedAt) && finished[q.key] {
			t.Errorf("%s was requested after the kill, though it had finished before", q.key)
		}
		if count[q.key] == 0 {
			first[q.key] = q.at
		}
		count[q.key]++
	}
	for i := range items {
		for _, st := range []string{"generate", "evaluate", "advocate", "skeptic", "improve", "re_evaluate"} {
			key := fmt.Sprintf("batch topic %02d/%s", i, st)
			switch n := count[key]; {
			case n == 1:
			case n == 2 && first[key].Before(killedAt) && !finished[key]:
				resumed++
			default:
				t.Errorf("%s was requested %d times", key, n)
			}
		}
	}
	var taken int
	// A rescued job is discarded, and a new job for its run completed.
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM river_job old JOIN river_job nw
ON nw.args->>'run_id' = old.args->>'run_id' AND nw.id > old.id
WHERE old.attempted_by[array_length(old.attempted_by, 1)] = $1 AND old.state = 'discarded'
AND nw.state = 'completed' AND nw.attempted_by[array_length(nw.attempted_by, 1)] <> $1`, victimID).Scan(&taken); err != nil || taken == 0 {
		t.Fatalf("no job of the killed worker was completed by the other (%d, %v)", taken, err)
	}
	var calls int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM runs WHERE (usage->>'llm_calls')::int <> 6`).Scan(&calls); err != nil || calls != 0 {
		t.Fatalf("%d runs do not count 6 LLM calls (%v)", calls, err)
	}
	t.Logf("killed worker %s; %d jobs taken over; %d steps finished before the kill; %d re-run after being in flight", victimID, taken, len(finished), resumed)
}

// TestWorkerSIGTERMDrains stops a worker process with SIGTERM mid-run: it
// exits cleanly within its drain timeout (plus the time to hand back),
// leaving the run queued, and another worker finishes it.
func TestWorkerSIGTERMDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	book := &ledger{}
	srv := openaitest.NewServer(t, book.respond(300*time.Millisecond))
	env := map[string]string{
		"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	file := writeTemp(t, "batch.csv", "topic,num_candidates\nbatch topic 01,3\n")
	out := filepath.Join(t.TempDir(), "results.json")
	first, firstErr := startWorkerProcess(t, env, "--drain-timeout", "200ms", "--lease", "2s", "--no-cache")
	done := make(chan result, 1)
	go func() { done <- invoke(t, env, "batch", file, "--no-worker", "--output", out) }()
	// SIGTERM once the run has finished a step.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker never got far enough:\n%s", firstErr)
		}
		if len(book.all()) >= 2 {
			break
		}
	}
	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the worker exited with %v:\n%s", err, firstErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the worker did not exit after SIGTERM:\n%s", firstErr)
	}
	if !strings.Contains(firstErr.String(), "draining") {
		t.Fatalf("the worker did not drain:\n%s", firstErr)
	}
	second, secondErr := startWorkerProcess(t, env, "--no-cache")
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the batch did not complete:\n%s", secondErr)
	}
	second.Process.Signal(os.Interrupt)
	second.Wait()
	if r.code != 0 {
		t.Fatalf("batch exit %d:\n%s", r.code, r.stderr)
	}
	if res := readResults(t, out); res.Total != 1 || res.Succeeded != 1 {
		t.Fatalf("results: %+v", res)
	}
	// The run went back to the queue, and the second worker finished it.
	if n := len(book.all()); n < 6 {
		t.Fatalf("%d requests in all, want at least a run's 6", n)
	}
}
