package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestChainOrder(t *testing.T) {
	var trace []string
	mw := func(name string) Middleware {
		return func(next Client) Client {
			return ClientFunc(func(ctx context.Context, req *Request) (*Response, error) {
				trace = append(trace, name)
				return next.Generate(ctx, req)
			})
		}
	}
	base := ClientFunc(func(context.Context, *Request) (*Response, error) {
		trace = append(trace, "base")
		return &Response{}, nil
	})
	if _, err := Chain(base, mw("a"), mw("b")).Generate(context.Background(), &Request{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(trace, ","); got != "a,b,base" {
		t.Fatalf("order = %s, want a,b,base", got)
	}
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&Error{Provider: "p", Status: 429, Retryable: true}, true},
		{fmt.Errorf("wrapped: %w", &Error{Provider: "p", Status: 400}), false},
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, true},
		{errors.New("schema violation"), false},
	}
	for _, tt := range tests {
		if got := IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if !RetryableStatus(503) || !RetryableStatus(429) || RetryableStatus(401) {
		t.Error("RetryableStatus")
	}
	e := fmt.Errorf("call: %w", &Error{Provider: "openai", Status: 429, Message: "slow down", RetryAfter: 2 * time.Second})
	if RetryAfterOf(e) != 2*time.Second || RetryAfterOf(errors.New("x")) != 0 {
		t.Error("RetryAfterOf")
	}
	if got := e.Error(); got != "call: openai: HTTP 429: slow down" {
		t.Errorf("Error() = %q", got)
	}
}

func TestUsageAddAndTruncated(t *testing.T) {
	u := Usage{LLMCalls: 1, InputTokens: 10, CostUSD: 0.5}
	u.Add(Usage{CachedCalls: 1, OutputTokens: 3, CostUSD: 0.25})
	if u != (Usage{LLMCalls: 1, CachedCalls: 1, InputTokens: 10, OutputTokens: 3, CostUSD: 0.75}) {
		t.Fatalf("u = %+v", u)
	}
	for reason, want := range map[string]bool{"length": true, "max_tokens": true, "stop": false, "end_turn": false} {
		if (&Response{FinishReason: reason}).Truncated() != want {
			t.Errorf("Truncated(%q) != %v", reason, want)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	h := http.Header{}
	if RetryAfterHeader(h) != 0 || RetryAfterHeader(nil) != 0 {
		t.Fatal("empty header")
	}
	h.Set("Retry-After", "3")
	if RetryAfterHeader(h) != 3*time.Second {
		t.Fatalf("seconds: %v", RetryAfterHeader(h))
	}
	h.Set("Retry-After-Ms", "250")
	if RetryAfterHeader(h) != 250*time.Millisecond {
		t.Fatalf("ms wins: %v", RetryAfterHeader(h))
	}
	if d := ParseRetryAfter(time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)); d < 80*time.Second || d > 91*time.Second {
		t.Fatalf("HTTP-date: %v", d)
	}
	if ParseRetryAfter("soon") != 0 || ParseRetryAfter("-1") != 0 {
		t.Fatal("malformed values should give 0")
	}
}

func TestRedact(t *testing.T) {
	in := "bad key sk-proj-abcdefgh1234 for my-secret at https://x/v1?key=AIzaSyA1234567890123456789012&alt=sse and AIzaSyB12345678901234567890123"
	out := Redact(in, "my-secret")
	for _, leak := range []string{"sk-proj-abcdefgh1234", "my-secret", "AIzaSyA", "AIzaSyB"} {
		if strings.Contains(out, leak) {
			t.Fatalf("%q leaks %q", out, leak)
		}
	}
	if !strings.Contains(out, "?key=[redacted]&alt=sse") {
		t.Fatalf("out = %q", out)
	}
}

func TestRetryAfterHeaderTable(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"junk"}}, 0},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"junk"}, "Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}}, 0},
	} {
		if got := RetryAfterHeader(tc.h); got != tc.want {
			t.Errorf("RetryAfterHeader(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestUsageString(t *testing.T) {
	for _, tt := range []struct {
		u    Usage
		want string
	}{
		{Usage{LLMCalls: 1, InputTokens: 10, OutputTokens: 5}, "1 LLM call, 0 cached; 10 input + 5 output tokens; $0.0000"},
		{Usage{LLMCalls: 6, CachedCalls: 2, InputTokens: 1200, OutputTokens: 800, CostUSD: 0.01234}, "6 LLM calls, 2 cached; 1200 input + 800 output tokens; $0.0123"},
		{Usage{}, "0 LLM calls, 0 cached; 0 input + 0 output tokens; $0.0000"},
	} {
		if got := tt.u.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.u, got, tt.want)
		}
	}
}
