package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
