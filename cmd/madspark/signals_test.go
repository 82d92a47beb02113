package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/postgres/pgtest"
)

// TestSignalsInterruptRuns: SIGINT and SIGTERM sent to spark, run,
// resume, batch and eval while a call to the provider is in flight stop
// the command with exit 130 or 143, record its run as interrupted (found
// by runs list --status interrupted), and say how to finish it; the
// finished steps are kept, and the run resumes. On both stores.
func TestSignalsInterruptRuns(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); signalsInterruptRuns(t, "") })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); signalsInterruptRuns(t, pgtest.URL(t)) })
}

func signalsInterruptRuns(t *testing.T, databaseURL string) {
	dir := t.TempDir()
	pipelineFile := writeTemp(t, "two.yaml", "name: two\ninputs:\n  topic: {type: string, required: true}\n"+
		"agents:\n  a: {prompt: \"ideas on {{.topic}}\", output: {t: string}}\n  b: {prompt: \"more on {{.a.t}}\", output: {t: string}}\nsteps: [a, b]\n")
	batchFile := writeTemp(t, "items.csv", "topic,context\nurban farming,cheap\nquiet cities,\n")
	topics := writeTemp(t, "topics.txt", "urban farming\n")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, tt := range []struct {
			name string
			args []string
			// hint is what the last line of stderr says; $ID is the
			// interrupted run.
			hint string
		}{
			{"spark", []string{"spark", "urban farming", "--no-cache"}, "madspark resume $ID"},
			{"run", []string{"run", pipelineFile, "--input", "topic=urban farming", "--no-cache"}, "madspark resume $ID"},
			{"resume", nil, "madspark resume $ID"},
			{"batch", []string{"batch", batchFile, "--concurrency", "1", "--no-cache"}, "--wait --output FILE"},
			{"eval", []string{"eval", "--pipeline", "spark", "--topics", topics, "--concurrency", "1", "--no-cache"}, "madspark resume $ID"},
		} {
			t.Run(tt.name+"/"+sig.String(), func(t *testing.T) {
				srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
					if p := req.Prompt(); strings.Contains(p, "ideas on ") || strings.Contains(p, "more on ") {
						return openaitest.Reply{Content: `{"t": "an answer"}`} // two.yaml's agents
					}
					return evalReply(req)
				})
				env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test",
					"MADSPARK_DB": filepath.Join(dir, tt.name+sig.String()+".db"), "DATABASE_URL": databaseURL}
				if databaseURL != "" {
					env["DATABASE_URL"] = pgtest.URL(t)
				}
				args := tt.args
				if tt.name == "resume" {
					// A run to resume: one stopped at its first step.
					srv.Latency(time.Minute)
					if code, _ := interruptMidRun(t, env, "spark", "urban farming", "--no-cache"); code != exitInterrupted {
						t.Fatalf("the run to resume: exit %d", code)
					}
					args = []string{"resume", onlyRun(t, env, "interrupted"), "--no-cache"}
				}
				before := len(srv.Requests())
				srv.Latency(time.Minute)
				if tt.name == "run" || tt.name == "resume" {
					// The first step finishes; the signal comes during the
					// second.
					srv.Latency(0)
					srv.Inject(openaitest.Fault{}, openaitest.Fault{Delay: time.Minute})
				}
				code, stderr := signalMidCall(t, env, srv, before+callsBeforeSignal(tt.name), sig, args...)
				if want := 128 + int(sig); code != want {
					t.Fatalf("exit %d, want %d; stderr:\n%s", code, want, stderr)
				}
				pipeline := map[string]string{"spark": "spark", "run": "two", "resume": "spark", "batch": "spark", "eval": "eval"}[tt.name]
				id := interruptedRun(t, env, pipeline)
				last := lastLine(stderr)
				if !strings.HasPrefix(last, "madspark: ") || !strings.Contains(last, "interrupted") || !strings.Contains(last, strings.ReplaceAll(tt.hint, "$ID", id)) {
					t.Fatalf("last line %q, want it to say %q", last, strings.ReplaceAll(tt.hint, "$ID", id))
				}
				for _, gowords := range []string{"context canceled", "signal received"} {
					if strings.Contains(stderr, gowords) {
						t.Fatalf("stderr says %q:\n%s", gowords, stderr)
					}
				}
				if tt.name == "batch" {
					// Its runs stay in the queue: a worker resumes them.
					return
				}
				// The hint works: the run finishes, its finished steps not
				// paid again.
				srv.Latency(0)
				done := len(srv.Requests())
				m := regexp.MustCompile(`finish it with: madspark (resume .*)$`).FindStringSubmatch(last)
				if m == nil {
					t.Fatalf("no resume command in %q", last)
				}
				if r := invoke(t, env, strings.Fields(m[1])...); r.code != 0 {
					t.Fatalf("resume %s: exit %d: %s", id, r.code, r.stderr)
				}
				after := srv.Requests()[done:]
				switch tt.name {
				case "run":
					if len(after) != 1 {
						t.Fatalf("the resume made %d calls, want 1 (the step the signal stopped)", len(after))
					}
				case "resume":
					for _, q := range after {
						if q.ResponseFormat != nil && q.ResponseFormat.JSONSchema != nil && q.ResponseFormat.JSONSchema.Name == "spark_ideas" {
							t.Fatal("the step finished before the signal was paid again")
						}
					}
				}
			})
		}
	}
}

// callsBeforeSignal is how many requests the command sends before the
// one the signal stops: run and resume finish a step first.
func callsBeforeSignal(name string) int {
	if name == "run" || name == "resume" {
		return 2
	}
	return 1
}

// signalMidCall runs madspark with args as a process of its own and sends
// it sig once the provider has received n requests (the last of which is
// held); it returns the exit code and stderr.
func signalMidCall(t *testing.T, env map[string]string, srv *openaitest.Server, n int, sig syscall.Signal, args ...string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = []string{"MADSPARK_TEST_AS_MAIN=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for deadline := time.Now().Add(30 * time.Second); len(srv.Requests()) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the provider got %d requests, not %d; stderr:\n%s", len(srv.Requests()), n, stderr.String())
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop the command", sig)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// interruptedRun is the one run of pipeline that runs list --status
// interrupted finds.
func interruptedRun(t *testing.T, env map[string]string, pipeline string) string {
	t.Helper()
	r := invoke(t, env, "runs", "list", "--status", "interrupted", "--pipeline", pipeline, "--output-format", "json")
	var runs []struct {
		ID    string `json:"run_id"`
		Error string `json:"error"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &runs) != nil || len(runs) == 0 {
		all := invoke(t, env, "runs", "list", "--output-format", "json")
		t.Fatalf("no interrupted %s run: %s%s\nall runs: %s", pipeline, r.stdout, r.stderr, all.stdout)
	}
	if !regexp.MustCompile(`^interrupted\b`).MatchString(runs[0].Error) || strings.Contains(runs[0].Error, "context canceled") {
		t.Fatalf("the interrupted run's error: %q", runs[0].Error)
	}
	return runs[0].ID
}

// onlyRun is the ID of the one run with status.
func onlyRun(t *testing.T, env map[string]string, status string) string {
	t.Helper()
	r := invoke(t, env, "runs", "list", "--status", status, "--output-format", "json")
	var runs []struct {
		ID string `json:"run_id"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &runs) != nil || len(runs) != 1 {
		t.Fatalf("runs with status %s: %s%s", status, r.stdout, r.stderr)
	}
	return runs[0].ID
}
