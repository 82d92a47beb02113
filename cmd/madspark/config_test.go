package main

import (
	"bytes"
	"context"
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
