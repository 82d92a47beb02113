package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := invoke(t, map[string]string{"MADSPARK_DB": "/nonexistent/dir/m.db"}, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "madspark "+app.Version+" (commit ") || !strings.Contains(r.stdout, "go1.") {
			t.Fatalf("%v: %+v", args, r)
		}
	}
}

// TestConfigSetUp: the answers are checked with one request to the
// provider, then saved to .env with mode 0600; the key is shown masked.
func TestConfigSetUp(t *testing.T) {
	srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply { return openaitest.Reply{Content: "OK"} })
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(".env", []byte("TAVILY_API_KEY=tvly-keep-this-one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "sk-test-SECRET-0123456789"
	answers := "openai\n" + srv.URL + "\n" + key + "\n\n"
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"config"}, func(string) string { return "" }, strings.NewReader(answers), &out, &errb)
	if code != 0 || len(srv.Requests()) != 1 {
		t.Fatalf("code %d, %d requests; stderr %s", code, len(srv.Requests()), errb.String())
	}
	st, err := os.Stat(filepath.Join(dir, ".env"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf(".env: %v %v", st, err)
	}
	data, _ := os.ReadFile(".env")
	for _, want := range []string{`OPENAI_API_KEY="` + key + `"`, `OPENAI_BASE_URL="` + srv.URL + `"`, `MADSPARK_MODEL="gpt-4o-mini"`, `TAVILY_API_KEY="tvly-keep-this-one"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf(".env lacks %s:\n%s", want, data)
		}
	}
	if strings.Contains(out.String()+errb.String(), key) {
		t.Fatalf("the key was echoed")
	}

	// --show reads the file, masking keys.
	fileEnv := osEnv()
	out.Reset()
	if code := run(context.Background(), []string{"config", "--show"}, fileEnv, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("show: %d %s", code, errb.String())
	}
	if strings.Contains(out.String(), key) || !strings.Contains(out.String(), "sk-t…6789") || !strings.Contains(out.String(), ".env") {
		t.Fatalf("show:\n%s", out.String())
	}

	// A failing check writes nothing.
	srv.Inject(openaitest.Fault{Status: 401}, openaitest.Fault{Status: 401}, openaitest.Fault{Status: 401})
	before, _ := os.ReadFile(".env")
	answers = "openai\n" + srv.URL + "\nsk-wrong-key-000000000\ngpt-4o\n"
	errb.Reset()
	code = run(context.Background(), []string{"config"}, func(string) string { return "" }, strings.NewReader(answers), &out, &errb)
	after, _ := os.ReadFile(".env")
	if code == 0 || !bytes.Equal(before, after) || !strings.Contains(errb.String(), "nothing was written") || strings.Contains(errb.String(), "sk-wrong-key-000000000") {
		t.Fatalf("failed check: code %d, stderr %s", code, errb.String())
	}
	if r := invoke(t, nil, "config"); r.code != 2 {
		t.Fatalf("no answers: %+v", r)
	}
}

// TestConfigShowInEffect: config --show prints, after the settings, the
// provider, model, base URL and structured-output mode in effect, each
// with why; a password in the base URL is masked; settings that choose no
// provider are a usage error after the settings.
func TestConfigShowInEffect(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tt := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing set", map[string]string{},
			[]string{"provider           mock", "no provider credentials found", "base URL           none", "structured output  none"}},
		{"OpenAI", map[string]string{"OPENAI_API_KEY": "sk-abcdefghijklmnop"},
			[]string{"provider           openai", "OPENAI_API_KEY or OPENAI_BASE_URL is set", "model              gpt-4o-mini", "default of openai", "base URL           https://api.openai.com/v1", "structured output  native", "default for OpenAI's own API"}},
		{"a local server", map[string]string{"OPENAI_BASE_URL": "http://me:pw@127.0.0.1:8081/v1", "MADSPARK_MODEL": "qwen3"},
			[]string{"model              qwen3", "MADSPARK_MODEL", "http://me:****@127.0.0.1:8081/v1", "OPENAI_BASE_URL", "structured output  both", "default for a server other than OpenAI's"}},
		{"a mode set", map[string]string{"OLLAMA_HOST": "10.0.0.5", "MADSPARK_STRUCTURED_OUTPUT": "prompt"},
			[]string{"provider           ollama", "http://10.0.0.5:11434/v1", "OLLAMA_HOST", "structured output  prompt", "MADSPARK_STRUCTURED_OUTPUT"}},
		{"Anthropic", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-abcdefghijkl"},
			[]string{"provider           anthropic", "https://api.anthropic.com", "structured output  native", "the provider's own"}},
	} {
		r := invoke(t, tt.env, "config", "--show")
		if r.code != 0 {
			t.Errorf("%s: exit %d: %s", tt.name, r.code, r.stderr)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: --show lacks %q:\n%s", tt.name, w, r.stdout)
			}
		}
		if strings.Contains(r.stdout, ":pw@") || strings.Contains(r.stdout, "abcdefghijkl") {
			t.Errorf("%s: a secret is shown:\n%s", tt.name, r.stdout)
		}
	}
	r := invoke(t, map[string]string{"OPENAI_API_KEY": "sk-abcdefghijklmnop"}, "config", "--show", "--output-format", "json")
	var shown struct {
		InEffect []struct{ Name, Value, Source string } `json:"in_effect"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown.InEffect) != 4 || shown.InEffect[3].Name != "structured output" || shown.InEffect[3].Value != "native" {
		t.Errorf("json: %v %s", err, r.stdout)
	}
	bad := invoke(t, map[string]string{"MADSPARK_PROVIDER": "opneai"}, "config", "--show")
	if bad.code != exitUsage || !strings.Contains(bad.stdout, "MADSPARK_PROVIDER") || !strings.Contains(bad.stderr, "no provider is in effect: MADSPARK_PROVIDER must be one of") {
		t.Errorf("a bad provider: exit %d: %s %s", bad.code, bad.stdout, bad.stderr)
	}
}
