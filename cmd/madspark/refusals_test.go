package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/postgres/pgtest"
)

// TestBadInputRefusedBeforeAnyCall: text that is not valid UTF-8 or holds
// a control character (in --input, an argument, a pipeline file's prompt),
// numbers that are not finite or not whole numbers within int64, output
// paths that the system cannot write, and --inference-type with
// --logical-inference=false are each refused in one line, exit 2, before
// the provider is called or a run is recorded. On both stores.
func TestBadInputRefusedBeforeAnyCall(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { badInputRefused(t, "") })
	t.Run("postgres", func(t *testing.T) { badInputRefused(t, pgtest.URL(t)) })
}

func badInputRefused(t *testing.T, databaseURL string) {
	srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply { return openaitest.Reply{Content: `{"t": "done"}`} })
	dir := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test-0123456789abcdef", "MADSPARK_DB": filepath.Join(dir, "m.db"), "DATABASE_URL": databaseURL}
	file := filepath.Join(dir, "t.yaml")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file, "name: t\ninputs:\n  topic: {type: string, required: true}\n  n: {type: integer, default: 2}\n  x: {type: number, default: 0.5}\n"+
		"agents:\n  a: {prompt: \"{{.topic}} {{.n}} {{.x}}\", output: {t: string}}\nsteps: [a]\n")
	nul := filepath.Join(dir, "nul.yaml")
	write(nul, "name: nul\nagents:\n  a: {prompt: \"hi\\0there\", output: {t: string}}\nsteps: [a]\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", file, "--input", "topic=\xff\xfe"}, "--input is not valid UTF-8"},
		{[]string{"run", file, "--input", "topic=a\x1b]0;pwned\x07"}, "--input contains the control character U+001B"},
		{[]string{"run", file, "--input", "topic=ok", "--input", "x=NaN"}, "--input x must be a finite number, got NaN"},
		{[]string{"run", file, "--input", "topic=ok", "--input", "n=NaN"}, "--input n must be a whole number, got NaN"},
		{[]string{"run", file, "--input", "topic=ok", "--input", "n=99999999999999999999"}, "--input n is beyond the range of a whole number"},
		{[]string{"run", nul}, "nul.yaml:3: this value contains a NUL byte"},
		{[]string{"spark", "title\x1b]0;pwned\x07"}, `argument 1 (title\x1b]0;pwned\x07) contains the control character U+001B`},
		{[]string{"spark", "ok", "a\x00b"}, `argument 2 (a\x00b) contains a NUL byte`},
		{[]string{"spark", "ok", "--bookmark-tags", "a\x1bb"}, "--bookmark-tags contains the control character U+001B"},
		{[]string{"spark", "ok", "-o", "/proc/version"}, "--output: cannot write /proc/version: no file can be created in /proc"},
		{[]string{"spark", "ok", "-o", dir + "/nosuchdir/../x.json"}, "--output: directory " + dir + "/nosuchdir/.. does not exist"},
		{[]string{"spark", "ok", "--logical-inference=false", "--inference-type", "causal_chain"}, "--inference-type asks for a logical analysis, which --logical-inference=false turns off"},
	} {
		r := invoke(t, env, tt.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 || strings.ContainsAny(r.stderr, "\x1b\x00") || !utf8.ValidString(r.stderr) {
			t.Errorf("%q: exit %d: %q; want exit 2 with %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("refused input reached the provider %d times", n)
	}
	if r := invoke(t, env, "runs", "list", "--output-format", "json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("refused input recorded runs: %s", r.stdout)
	}
	// The largest whole number reaches the prompt exactly.
	r := invoke(t, env, "run", file, "--input", "topic=ok", "--input", "n=9223372036854775807", "--input", "x=1e-3", "--output-format", "json")
	reqs := srv.Requests()
	if r.code != 0 || len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "ok 9223372036854775807 0.001") {
		t.Fatalf("exit %d: %s; %d requests", r.code, r.stderr, len(reqs))
	}
}

// TestInferenceTypeTurnsOnTheAnalysis: --inference-type asks for the
// logical analysis, so it is made (one more call), of that kind, without
// --logical-inference.
func TestInferenceTypeTurnsOnTheAnalysis(t *testing.T) {
	r := invoke(t, mockEnv(t), "spark", "urban farming", "--inference-type", "causal_chain", "--output-format", "json")
	rep := decode(t, r)
	if rep.Usage.LLMCalls != 7 {
		t.Errorf("%d calls, want 7 (6 and the analysis)", rep.Usage.LLMCalls)
	}
	for _, c := range rep.Candidates {
		li, _ := c["logical_inference"].(map[string]any)
		if li == nil || li["type"] != "causal_chain" {
			t.Errorf("candidate's logical inference: %v", c["logical_inference"])
		}
	}
}

// TestRunsListShowsEscapes: text from the store that a terminal would act
// on (an escape sequence in a topic stored before it was refused, or by
// another program) is printed as escapes by runs list, on both stores.
func TestRunsListShowsEscapes(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { runsListShowsEscapes(t, mockEnv(t)) })
	t.Run("postgres", func(t *testing.T) {
		env := mockEnv(t)
		env["DATABASE_URL"] = pgtest.URL(t)
		runsListShowsEscapes(t, env)
	})
}

func runsListShowsEscapes(t *testing.T, env map[string]string) {
	ctx := context.Background()
	db, err := app.OpenStore(ctx, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	params, _ := json.Marshal(map[string]string{"topic": "\x1b]0;pwned\x07\x1b[2Jfake \u202eoutput"})
	run := &madspark.Run{ID: uuid.Must(uuid.NewV7()).String(), Pipeline: "spark", Status: madspark.RunSucceeded, Mode: "mock",
		Provider: "mock", Model: "mock", Params: params, CreatedAt: time.Now()}
	err = db.CreateRun(ctx, run)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := invoke(t, env, "runs", "list")
	if r.code != 0 || strings.ContainsAny(r.stdout, "\x1b\x07\u202e") || !strings.Contains(r.stdout, `\x1b]0;pwned\x07\x1b[2Jfake \u202eoutput`) {
		t.Errorf("runs list: exit %d:\n%q", r.code, r.stdout)
	}
}

// TestServeRefusesWeakTokens: beyond loopback, a blank or short
// MADSPARK_API_TOKEN refuses to start the server, before anything opens.
func TestServeRefusesWeakTokens(t *testing.T) {
	for token, want := range map[string]string{
		"":                      "requires a token (MADSPARK_API_TOKEN) of at least 32 characters",
		"   ":                   "MADSPARK_API_TOKEN is set but blank",
		"x":                     "of at least 32 characters, got 1",
		strings.Repeat("t", 31): "of at least 32 characters, got 31",
	} {
		env := mockEnv(t)
		env["MADSPARK_API_TOKEN"] = token
		r := invoke(t, env, "serve", "--addr", "0.0.0.0:0")
		if r.code != exitUsage || !strings.Contains(r.stderr, want) || (len(token) > 8 && strings.Contains(r.stderr, token)) {
			t.Errorf("token %q: exit %d: %s", token, r.code, r.stderr)
		}
		if _, err := os.Stat(env["MADSPARK_DB"]); err == nil {
			t.Errorf("token %q: the database was opened", token)
		}
	}
}
