package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// refusing fails its first calls as a provider on this machine that is
// not running does, then passes them on.
type refusing struct {
	next  llm.Client
	fails atomic.Int32
}

func (c *refusing) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if c.fails.Add(-1) >= 0 {
		return nil, &llm.Error{Provider: "openai", Message: `Post "http://127.0.0.1:8080/v1/chat/completions": dial tcp 127.0.0.1:8080: connect: connection refused`, Retryable: true}
	}
	return c.next.Generate(ctx, req)
}

// TestRunRetriesInTheProgressStream: a pipeline run whose call is retried
// has retry messages in its progress stream, as documented (a RunRetry:
// the attempt about to be made of the most, the pause, the failure in
// words), then one saying the call succeeded; the failure names a local
// server's address only to a client on this machine.
func TestRunRetriesInTheProgressStream(t *testing.T) {
	hs := newHarness(t, options{workers: 1, client: func(next llm.Client) llm.Client {
		c := &refusing{next: next}
		c.fails.Store(2)
		return middleware.Retry(middleware.RetryConfig{MaxRetries: 3, Base: 2 * time.Second, Sleep: func(context.Context, time.Duration) error { return nil }})(c)
	}})
	run := hs.succeeded("spark", map[string]any{"topic": "urban farming"})
	if hs.doc.Components.Schemas["RunRetry"] == nil {
		t.Fatal("the API description has no RunRetry")
	}
	schema := hs.doc.Components.Schemas["Message"].Value
	for _, c := range []struct {
		client, remote string
		local          bool
	}{{"this machine", "127.0.0.1:40000", true}, {"elsewhere", "203.0.113.7:40000", false}} {
		t.Run(c.client, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/api/runs/"+run.RunID+"/events", nil).WithContext(context.Background())
			req.Host, req.RemoteAddr = "127.0.0.1", c.remote
			w := httptest.NewRecorder()
			hs.srv.Handler().ServeHTTP(w, req)
			if strings.Contains(w.Body.String(), "127.0.0.1") != c.local {
				t.Errorf("the stream to a client %s shows the address: %v", c.client, !c.local)
			}
			var retries []api.RunRetry
			var events []string
			sc := bufio.NewScanner(w.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "event: ") {
					events = append(events, strings.TrimPrefix(line, "event: "))
				}
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				var m api.Message
				var v any
				if err := json.Unmarshal([]byte(data), &m); err != nil || json.Unmarshal([]byte(data), &v) != nil {
					t.Fatalf("data %s: %v", data, err)
				}
				if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
					t.Fatalf("message %s does not match the documented Message: %v", data, err)
				}
				if m.Type != madspark.EventRetry {
					continue
				}
				var r api.RunRetry
				if err := json.Unmarshal(m.Data, &r); err != nil {
					t.Fatalf("retry data %s: %v", m.Data, err)
				}
				if strings.Contains(string(m.Data), `"error"`) {
					t.Errorf("the retry message shows the raw error: %s", m.Data)
				}
				retries = append(retries, r)
			}
			if len(retries) != 3 {
				t.Fatalf("retry messages %+v among %v, want 3", retries, events)
			}
			for i, r := range retries[:2] {
				if r.Attempt != i+2 || r.MaxAttempts != 4 || r.DelayMS != int64(2000<<i) || r.Ended != "" || r.Call != retries[0].Call || r.Agent == "" {
					t.Errorf("retry %d = %+v", i, r)
				}
				want := "cannot reach madspark's model server: connection refused"
				if r.Failure == nil || r.Failure.Kind != "network" || !strings.HasPrefix(r.Failure.Message, want) || r.Failure.Advice != "is the server running?" {
					t.Errorf("retry %d failure = %+v, want %q", i, r.Failure, want)
				}
			}
			if end := retries[2]; end.Ended != madspark.RetrySucceeded || end.Attempt != 3 || end.Failure != nil || end.Call != retries[0].Call {
				t.Errorf("the call's end = %+v", end)
			}
		})
	}
}
