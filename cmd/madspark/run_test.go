package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

func TestRunPipelineFile(t *testing.T) {
	env := mockEnv(t)
	r := invoke(t, env, "run", "../../examples/pipelines/pitch.yaml", "--input", "topic=community tool libraries", "--output-format", "json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res struct {
		Writer, Editor map[string]any
		Repairs        []any `json:"repairs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if res.Editor["score"] != 5.0 || res.Writer["pitch"] == nil || res.Repairs == nil {
		t.Errorf("result %s", r.stdout)
	}
	list := invoke(t, env, "runs", "list", "--output-format", "json")
	if !strings.Contains(list.stdout, `"pitch"`) {
		t.Errorf("the run is not listed under the file's name: %s", list.stdout)
	}
}

func TestRunPipelineFileRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\nagents:\n  a: {prompt: \"{{.b.x}}\", output: {t: string}}\n  b: {prompt: hi, output: {x: string}}\nsteps: [a, c]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := mockEnv(t)
	r := invoke(t, env, "run", bad)
	if r.code != exitUsage || strings.Count(r.stderr, "bad.yaml:5: unknown agent \"c\"") != 1 ||
		!strings.HasSuffix(r.stderr, "bad.yaml: 3 problems, each on its line above\n") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(env["MADSPARK_DB"]); err == nil {
		t.Error("a refused file opened the database")
	}
	c := invoke(t, env, "pipelines", "check", bad, "../../examples/pipelines/chaos.yaml")
	if c.code != exitUsage {
		t.Errorf("check exit %d", c.code)
	}
	for _, want := range []string{"bad.yaml:3: agent a refers to {{.b.x}}", "bad.yaml:4: agent b is never used", "bad.yaml:5: unknown agent", "chaos.yaml: ok"} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, c.stdout)
		}
	}
	if r := invoke(t, env, "run", "../../examples/pipelines/pitch.yaml"); r.code != exitUsage || !strings.Contains(r.stderr, "pitch needs --input topic=VALUE") {
		t.Errorf("missing input: exit %d: %s", r.code, r.stderr)
	}
	if r := invoke(t, env, "run", "../../examples/pipelines/pitch.yaml", "--input", "colour=red"); r.code != exitUsage {
		t.Errorf("unknown input: exit %d: %s", r.code, r.stderr)
	}
}

// TestServeListsBrokenPipelineFiles: one broken file in --pipelines does
// not stop the server: the good files are served, and each broken one is
// logged and listed by GET /api/pipelines with its problems, as is a file
// that is a link out of the directory.
func TestServeListsBrokenPipelineFiles(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"bad.yml":   "name: bad\nagents: {}\nsteps: [x]\n",
		"good.yaml": "name: good\nagents:\n  a: {prompt: \"hi\", output: {t: string}}\nsteps: [a]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "elsewhere.yaml")
	if err := os.WriteFile(outside, []byte("name: elsewhere\nagents:\n  a: {prompt: \"hi\", output: {t: string}}\nsteps: [a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	env := mockEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--pipelines", dir, "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
	}()
	addr := regexp.MustCompile(`serving http://([0-9.:]+)/v1`)
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base = "http://" + m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", errb.String())
		}
	}
	resp, err := http.Get(base + "/api/pipelines")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Pipelines []struct{ Name string }
		Broken    []struct {
			File, Error string
			Problems    []string
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Pipelines {
		names = append(names, p.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "good") || strings.Contains(strings.Join(names, ","), "elsewhere") {
		t.Errorf("served pipelines %v", names)
	}
	if len(list.Broken) != 2 || list.Broken[0].File != "bad.yml" || !strings.HasPrefix(list.Broken[0].Error, "bad.yml:2: agents: at least one agent is required (and 1 more problems)") ||
		len(list.Broken[0].Problems) != 2 || !strings.HasPrefix(list.Broken[0].Problems[1], "bad.yml:3: unknown agent") || list.Broken[1].File != "linked.yaml" || !strings.Contains(list.Broken[1].Error, "leads out of its directory") {
		t.Errorf("broken files %+v", list.Broken)
	}
	for _, f := range []string{"bad.yml", "linked.yaml"} {
		if !strings.Contains(errb.String(), "pipeline file not served") || !strings.Contains(errb.String(), f) {
			t.Errorf("the log does not tell %s:\n%s", f, errb.String())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}
}

// TestServePipelinesDir: the files of --pipelines are pipelines of the
// API, with their inputs as the parameters' schema, and models of /v1.
func TestServePipelinesDir(t *testing.T) {
	base, stop := startWebServe(t, mockEnv(t), "--pipelines", filepath.Join("..", "..", "examples", "pipelines"))
	defer stop()
	get := func(path string) string {
		t.Helper()
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		return string(b)
	}
	if b := get("/api/pipelines"); !strings.Contains(b, `"pitch"`) || !strings.Contains(b, `"chaos-file"`) {
		t.Errorf("/api/pipelines: %.400s", b)
	}
	if b := get("/v1/models"); !strings.Contains(b, "madspark-pitch") {
		t.Errorf("/v1/models: %s", b)
	}
	body := strings.NewReader(`{"model":"madspark-pitch","messages":[{"role":"user","content":"tool libraries"}]}`)
	res, err := http.Post(base+"/v1/chat/completions", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "mock pitch for pitch.editor") {
		t.Errorf("chat completion: %d %s", res.StatusCode, b)
	}
}

// TestRunPipelineFileImperfectReplies runs the example against an
// OpenAI-compatible server whose first replies are imperfect: a score as
// text is repaired without asking, a reply in prose is
// asked again; the run succeeds with the repairs recorded.
func TestRunPipelineFileImperfectReplies(t *testing.T) {
	base := func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
			return openaitest.Reply{Content: "no schema was sent"}
		}
		v, err := mock.FromSchema(req.ResponseFormat.JSONSchema.Name, req.ResponseFormat.JSONSchema.Schema)
		if err != nil {
			return openaitest.Reply{Content: err.Error()}
		}
		b, _ := json.Marshal(v)
		return openaitest.Reply{Content: string(b)}
	}
	var mu sync.Mutex
	calls := map[string]int{}
	imperfect := openaitest.Imperfect(base, map[string][]openaitest.Flaw{
		"pitch_editor": {openaitest.Add("score", 20), openaitest.AsText("score")},
		"pitch_fan":    {openaitest.Prose("Its strengths are many.")},
	})
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		mu.Lock()
		calls[req.ResponseFormat.JSONSchema.Name]++
		mu.Unlock()
		return imperfect(req)
	})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	r := invoke(t, env, "run", "../../examples/pipelines/pitch.yaml", "--input", "topic=tools", "--output-format", "json", "--no-cache")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res struct {
		Editor  map[string]any
		Repairs []struct{ Agent, Rule, Path string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	// The declared score has no range: "25" is only made a number.
	if res.Editor["score"] != 25.0 {
		t.Errorf("editor score %#v, want the number 25", res.Editor["score"])
	}
	if len(res.Repairs) != 1 || res.Repairs[0].Agent != "pitch.editor" || res.Repairs[0].Rule != "type" || res.Repairs[0].Path != "/score" {
		t.Errorf("repairs %+v, want the editor's score read as a number", res.Repairs)
	}
	if calls["pitch_fan"] != 2 || calls["pitch_editor"] != 1 || calls["pitch_writer"] != 1 {
		t.Errorf("calls %v: want the prose reply asked again, the rest once", calls)
	}
	list := invoke(t, env, "runs", "list", "--output-format", "json")
	var runs []struct {
		ID string `json:"run_id"`
	}
	_ = json.Unmarshal([]byte(list.stdout), &runs)
	if len(runs) != 1 {
		t.Fatalf("runs: %s", list.stdout)
	}
	show := invoke(t, env, "runs", "show", runs[0].ID, "--steps")
	if !regexp.MustCompile(`(?m)^editor .* 1\s*$`).MatchString(show.stdout) || !regexp.MustCompile(`(?m)^fan .* 2 `).MatchString(show.stdout) {
		t.Errorf("runs show --steps:\n%s", show.stdout)
	}
}
