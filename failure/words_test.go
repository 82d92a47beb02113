package failure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/structured"
)

// goWords are phrases of Go, its standard library and its libraries that
// no message for people may carry.
var goWords = regexp.MustCompile("dial tcp|connect: |lookup |context canceled|context deadline exceeded|no such file or directory|file does not exist|" +
	"invalid character|looking for beginning|unexpected end of JSON input|(?:^|[^.])json: |cannot unmarshal|Go struct|arg\\(s\\)|" +
	"unexpected EOF|Post \"|i/o timeout|SQLITE_|failed to connect to `|dial error|goroutine|\\.go:|%!|<nil>")

func noGoWords(t *testing.T, what, s string) {
	t.Helper()
	if w := goWords.FindString(s); w != "" {
		t.Errorf("%s: %q says %q", what, s, w)
	}
}

// live calls a provider through the retry and breaker decorators the app
// composes, and returns the error a step wraps, as a run records it.
func live(t *testing.T, c llm.Client) string {
	t.Helper()
	noSleep := func(context.Context, time.Duration) error { return nil }
	c = llm.Chain(c, middleware.Retry(middleware.RetryConfig{Sleep: noSleep}))
	_, err := c.Generate(context.Background(), &llm.Request{Agent: "spark.generate", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err == nil {
		t.Fatal("the call succeeded")
	}
	return fmt.Errorf("stage generate: spark.generate: %w", err).Error()
}

// TestEveryKindInWords walks every kind of failure, each made by the real
// code a user meets it through, and checks its words: a message that
// names the thing, advice (but for the unknown), no Go wording; the
// provider's address only for the reader who configured it.
func TestEveryKindInWords(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	clock := func() time.Time { return now }
	dir := t.TempDir()

	refused := live(t, openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-test", Model: "m"}))
	reg := pipeline.NewRegistry()
	if err := reg.Register(pipeline.Definition{Name: "spark", NewParams: func() pipeline.Params { return &params{N: 1} },
		Run: func(context.Context, *engine.Run, pipeline.Params) (any, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	_, perr := reg.Decode("spark", []byte(`{"n": 4}`))
	sr := &scholar.Searcher{Sources: []search.Provider{source{errors.New("dial tcp: lookup api.openalex.org: no such host")}}, MaxRetryWait: -1}
	_, searchErr := sr.Search(ctx, []string{"q"})
	_, openErr := os.Open(filepath.Join(dir, "topics.txt"))
	var v map[string]any
	jsonErr := json.Unmarshal([]byte(`{"a" b}`), &v)
	_, sqliteErr := app.OpenStore(ctx, func(k string) string { return map[string]string{"MADSPARK_DB": dir}[k] })
	pgCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, pgErr := app.OpenStore(pgCtx, func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"}[k]
	})
	reply := &structured.ReplyError{Agent: "chaos.judge", Problem: errors.New("no JSON value in the reply")}

	local := failure.Provider{Name: "openai", Endpoint: "http://127.0.0.1:1/v1", Local: true}
	cases := []struct {
		kind     failure.Kind
		msg      string
		provider failure.Provider
		want     string // in the Line
	}{
		{failure.ProviderError, through(t, &llm.Error{Provider: "openai", Status: 500, Message: "internal error", Retryable: true}, 1, clock), failure.Provider{Name: "openai"}, "OpenAI had a server error (HTTP 500: internal error) and did not answer, even after 4 attempts (stage generate, agent spark.generate) — try again in a minute; if it keeps failing, see status.openai.com"},
		{failure.ProviderError, through(t, &llm.Error{Provider: "openai", Status: 502, Message: "bad gateway", Retryable: true}, 1, clock), local, "the model server at http://127.0.0.1:1/v1 had a server error (HTTP 502: bad gateway)"},
		{failure.RateLimited, through(t, &llm.Error{Provider: "anthropic", Status: 429, Message: "slow down", Retryable: true}, 1, clock), failure.Provider{}, "Anthropic is limiting how many requests it takes"},
		{failure.ProviderPaused, through(t, &llm.Error{Provider: "openai", Status: 503, Message: "overloaded", Retryable: true}, 2, clock), failure.Provider{}, "madspark paused its calls to OpenAI after it failed several times in a row (stage generate, agent spark.generate) — it tries again at "},
		{failure.Auth, through(t, &llm.Error{Provider: "anthropic", Status: 401, Message: "invalid x-api-key"}, 1, clock), failure.Provider{}, "Anthropic refused the API key (HTTP 401: invalid x-api-key) (stage generate, agent spark.generate) — check the key (ANTHROPIC_API_KEY)"},
		{failure.ProviderRefused, through(t, &llm.Error{Provider: "gemini", Status: 404, Message: "model not found"}, 1, clock), failure.Provider{}, "Gemini refused the request (HTTP 404: model not found)"},
		{failure.Network, refused, local, "cannot reach the provider at http://127.0.0.1:1/v1: connection refused (stage generate, agent spark.generate) — is the server running?"},
		{failure.Network, refused, failure.Provider{Name: "openai", Local: true}, "cannot reach madspark's model server: connection refused (stage generate, agent spark.generate) — is the server running?"},
		{failure.Network, "stage generate: spark.generate: gave up after 4 attempts: openai: Post \"https://api.openai.com/v1/chat/completions\": dial tcp: lookup api.openai.com on 127.0.0.53:53: no such host", failure.Provider{Name: "openai"}, "cannot reach OpenAI: no such host api.openai.com (stage generate, agent spark.generate) — check the address (OPENAI_BASE_URL) and this machine's network connection"},
		{failure.Timeout, fmt.Errorf("run timed out after 10m0s (--timeout): %w", context.DeadlineExceeded).Error(), failure.Provider{}, "the run took longer than its time limit of 10m0s and was stopped — try again with a longer --timeout"},
		{failure.SearchUnavailable, fmt.Errorf("r0/literature: %w", searchErr).Error(), failure.Provider{}, "the literature search reached none of its sources"},
		{failure.Params, perr.Error(), failure.Provider{}, "a setting was not accepted: "},
		{failure.ReplyUnusable, fmt.Errorf("iteration 1: i1/judge: %w", reply).Error(), failure.Provider{}, "the model's reply could not be used, even after it was asked again (chaos.judge: no JSON value in the reply)"},
		{failure.Interrupted, "interrupted (SIGTERM) at stage evaluate", failure.Provider{}, "the run was interrupted (SIGTERM) at stage evaluate — resume it to finish it"},
		{failure.Interrupted, "interrupted: madspark serve (pid 4121 on host studio) stopped without finishing it; resume with: madspark resume 0190", failure.Provider{}, "the run was interrupted before it finished"},
		{failure.Cancelled, "cancelled by request", failure.Provider{}, "the run was cancelled"},
		{failure.File, fmt.Errorf("--topics: %w", openErr).Error(), failure.Provider{}, "--topics: no file " + filepath.Join(dir, "topics.txt") + " — check the path"},
		{failure.JSON, fmt.Errorf("profile me.json: %w", jsonErr).Error(), failure.Provider{}, "profile me.json: a ':' was expected after the key, not 'b' — correct the JSON"},
		{failure.Database, sqliteErr.Error(), failure.Provider{}, "cannot open the database " + dir + ": " + dir + " is a directory, not a file — check MADSPARK_DB"},
		{failure.Database, pgErr.Error(), failure.Provider{}, "cannot reach the database at 127.0.0.1:1: connection refused — is PostgreSQL running there? (DATABASE_URL)"},
		{failure.Unknown, "stage generate: encode output: json: unsupported value: NaN", failure.Provider{}, "stage generate: encode output: unsupported value: NaN"},
	}
	seen := map[failure.Kind]bool{}
	for _, c := range cases {
		f := failure.Explain(c.msg, c.provider)
		if f == nil || f.Kind != c.kind {
			t.Errorf("Explain(%q) = %+v, want kind %s", c.msg, f, c.kind)
			continue
		}
		seen[c.kind] = true
		line := f.Line()
		if !strings.Contains(line, c.want) {
			t.Errorf("%s: %q\nwant it to say %q", c.kind, line, c.want)
		}
		if f.Message == "" || (f.Advice == "") != (c.kind == failure.Unknown) {
			t.Errorf("%s: message %q, advice %q", c.kind, f.Message, f.Advice)
		}
		noGoWords(t, string(c.kind), line)
		if c.provider.Local {
			for _, vendorWords := range []string{"status.openai.com", "check the network connection"} {
				if strings.Contains(line, vendorWords) {
					t.Errorf("%s with a local server: %q says %q", c.kind, line, vendorWords)
				}
			}
		}
		// A reader who did not configure the provider is not told its
		// address, in any field.
		r := f.ForRemote(c.provider)
		for _, s := range []string{r.Message, r.Advice, r.Detail} {
			if strings.Contains(s, "127.0.0.1") || strings.Contains(s, "http://") || strings.Contains(s, "api.openai.com") {
				t.Errorf("%s for a remote reader: %q shows an address", c.kind, s)
			}
		}
		if f.Kind == failure.Network && r.Kind != failure.Network {
			t.Errorf("for a remote reader the kind changed: %s", r.Kind)
		}
	}
	for _, k := range failure.Kinds() {
		if !seen[k] {
			t.Errorf("no case of kind %s", k)
		}
	}
}

// TestPlainLeavesNoGoWording: a message made of Go's errors — of files,
// JSON, the network and contexts, with any path or text around them — is
// rewritten with none of Go's wording, and what is not Go's stays.
func TestPlainLeavesNoGoWording(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		word := rapid.StringMatching(`[a-z][a-z0-9_ .-]{0,12}`)
		path := filepath.Join("/tmp", word.Draw(t, "dir"), word.Draw(t, "file")+".json")
		mine := "madspark says " + word.Draw(t, "mine")
		var v any
		sources := []error{
			&os.PathError{Op: rapid.SampledFrom([]string{"open", "stat", "read", "mkdir"}).Draw(t, "op"), Path: path, Err: rapid.SampledFrom([]error{os.ErrNotExist, errors.New("no such file or directory"), errors.New("is a directory"), errors.New("permission denied")}).Draw(t, "errno")},
			json.Unmarshal([]byte(rapid.SampledFrom([]string{`{"a" b}`, `{a}`, `[1 2]`, `{"a":1,}`, `{"a": tru}`, `{"a":`, `"\q"`, `{} x`}).Draw(t, "json")), &v),
			fmt.Errorf(`Post "http://127.0.0.1:%d/v1/chat/completions": dial tcp 127.0.0.1:%d: connect: connection refused`, 1, 1),
			fmt.Errorf("dial tcp: lookup %s.example on 127.0.0.53:53: no such host", rapid.StringMatching(`[a-z][a-z0-9-]{0,12}`).Draw(t, "host")),
			context.Canceled, context.DeadlineExceeded, errors.New("unexpected EOF"),
			errors.New("requires at least 1 arg(s), only received 0"),
		}
		err := rapid.SampledFrom(sources).Draw(t, "err")
		msg := mine + ": " + err.Error()
		got := failure.Plain(msg)
		if w := goWords.FindString(got); w != "" {
			t.Fatalf("Plain(%q) = %q says %q", msg, got, w)
		}
		if !strings.HasPrefix(got, mine+": ") {
			t.Fatalf("Plain(%q) = %q lost what was not Go's", msg, got)
		}
		if f := failure.Of(msg); f == nil || f.Message == "" {
			t.Fatalf("Of(%q) = %+v", msg, f)
		} else {
			if w := goWords.FindString(f.Line()); w != "" {
				t.Fatalf("Of(%q).Line() = %q says %q", msg, f.Line(), w)
			}
		}
	})
}
