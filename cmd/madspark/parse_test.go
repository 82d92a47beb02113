package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestParse: madspark parse reads a reply against a schema file or a
// built-in agent's, prints the value (and, as JSON, the repairs), exits 0
// for a usable reply and 2 with one line for one that is not.
func TestParse(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schema := write("schema.json", `{"type":"object","properties":{"pitch":{"type":"string"},"score":{"type":"number","minimum":0,"maximum":10},
		"tags":{"type":"array","items":{"type":"string"}}},"required":["pitch","score","tags"],"additionalProperties":false}`)
	reply := write("reply.txt", "Here you go:\n```json\n{\"response\": {\"Pitch\": \"Tools for all\", \"score\": \"7 out of 10\", \"tags\": \"- shared\\n- local\",}}\n```")

	t.Run("json", func(t *testing.T) {
		r := invoke(t, nil, "parse", "--schema", schema, "--output-format", "json", reply)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var out struct {
			Value   map[string]any `json:"value"`
			Repairs []struct{ Rule, Path, Action string }
			Usable  bool `json:"usable"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		if !out.Usable || out.Value["pitch"] != "Tools for all" || out.Value["score"] != 7.0 || len(out.Value["tags"].([]any)) != 2 {
			t.Fatalf("value %v, usable %v", out.Value, out.Usable)
		}
		rules := map[string]bool{}
		for _, rep := range out.Repairs {
			rules[rep.Rule] = true
		}
		for _, want := range []string{"syntax", "shape", "key", "type", "split"} {
			if !rules[want] {
				t.Errorf("no %s repair in %+v", want, out.Repairs)
			}
		}
	})
	t.Run("text, from standard input, for an agent", func(t *testing.T) {
		r := invokeIn(t, `[{"winner": "**A**", "Reasons": "Clearer."}]`, "parse", "--agent", "eval.judge", "-")
		if r.code != 0 || !strings.Contains(r.stdout, `"winner": "A"`) || !strings.Contains(r.stderr, "repair: enum /winner") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("unusable", func(t *testing.T) {
		r := invokeIn(t, `{"score": 7, "tags": []}`, "parse", "--schema", schema)
		if r.code != 2 || !strings.Contains(r.stderr, `"pitch" is missing`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("agents", func(t *testing.T) {
		r := invoke(t, nil, "parse", "--agents")
		for _, want := range []string{"spark.evaluate", "chaos.judge", "debate.propose", "assess.reviewer", "proposal.qc", "eval.judge"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("--agents lacks %s:\n%s", want, r.stdout)
			}
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to read against", []string{"parse", reply}, "--schema FILE or --agent NAME"},
		{"both", []string{"parse", "--schema", schema, "--agent", "eval.judge", reply}, "not both"},
		{"unknown agent", []string{"parse", "--agent", "spark.nope", reply}, `unknown agent "spark.nope"`},
		{"no schema file", []string{"parse", "--schema", filepath.Join(dir, "none.json"), reply}, "--schema"},
		{"bad schema", []string{"parse", "--schema", reply, reply}, "--schema"},
		{"no reply file", []string{"parse", "--schema", schema, filepath.Join(dir, "none.txt")}, "reply file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invoke(t, nil, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// invokeIn is invoke with stdin as standard input and no environment.
func invokeIn(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(string) string { return "" }, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// TestParseStopsOnSIGTERM: madspark parse waiting for its reply (a pipe
// that nothing writes to) stops at SIGTERM, says it was interrupted and
// exits 143, as every command does.
func TestParseStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	schema := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "parse", "--schema", schema, "-")
	cmd.Env = []string{"MADSPARK_TEST_AS_MAIN=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	r, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd.Stdin = r
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	// The reply has begun, and never ends.
	if _, err := stdin.Write([]byte(`{"a": "`)); err != nil {
		t.Fatal(err)
	}
	waitDrained(t, stdin)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 143 || !strings.Contains(stderr.String(), "interrupted") {
			t.Fatalf("exit %v, stderr %q; want 143 and interrupted", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("madspark parse did not stop at SIGTERM: %s", stderr.String())
	}
}

// waitDrained waits until the process at the other end of the pipe w
// has read all that was written to it (Linux's FIONREAD on a pipe):
// then it is running its command, with its signals handled.
func waitDrained(t *testing.T, w *os.File) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var n int32
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, w.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
			t.Skipf("cannot tell what is left in a pipe: %v", errno)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the process never read its standard input")
}

// TestParseFormats: madspark parse reads a reply in each of the five
// formats — JSON, JSON5, YAML, label-value text, a markdown table, alone
// or under a label — as the same value, the format named in its repairs,
// in JSON and on stderr.
func TestParseFormats(t *testing.T) {
	schema := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","properties":{"ideas":{"type":"array","items":{"type":"object",
		"properties":{"title":{"type":"string"},"score":{"type":"number"}},"required":["title","score"]}}},"required":["ideas"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	want := `{"ideas":[{"score":0.5,"title":"Seed swap"},{"score":7,"title":"Tool library"}]}`
	for _, tc := range []struct{ format, reply, says string }{
		{"JSON", `{"ideas": [{"title": "Seed swap", "score": 0.5}, {"title": "Tool library", "score": 7}]}`, ""},
		{"JSON5", `{ideas: [{title: 'Seed swap', score: .5}, {title: 'Tool library', score: +7,},],}`, "JSON5 numbers"},
		{"YAML", "ideas:\n  - title: Seed swap\n    score: 0.5\n  - title: Tool library\n    score: 7\n", "read as YAML"},
		{"label-value", "Here are my ideas.\n\n**Ideas:**\n1. Title: Seed swap\n   Score: 0.5\n2. Title: Tool library\n   Score: 7 points\n", "read as label-value text"},
		{"table", "| Title | Score |\n|---|---|\n| Seed swap | 0.5 |\n| Tool library | 7 |\n", "read as a markdown table"},
		{"table under a label", "Ideas:\n| Title | Score |\n|---|---|\n| Seed swap | 0.5 |\n| Tool library | #7 |\n", "a list read as a markdown table"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			r := invokeIn(t, tc.reply, "parse", "--schema", schema, "--output-format", "json", "-")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var out struct {
				Value   json.RawMessage
				Repairs []struct{ Rule, Action string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatal(err)
			}
			var got any
			_ = json.Unmarshal(out.Value, &got)
			if g, _ := json.Marshal(got); string(g) != want {
				t.Fatalf("read as %s, want %s", g, want)
			}
			found := tc.says == ""
			for _, rep := range out.Repairs {
				found = found || strings.Contains(rep.Action, tc.says)
			}
			if !found {
				t.Fatalf("no repair says %q: %+v", tc.says, out.Repairs)
			}
			text := invokeIn(t, tc.reply, "parse", "--schema", schema, "-")
			named := tc.says == ""
			for _, line := range strings.Split(text.stderr, "\n") {
				named = named || strings.HasPrefix(line, "repair: ") && strings.Contains(line, tc.says)
			}
			if text.code != 0 || !named {
				t.Fatalf("exit %d, no repair on stderr says %q:\n%s", text.code, tc.says, text.stderr)
			}
		})
	}
}
