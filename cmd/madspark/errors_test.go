package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

// goWording is what Go, its libraries and cobra say that a person reading
// madspark's messages must never see.
var goWording = regexp.MustCompile("dial tcp|connect: |context canceled|context deadline exceeded|no such file or directory|file does not exist|" +
	`invalid character|looking for beginning|unexpected end of JSON input|(?:^|[^.])json: |cannot unmarshal|arg\(s\)|unexpected EOF|Post "|` +
	"i/o timeout|SQLITE_|failed to connect to `|dial error|goroutine |\\.go:\\d|%!|<nil>")

// TestErrorsInWords: every kind of failure a user meets on the command
// line is told in one line of words — what happened, naming the thing,
// and what to do — with the provider's address (the user configured it),
// advice that fits a server of one's own, and none of Go's wording.
func TestErrorsInWords(t *testing.T) {
	dir := t.TempDir()
	badJSON := writeTemp(t, "bookmarks.json", `{"a" b}`)
	for _, tt := range []struct {
		kind  string
		fault *openaitest.Fault // every reply; nil for a healthy provider
		env   map[string]string
		args  []string
		code  int
		want  []string
		never []string
	}{
		{kind: "auth", fault: &openaitest.Fault{Status: 401, Message: "Incorrect API key provided"}, args: []string{"spark", "urban farming"}, code: 1,
			want: []string{"refused the API key (HTTP 401: Incorrect API key provided) (stage generate, agent spark.generate) — check the key (OPENAI_API_KEY)", "madspark resume "}},
		{kind: "provider_refused", fault: &openaitest.Fault{Status: 404, Message: "The model `gpt-9` does not exist"}, args: []string{"spark", "urban farming"}, code: 1,
			want: []string{"refused the request (HTTP 404: The model `gpt-9` does not exist)", "check the model name (MADSPARK_MODEL)"}},
		{kind: "provider_error", fault: &openaitest.Fault{Status: 500, Message: "boom"}, args: []string{"spark", "urban farming"}, code: 1,
			want:  []string{"the model server at http://127.0.0.1:", "had a server error (HTTP 500: boom) and did not answer, even after 4 attempts", "the server's log says why"},
			never: []string{"status.openai.com", "status page"}},
		{kind: "rate_limited", fault: &openaitest.Fault{Status: 429, Message: "slow down"}, args: []string{"spark", "urban farming"}, code: 1,
			want: []string{"is limiting how many requests it takes (HTTP 429: slow down), even after 4 attempts", "MADSPARK_PROVIDER_CONCURRENCY"}},
		{kind: "network", env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, args: []string{"spark", "urban farming"}, code: 1,
			want:  []string{"cannot reach the provider at http://127.0.0.1:1/v1: connection refused (stage generate, agent spark.generate) — is the server running?"},
			never: []string{"check the network connection"}},
		{kind: "timeout", env: map[string]string{"MADSPARK_MODE": "mock", "MADSPARK_MOCK_LATENCY": "300ms"}, args: []string{"spark", "urban farming", "--timeout", "100ms"}, code: 1,
			want: []string{"the run took longer than its time limit of 100ms and was stopped", "--timeout"}},
		{kind: "reply_unusable", fault: &openaitest.Fault{}, args: []string{"spark", "urban farming"}, code: 1,
			want: []string{"the model's reply could not be used, even after it was asked again (spark.generate: ", "resume the run to ask once more"}},
		{kind: "file", args: []string{"eval", "--pipeline", "spark", "--topics", filepath.Join(dir, "missing.txt")}, code: 2,
			want: []string{"--topics: no file " + filepath.Join(dir, "missing.txt")}},
		{kind: "json", env: map[string]string{"MADSPARK_MODE": "mock"}, args: []string{"bookmarks", "import", badJSON}, code: 2,
			want: []string{"a ':' was expected after the key, not 'b'"}},
		{kind: "database", env: map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"}, args: []string{"runs", "list"}, code: 1,
			want: []string{"cannot reach the database at 127.0.0.1:1: connection refused — is PostgreSQL running there? (DATABASE_URL)"}},
		{kind: "arguments", args: []string{"runs", "show"}, code: 2, want: []string{"runs show needs RUN_ID"}},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			if tt.kind == "provider_error" || tt.kind == "rate_limited" || tt.kind == "network" {
				t.Parallel() // each waits out the retries' backoff
			}
			srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply {
				if tt.fault != nil && tt.fault.Status == 0 {
					return openaitest.Reply{Content: "I have no ideas in JSON, sorry."}
				}
				return openaitest.Reply{Fault: tt.fault}
			})
			env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
			for k, v := range tt.env {
				env[k] = v
			}
			start := time.Now()
			r := invoke(t, env, append(tt.args, "--quiet")...)
			last := lastLine(r.stderr)
			if r.code != tt.code || !strings.HasPrefix(last, "madspark: ") {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(last, w) {
					t.Errorf("%q\nwant it to say %q", last, w)
				}
			}
			for _, w := range tt.never {
				if strings.Contains(last, w) {
					t.Errorf("%q says %q", last, w)
				}
			}
			if w := goWording.FindString(r.stderr); w != "" {
				t.Errorf("stderr says %q:\n%s", w, r.stderr)
			}
			t.Logf("%s in %s", tt.kind, time.Since(start).Round(time.Millisecond))
		})
	}
}
