package middleware

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

// slow waits for its context and returns its error.
var slow = llm.ClientFunc(func(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	<-ctx.Done()
	return nil, ctx.Err()
})

func TestTimeoutExpires(t *testing.T) {
	for _, tc := range []struct {
		name    string
		def     time.Duration
		timeout time.Duration
		want    string
	}{
		{"default", 2 * time.Millisecond, 0, "no reply within 2ms"},
		{"per request", time.Hour, 3 * time.Millisecond, "no reply within 3ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request("p")
			req.Timeout = tc.timeout
			_, err := Timeout(tc.def)(slow).Generate(context.Background(), req)
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want *llm.Error", err)
			}
			if err.Error() != tc.want || le.Provider != "" || !le.Retryable || !llm.IsRetryable(err) {
				t.Errorf("err = %q (%+v), want %q, retryable", err, le, tc.want)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Error("error does not wrap context.DeadlineExceeded")
			}
		})
	}
}

func TestTimeoutCallerDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
	defer cancel()
	_, err := Timeout(time.Hour)(slow).Generate(ctx, request("p"))
	var le *llm.Error
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &le) {
		t.Errorf("err = %v, want the caller's context.DeadlineExceeded unchanged", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := Timeout(time.Hour)(slow).Generate(ctx, request("p")); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestTimeoutDeadlines(t *testing.T) {
	var deadline time.Time
	var has bool
	next := llm.ClientFunc(func(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
		deadline, has = ctx.Deadline()
		return okResp("fast"), nil
	})
	resp, err := Timeout(0)(next).Generate(context.Background(), request("p"))
	if err != nil || resp.Text != "fast" || has {
		t.Errorf("no timeout: resp = %v, err = %v, deadline = %v", resp, err, has)
	}
	before := time.Now()
	if _, err := Timeout(time.Minute)(next).Generate(context.Background(), request("p")); err != nil || !has {
		t.Fatalf("err = %v, deadline = %v", err, has)
	}
	if d := deadline.Sub(before); d < 59*time.Second || d > 61*time.Second {
		t.Errorf("deadline in %v, want about 1m", d)
	}
	req := request("p")
	req.Timeout = 5 * time.Second
	before = time.Now()
	Timeout(time.Minute)(next).Generate(context.Background(), req)
	if d := deadline.Sub(before); d < 4*time.Second || d > 6*time.Second {
		t.Errorf("deadline in %v, want about 5s (req.Timeout)", d)
	}
}
