package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunPipelineFile(t *testing.T) {
	env := mockEnv(t)
	r := invoke(t, env, "run", "../../examples/pipelines/pitch.yaml", "--input", "topic=community tool libraries", "--output-format", "json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res map[string]map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if res["editor"]["score"] != 5.0 || res["writer"]["pitch"] == nil {
		t.Errorf("result %v", res)
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
	if r.code != exitUsage || !strings.Contains(r.stderr, "bad.yaml:5: unknown agent \"c\"") {
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
	if r := invoke(t, env, "run", "../../examples/pipelines/pitch.yaml"); r.code != exitUsage || !strings.Contains(r.stderr, "topic") {
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
