package middleware

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/madspark/madspark/llm"
)

// fakeSleeper records the delays it is asked to wait and returns at once.
type fakeSleeper struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *fakeSleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *fakeSleeper) Delays() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeClient answers each call with fn, and counts calls.
type fakeClient struct {
	mu    sync.Mutex
	calls int
	reqs  []llm.Request
	fn    func(ctx context.Context, call int, req *llm.Request) (*llm.Response, error)
}

func (c *fakeClient) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c.mu.Lock()
	c.calls++
	n := c.calls
	c.reqs = append(c.reqs, *req)
	c.mu.Unlock()
	return c.fn(ctx, n, req)
}

func (c *fakeClient) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// results returns a fakeClient function that answers call n with errs[n-1]
// while there are errors left, then with ok.
func results(ok *llm.Response, errs ...error) func(context.Context, int, *llm.Request) (*llm.Response, error) {
	return func(_ context.Context, n int, _ *llm.Request) (*llm.Response, error) {
		if n <= len(errs) && errs[n-1] != nil {
			return nil, errs[n-1]
		}
		r := *ok
		return &r, nil
	}
}

func okResp(text string) *llm.Response {
	return &llm.Response{Text: text, Provider: "openai", Model: "gpt-4o-mini", FinishReason: "stop",
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 10, OutputTokens: 20}}
}

func status(code int) *llm.Error {
	return &llm.Error{Provider: "openai", Status: code, Message: "boom", Retryable: llm.RetryableStatus(code)}
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func request(prompt string) *llm.Request {
	return &llm.Request{
		Agent:    "spark.evaluate",
		System:   "You are a judge. SECRET-SYSTEM",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}},
	}
}
