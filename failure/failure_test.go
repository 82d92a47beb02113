package failure_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/structured"
)

// failing is a client whose every call fails with err.
func failing(err error) llm.Client {
	return llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) { return nil, err })
}

// through calls a client failing with err through the retry and breaker
// decorators the app composes, and returns the error a step wraps, as a
// run records it.
func through(t *testing.T, err error, calls int, now func() time.Time) string {
	t.Helper()
	noSleep := func(context.Context, time.Duration) error { return nil }
	c := llm.Chain(failing(err), middleware.Retry(middleware.RetryConfig{Sleep: noSleep}), middleware.Breaker(middleware.BreakerConfig{Now: now}))
	var last error
	for range calls {
		_, last = c.Generate(context.Background(), &llm.Request{Agent: "spark.generate"})
	}
	return fmt.Errorf("stage generate: spark.generate: %w", last).Error()
}

type params struct {
	N int `json:"n" jsonschema:"minimum=1,maximum=5"`
}

func (p *params) Validate() error {
	if p.N > 3 {
		return errors.New("n must be at most 3 here")
	}
	return nil
}

type source struct{ err error }

func (source) Name() string { return "openalex" }
func (s source) Search(context.Context, string, int) ([]search.Result, error) {
	return nil, s.err
}

func TestOf(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 58, 39, 0, time.UTC)
	clock := func() time.Time { return now }
	reg := pipeline.NewRegistry()
	if err := reg.Register(pipeline.Definition{Name: "spark", NewParams: func() pipeline.Params { return &params{N: 1} },
		Run: func(context.Context, *engine.Run, pipeline.Params) (any, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	_, perr := reg.Decode("spark", []byte(`{"n": 4}`))
	_, typeErr := reg.Decode("spark", []byte(`{"n": "many"}`))
	sr := &scholar.Searcher{Sources: []search.Provider{source{errors.New("dial tcp: lookup api.openalex.org: no such host")}}, MaxRetryWait: -1}
	_, searchErr := sr.Search(context.Background(), []string{"q"})
	reply := &structured.ReplyError{Agent: "chaos.judge", Problem: errors.New("no JSON value in the reply")}
	retryAt := now.Add(60 * time.Second)

	for _, c := range []struct {
		name     string
		msg      string
		kind     failure.Kind
		provider string
		status   int
		field    string
		retryAt  *time.Time
	}{
		{"server error after retries", through(t, &llm.Error{Provider: "openai", Status: 500, Message: "internal error", Retryable: true}, 1, clock), failure.ProviderError, "openai", 500, "", nil},
		{"rate limit", through(t, &llm.Error{Provider: "anthropic", Status: 429, Message: "slow down", Retryable: true}, 1, clock), failure.RateLimited, "anthropic", 429, "", nil},
		{"breaker open", through(t, &llm.Error{Provider: "openai", Status: 503, Message: "overloaded", Retryable: true}, 2, clock), failure.ProviderPaused, "openai", 503, "", &retryAt},
		{"bad key", through(t, &llm.Error{Provider: "openai", Status: 401, Message: "Incorrect API key provided"}, 1, clock), failure.Auth, "openai", 401, "", nil},
		{"unknown model", through(t, &llm.Error{Provider: "gemini", Status: 404, Message: "model not found"}, 1, clock), failure.ProviderRefused, "gemini", 404, "", nil},
		{"no connection", through(t, &llm.Error{Provider: "openai", Message: "dial tcp 127.0.0.1:1: connect: connection refused", Retryable: true}, 1, clock), failure.Network, "", 0, "", nil},
		{"range", fmt.Sprintf("%v", perr), failure.Params, "", 0, "", nil},
		{"type", typeErr.Error(), failure.Params, "", 0, "n", nil},
		{"a stored null", "proposal parameters: profile.missing_skills: want array, got null", failure.Params, "", 0, "profile.missing_skills", nil},
		{"literature search", fmt.Errorf("r0/literature: %w (run with --no-search to write the proposal without a literature review)", searchErr).Error(), failure.SearchUnavailable, "", 0, "", nil},
		{"reply", fmt.Errorf("iteration 1: i1/judge: %w", reply).Error(), failure.ReplyUnusable, "", 0, "", nil},
		{"timeout", fmt.Errorf("run timed out after 10m0s: %w", context.DeadlineExceeded).Error(), failure.Timeout, "", 0, "", nil},
		{"interrupted", "interrupted: madspark serve (pid 4121 on host studio) stopped without finishing it; resume with: madspark resume 0190", failure.Interrupted, "", 0, "", nil},
		{"cancelled", fmt.Errorf("%w by request", errors.New("cancelled")).Error(), failure.Cancelled, "", 0, "", nil},
		{"other", "stage generate: something else", failure.Unknown, "", 0, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := failure.Of(c.msg)
			if f == nil {
				t.Fatalf("Of(%q) = nil", c.msg)
			}
			if f.Kind != c.kind || f.Provider != c.provider || f.Status != c.status || f.Field != c.field || f.Detail != c.msg {
				t.Errorf("Of(%q) = %+v, want kind %s provider %q status %d field %q", c.msg, f, c.kind, c.provider, c.status, c.field)
			}
			if (f.RetryAt == nil) != (c.retryAt == nil) || (f.RetryAt != nil && !f.RetryAt.Equal(*c.retryAt)) {
				t.Errorf("Of(%q).RetryAt = %v, want %v", c.msg, f.RetryAt, c.retryAt)
			}
		})
	}
	if f := failure.Of("  "); f != nil {
		t.Errorf("Of of nothing = %+v, want nil", f)
	}
}
