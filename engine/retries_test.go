package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/store/sqlite"
)

// flakyClient fails the first fails calls it is sent with a refused
// connection, then answers.
type flakyClient struct {
	fails int32
	calls atomic.Int32
}

func (c *flakyClient) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	if c.calls.Add(1) <= c.fails {
		return nil, &llm.Error{Provider: "openai", Message: `Post "http://127.0.0.1:8080/v1/chat/completions": dial tcp 127.0.0.1:8080: connect: connection refused`, Retryable: true}
	}
	return &llm.Response{Text: req.Prompt(), Usage: llm.Usage{LLMCalls: 1}}, nil
}

// TestRetriesAreEvents: each retry of a step's call is a retry event of
// the run as it happens, with the attempt, the most attempts, the pause
// and the error; then one says how the call ended. The run's sink (the
// command line's display) is not sent them, and a call that was not
// retried makes none.
func TestRetriesAreEvents(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	flaky := &flakyClient{fails: 2}
	var slept []time.Duration
	retry := middleware.Retry(middleware.RetryConfig{MaxRetries: 3, Base: 2 * time.Second, Sleep: func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}})
	pub := &recorder{}
	e := &Engine{Store: db, Client: retry(flaky), Events: pub}
	var sunk []madspark.Event
	r, err := e.Start(ctx, RunInfo{Pipeline: "test"}, func(ev madspark.Event) { sunk = append(sunk, ev) })
	if err != nil {
		t.Fatal(err)
	}
	r.Emit("generate", 20, "generating")
	if _, err := Step(ctx, r, "generate", "x", ask("hello")); err != nil {
		t.Fatal(err)
	}
	// A call that is not retried says nothing; one that fails for good
	// says so.
	if _, err := Step(ctx, r, "again", "x", ask("hello")); err != nil {
		t.Fatal(err)
	}
	flaky.calls.Store(-10)
	if _, err := Step(ctx, r, "evaluate", "x", ask("hello")); err == nil {
		t.Fatal("a call that failed four times succeeded")
	}

	var got []madspark.RetryData
	for _, ev := range pub.events {
		if ev.Type != madspark.EventRetry {
			continue
		}
		if ev.Stage != "generate" || ev.Progress != 20 || ev.Message == "" {
			t.Errorf("retry event %+v: want the run's stage and progress, and a message", ev)
		}
		var d madspark.RetryData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatalf("retry event data %s: %v", ev.Data, err)
		}
		got = append(got, d)
	}
	want := []struct {
		call          string
		attempt       int
		delay         int64
		ended, errors string
	}{
		{"generate#1", 2, 2000, "", "connection refused"},
		{"generate#1", 3, 4000, "", "connection refused"},
		{"generate#1", 3, 0, madspark.RetrySucceeded, ""},
		{"evaluate#3", 2, 2000, "", "connection refused"},
		{"evaluate#3", 3, 4000, "", "connection refused"},
		{"evaluate#3", 4, 8000, "", "connection refused"},
		{"evaluate#3", 4, 0, madspark.RetryFailed, "gave up after 4 attempts"},
	}
	if len(got) != len(want) {
		t.Fatalf("retry events = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Call != w.call || g.Attempt != w.attempt || g.MaxAttempts != 4 || g.DelayMS != w.delay || g.Ended != w.ended ||
			(w.errors == "") != (g.Error == "") || !strings.Contains(g.Error, w.errors) {
			t.Errorf("retry event %d = %+v, want %+v", i, g, w)
		}
	}
	if len(slept) != 5 {
		t.Errorf("slept %v, want 5 pauses", slept)
	}
	for _, ev := range sunk {
		if ev.Type == madspark.EventRetry {
			t.Errorf("the sink was sent a retry event: %+v", ev)
		}
	}
	if err := r.Finish(ctx, nil, errors.New("stage evaluate: failed")); err != nil {
		t.Fatal(err)
	}
}
