package main

import (
	"regexp"
	"sync"

	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func TestServeRefusesBadPipelinesDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yml"), []byte("name: bad\nagents: {}\nsteps: [x]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := invoke(t, mockEnv(t), "serve", "--pipelines", dir, "--addr", "127.0.0.1:0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "bad.yml:3: unknown agent") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
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
