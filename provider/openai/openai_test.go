package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// testKey is the API key the tests use; it must never show in an error.
const testKey = "sk-test-SECRET-0123456789abcdef"

func newClient(t *testing.T, srv *openaitest.Server, cfg openai.Config) *openai.Client {
	t.Helper()
	if cfg.BaseURL == "" {
		cfg.BaseURL = srv.URL
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	return openai.New(cfg)
}

func userReq(prompt string) *llm.Request {
	return &llm.Request{
		Agent:       "test",
		System:      "be brief",
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: prompt}},
		Temperature: 0.3,
	}
}

// llmError asserts that err is an *llm.Error and returns it.
func llmError(t *testing.T, err error) *llm.Error {
	t.Helper()
	if err == nil {
		t.Fatal("Generate succeeded; want an error")
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *llm.Error", err, err)
	}
	return e
}

func TestPlainReply(t *testing.T) {
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Content: "Hello there.", PromptTokens: 12, CompletionTokens: 3}
	})
	c := newClient(t, srv, openai.Config{Name: "ollama", Model: "llama3.2"})
	req := &llm.Request{
		System: "be brief",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "hi"},
			{Role: llm.RoleAssistant, Content: "hello"},
			{Role: llm.RoleUser, Content: "again"},
		},
		Temperature: 0.7,
		MaxTokens:   256,
		Input:       struct{ Secret string }{"not sent"},
	}
	resp, err := c.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Text: "Hello there.", Provider: "ollama", Model: "llama3.2", FinishReason: "stop",
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 12, OutputTokens: 3},
	}
	if !reflect.DeepEqual(*resp, want) {
		t.Errorf("response = %+v, want %+v", *resp, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Model != "llama3.2" || got.Stream || got.ResponseFormat != nil {
		t.Errorf("model %q stream %v response_format %+v", got.Model, got.Stream, got.ResponseFormat)
	}
	var roles []string
	for _, m := range got.Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	if w := "system:be brief user:hi assistant:hello user:again"; strings.Join(roles, " ") != w {
		t.Errorf("messages = %q, want %q", roles, w)
	}
	if got.Temperature == nil || *got.Temperature != 0.7 {
		t.Errorf("temperature = %v, want 0.7", got.Temperature)
	}
	// Not api.openai.com: max_tokens, which every compatible server honours.
	if got.MaxTokens == nil || *got.MaxTokens != 256 || got.MaxCompletionTokens != nil {
		t.Errorf("max_tokens = %v, max_completion_tokens = %v; want 256 and none", got.MaxTokens, got.MaxCompletionTokens)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer "+testKey {
		t.Errorf("Authorization = %q", h)
	}
	if bytes.Contains(got.Body, []byte("not sent")) {
		t.Errorf("Request.Input was sent: %s", got.Body)
	}
}

func TestDefaults(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	// No key: local servers need none, and a placeholder is sent.
	c := openai.New(openai.Config{BaseURL: srv.URL})
	resp, err := c.Generate(context.Background(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "openai" || resp.Model != openai.DefaultModel || resp.Text != "ok" {
		t.Errorf("response = %+v", resp)
	}
	got := srv.Requests()[0]
	if got.Model != openai.DefaultModel || got.MaxTokens != nil || got.MaxCompletionTokens != nil {
		t.Errorf("request = %+v", got)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer none" {
		t.Errorf("Authorization = %q", h)
	}
}

func TestEnvironmentIgnored(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	c := openai.New(openai.Config{BaseURL: srv.URL})
	if _, err := c.Generate(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer none" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("environment leaked into the request: %v", h)
	}
}

// rewriteTransport sends every request to target, whatever its URL says.
type rewriteTransport struct{ target *url.URL }

func (rt rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rt.target.Scheme, rt.target.Host, ""
	return http.DefaultTransport.RoundTrip(r)
}

func TestMaxCompletionTokensForOpenAI(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	target, _ := url.Parse(srv.URL)
	c := openai.New(openai.Config{
		APIKey:     testKey,
		HTTPClient: &http.Client{Transport: rewriteTransport{target}},
	})
	req := userReq("hi")
	req.MaxTokens = 100
	if _, err := c.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if got.MaxCompletionTokens == nil || *got.MaxCompletionTokens != 100 || got.MaxTokens != nil {
		t.Errorf("max_completion_tokens = %v, max_tokens = %v; want 100 and none", got.MaxCompletionTokens, got.MaxTokens)
	}
}

func TestStreaming(t *testing.T) {
	chunks := []string{"The ", "quick", " brown ", "fox."}
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Chunks: chunks, PromptTokens: 20, CompletionTokens: 4, Model: "gpt-4o-mini-2024-07-18"}
	})
	c := newClient(t, srv, openai.Config{})
	var deltas []string
	req := userReq("fox?")
	req.OnDelta = func(d string) { deltas = append(deltas, d) }
	resp, err := c.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "|") != strings.Join(chunks, "|") {
		t.Errorf("deltas = %q, want %q", deltas, chunks)
	}
	want := llm.Response{
		Text: "The quick brown fox.", Provider: "openai", Model: "gpt-4o-mini-2024-07-18", FinishReason: "stop",
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 20, OutputTokens: 4},
	}
	if !reflect.DeepEqual(*resp, want) {
		t.Errorf("response = %+v, want %+v", *resp, want)
	}
	got := srv.Requests()[0]
	if !got.Stream || got.StreamOptions == nil || !got.StreamOptions.IncludeUsage {
		t.Errorf("stream = %v, stream_options = %+v", got.Stream, got.StreamOptions)
	}
}

func TestStreamingFinishReasonLength(t *testing.T) {
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Content: `{"ideas": ["a", "b`, FinishReason: "length"}
	})
	c := newClient(t, srv, openai.Config{})
	req := userReq("json")
	req.OnDelta = func(string) {}
	resp, err := c.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"ideas": ["a", "b` || resp.FinishReason != "length" {
		t.Errorf("response = %+v", resp)
	}
}

const testSchema = `{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":10},"why":{"type":"string"}},"required":["score"]}`

func TestSchema(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
				return openaitest.Reply{Content: `{"score": 7, "why": "fine"}`}
			})
			c := newClient(t, srv, openai.Config{})
			req := userReq("rate it")
			req.Schema = &llm.Schema{Name: "evaluation", JSON: []byte(testSchema)}
			if stream {
				req.OnDelta = func(string) {}
			}
			resp, err := c.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != `{"score": 7, "why": "fine"}` {
				t.Errorf("text = %q", resp.Text)
			}
			rf := srv.Requests()[0].ResponseFormat
			if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil {
				t.Fatalf("response_format = %+v", rf)
			}
			js := rf.JSONSchema
			if js.Name != "evaluation" || js.Strict == nil || *js.Strict {
				t.Errorf("json_schema name %q strict %v; want evaluation, false", js.Name, js.Strict)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, js.Schema); err != nil {
				t.Fatal(err)
			}
			if compact.String() != testSchema {
				t.Errorf("schema = %s, want %s", compact.String(), testSchema)
			}
		})
	}
}

func TestSchemaInvalid(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	c := newClient(t, srv, openai.Config{})
	req := userReq("x")
	req.Schema = &llm.Schema{Name: "bad", JSON: []byte(`{"type":`)}
	e := llmError(t, func() error { _, err := c.Generate(context.Background(), req); return err }())
	if e.Retryable || len(srv.Requests()) != 0 {
		t.Errorf("error %v retryable %v, %d requests", e, e.Retryable, len(srv.Requests()))
	}
}

func TestEmptyReplies(t *testing.T) {
	t.Run("no choices", func(t *testing.T) {
		srv := openaitest.NewServer(t, nil)
		srv.Inject(openaitest.Fault{Status: 200, Body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`})
		c := newClient(t, srv, openai.Config{})
		_, err := c.Generate(context.Background(), userReq("x"))
		if e := llmError(t, err); !strings.Contains(e.Message, "no choices") {
			t.Errorf("error = %v", e)
		}
	})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("structured stream=%v", stream), func(t *testing.T) {
			srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply { return openaitest.Reply{FinishReason: "length"} })
			c := newClient(t, srv, openai.Config{})
			req := userReq("x")
			req.Schema = &llm.Schema{Name: "s", JSON: []byte(testSchema)}
			if stream {
				req.OnDelta = func(string) {}
			}
			_, err := c.Generate(context.Background(), req)
			if e := llmError(t, err); !strings.Contains(e.Message, "empty reply") || !strings.Contains(e.Message, "length") {
				t.Errorf("error = %v", e)
			}
		})
	}
	t.Run("plain", func(t *testing.T) {
		srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply { return openaitest.Reply{} })
		c := newClient(t, srv, openai.Config{})
		resp, err := c.Generate(context.Background(), userReq("x"))
		if err != nil || resp.Text != "" {
			t.Errorf("resp %+v, err %v; want empty text, no error", resp, err)
		}
	})
}

func TestVerbatimText(t *testing.T) {
	replies := map[string]string{
		"fenced":    "```json\n{\"score\": 7}\n```",
		"prose":     "Sure! Here is the JSON you asked for:\n{\"score\": 7}\nHope this helps.",
		"truncated": `{"ideas": [{"title": "Solar bike", "desc`,
		"spaces":    "  \n{\"a\":1}\n\n  ",
	}
	for name, content := range replies {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply {
					return openaitest.Reply{Content: content}
				})
				c := newClient(t, srv, openai.Config{})
				req := userReq("json please")
				req.Schema = &llm.Schema{Name: "s", JSON: []byte(testSchema)}
				if stream {
					req.OnDelta = func(string) {}
				}
				resp, err := c.Generate(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != content {
					t.Errorf("text = %q, want %q", resp.Text, content)
				}
			})
		}
	}
}

func TestModelOverride(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	c := newClient(t, srv, openai.Config{Model: "default-model"})
	req := userReq("hi")
	req.Model = "qwen2.5:7b"
	resp, err := c.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Model; got != "qwen2.5:7b" {
		t.Errorf("requested model %q", got)
	}
	if resp.Model != "qwen2.5:7b" {
		t.Errorf("response model %q", resp.Model)
	}
	if _, err := c.Generate(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[1].Model; got != "default-model" {
		t.Errorf("requested model %q, want the default", got)
	}
}

func TestHTTPErrors(t *testing.T) {
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		fault      openaitest.Fault
		status     int
		retryable  bool
		retryAfter [2]time.Duration // range
		message    string
	}{
		{"429 seconds", openaitest.Fault{Status: 429, RetryAfter: "3", Message: "Rate limit reached for gpt-4o-mini"},
			429, true, [2]time.Duration{3 * time.Second, 3 * time.Second}, "Rate limit reached for gpt-4o-mini"},
		{"429 http-date", openaitest.Fault{Status: 429, RetryAfter: date},
			429, true, [2]time.Duration{25 * time.Second, 31 * time.Second}, "injected HTTP 429"},
		{"429 retry-after-ms", openaitest.Fault{Status: 429, RetryAfter: "20", Header: http.Header{"retry-after-ms": {"1500"}}},
			429, true, [2]time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}, ""},
		{"500", openaitest.Fault{Status: 500, Message: "The server had an error\nwhile processing your request."},
			500, true, [2]time.Duration{}, "The server had an error while processing your request."},
		{"503 llama-server", openaitest.Fault{Status: 503, Body: `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`},
			503, true, [2]time.Duration{}, "Loading model"},
		{"502 plain text", openaitest.Fault{Status: 502, Body: "<html>Bad Gateway</html>"},
			502, true, [2]time.Duration{}, "<html>Bad Gateway</html>"},
		{"400", openaitest.Fault{Status: 400, Message: "Invalid schema for response_format 'evaluation'."},
			400, false, [2]time.Duration{}, "Invalid schema for response_format 'evaluation'."},
		{"404", openaitest.Fault{Status: 404, Message: `model "nope" not found, try pulling it first`},
			404, false, [2]time.Duration{}, `model "nope" not found`},
		{"409 x-should-retry false", openaitest.Fault{Status: 409, Header: http.Header{"x-should-retry": {"false"}}},
			409, false, [2]time.Duration{}, ""},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				srv := openaitest.NewServer(t, nil)
				srv.Inject(tt.fault)
				c := newClient(t, srv, openai.Config{Name: "ollama"})
				req := userReq("hi")
				if stream {
					req.OnDelta = func(string) { t.Error("OnDelta called") }
				}
				_, err := c.Generate(context.Background(), req)
				e := llmError(t, err)
				if e.Provider != "ollama" || e.Status != tt.status || e.Retryable != tt.retryable {
					t.Errorf("error = %+v; want status %d retryable %v", e, tt.status, tt.retryable)
				}
				if llm.IsRetryable(err) != tt.retryable {
					t.Errorf("llm.IsRetryable = %v", !tt.retryable)
				}
				if e.RetryAfter < tt.retryAfter[0] || e.RetryAfter > tt.retryAfter[1] {
					t.Errorf("RetryAfter = %v, want in %v", e.RetryAfter, tt.retryAfter)
				}
				if !strings.Contains(e.Message, tt.message) || strings.Contains(e.Message, "\n") {
					t.Errorf("message = %q, want one line containing %q", e.Message, tt.message)
				}
				// No retries inside the SDK: exactly one request reached the server.
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d requests reached the server, want 1", n)
				}
			})
		}
	}
}

func TestBrokenConnections(t *testing.T) {
	tests := []struct {
		name   string
		fault  openaitest.Fault
		stream bool
		deltas int
	}{
		{"stream cut mid-way", openaitest.Fault{TruncateStreamAfter: 2}, true, 2},
		{"stream cut before finish", openaitest.Fault{TruncateStreamAfter: 99}, true, 4},
		{"body cut", openaitest.Fault{TruncateStreamAfter: 1}, false, 0},
		{"dropped", openaitest.Fault{Drop: true}, false, 0},
		{"dropped stream", openaitest.Fault{Drop: true}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply {
				return openaitest.Reply{Chunks: []string{"a", "b", "c", "d"}, Content: "abcd"}
			})
			srv.Inject(tt.fault)
			c := newClient(t, srv, openai.Config{})
			req := userReq("hi")
			var deltas []string
			if tt.stream {
				req.OnDelta = func(d string) { deltas = append(deltas, d) }
			}
			_, err := c.Generate(context.Background(), req)
			e := llmError(t, err)
			if !e.Retryable || e.Status != 0 || !llm.IsRetryable(err) {
				t.Errorf("error = %+v; want retryable, status 0", e)
			}
			if len(deltas) != tt.deltas {
				t.Errorf("deltas = %q, want %d", deltas, tt.deltas)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests reached the server, want 1", n)
			}
			if tt.stream && tt.deltas > 0 && !strings.Contains(e.Message, "stream ended early") {
				t.Errorf("message = %q", e.Message)
			}
		})
	}
}

func TestStreamOddities(t *testing.T) {
	chunk := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}` + "\n\n"
	tests := []struct {
		name, body, message string
		deltas              int
	}{
		// The body ends cleanly but without a finish_reason or [DONE].
		{"clean end", chunk, "stream ended early", 1},
		{"done without finish", chunk + "data: [DONE]\n\n", "stream ended early", 1},
		{"error event", chunk + `data: {"error":{"message":"model crashed","type":"server_error"}}` + "\n\n", "error in stream: model crashed", 1},
		{"empty", "", "stream ended early", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, nil)
			srv.Inject(openaitest.Fault{Status: 200, Body: tt.body})
			c := newClient(t, srv, openai.Config{})
			req := userReq("hi")
			deltas := 0
			req.OnDelta = func(string) { deltas++ }
			_, err := c.Generate(context.Background(), req)
			e := llmError(t, err)
			if !e.Retryable || !strings.Contains(e.Message, tt.message) || deltas != tt.deltas {
				t.Errorf("error = %+v after %d deltas; want retryable %q after %d", e, deltas, tt.message, tt.deltas)
			}
		})
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	faults := []openaitest.Fault{
		{Status: 401, Message: "Incorrect API key provided: " + testKey + ". You can find your API key at https://platform.openai.com/account/api-keys."},
		{Status: 401, Message: "Incorrect API key provided: sk-test-********************cdef."},
		{Status: 500, Body: "upstream said: Authorization: Bearer " + testKey},
		{Status: 400, Body: `{"error":"bad key ` + testKey + `"}`},
		{Drop: true},
		{TruncateStreamAfter: 1},
	}
	for i, f := range faults {
		for _, stream := range []bool{false, true} {
			srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply { return openaitest.Reply{Content: "a b c"} })
			srv.Inject(f)
			c := newClient(t, srv, openai.Config{})
			req := userReq("hi")
			if stream {
				req.OnDelta = func(string) {}
			}
			_, err := c.Generate(context.Background(), req)
			if err == nil {
				t.Fatalf("fault %d: no error", i)
			}
			for e := err; e != nil; e = errors.Unwrap(e) {
				for _, s := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
					if strings.Contains(s, testKey) || strings.Contains(s, "SECRET") {
						t.Errorf("fault %d stream %v: key in error %T: %s", i, stream, e, s)
					}
				}
			}
		}
	}
	// Transport errors too.
	c := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: testKey})
	_, err := c.Generate(context.Background(), userReq("hi"))
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("error = %v", err)
	}
}

func TestFaultsInOrderThenReplies(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	srv.Inject(openaitest.Fault{Status: 500}, openaitest.Fault{Status: 429}, openaitest.Fault{Delay: time.Millisecond})
	c := newClient(t, srv, openai.Config{})
	var statuses []int
	for range 4 {
		_, err := c.Generate(context.Background(), userReq("hi"))
		var e *llm.Error
		if errors.As(err, &e) {
			statuses = append(statuses, e.Status)
		} else if err == nil {
			statuses = append(statuses, 200)
		}
	}
	if fmt.Sprint(statuses) != "[500 429 200 200]" {
		t.Errorf("statuses = %v", statuses)
	}
}

func TestReplyFault(t *testing.T) {
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if strings.Contains(req.Prompt(), "fail") {
			return openaitest.Reply{Fault: &openaitest.Fault{Status: 503}}
		}
		return openaitest.Reply{Content: "fine"}
	})
	c := newClient(t, srv, openai.Config{})
	if _, err := c.Generate(context.Background(), userReq("please fail")); llmError(t, err).Status != 503 {
		t.Errorf("error = %v", err)
	}
	if resp, err := c.Generate(context.Background(), userReq("ok")); err != nil || resp.Text != "fine" {
		t.Errorf("resp %+v err %v", resp, err)
	}
}

func TestConcurrent(t *testing.T) {
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Content: "echo " + req.Prompt(), PromptTokens: 1, CompletionTokens: 2}
	})
	c := newClient(t, srv, openai.Config{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			req := userReq(fmt.Sprint(i))
			if i%2 == 0 {
				req.OnDelta = func(string) {}
			}
			resp, err := c.Generate(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			if resp.Text != "echo "+fmt.Sprint(i) {
				t.Errorf("text = %q", resp.Text)
			}
		})
	}
	wg.Wait()
	if n := len(srv.Requests()); n != 16 {
		t.Errorf("%d requests", n)
	}
}

// TestStructuredModes: how a schema reaches the server in each mode.
func TestStructuredModes(t *testing.T) {
	schema := &llm.Schema{Name: "verdict", JSON: []byte(`{"type":"object"}`), Hint: `{"score": number 0-10}`}
	for _, tc := range []struct {
		mode                 string
		wantFormat, wantHint bool
	}{
		{"", true, true}, // not OpenAI's own API: both
		{openai.StructuredNative, true, false},
		{openai.StructuredPrompt, false, true},
		{openai.StructuredBoth, true, true},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply {
				return openaitest.Reply{Content: `{"score": 7}`}
			})
			c := newClient(t, srv, openai.Config{Structured: tc.mode})
			req := &llm.Request{System: "You judge.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "judge"}}, Schema: schema}
			if _, err := c.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := srv.Requests()[0]
			if (got.ResponseFormat != nil) != tc.wantFormat {
				t.Errorf("response_format = %+v, want sent: %v", got.ResponseFormat, tc.wantFormat)
			}
			if strings.Contains(got.System(), schema.Hint) != tc.wantHint || !strings.HasPrefix(got.System(), "You judge.") {
				t.Errorf("system = %q, want hint: %v", got.System(), tc.wantHint)
			}
		})
	}
}

// TestStructuredFallback: a server that refuses response_format (as some
// local servers' builds do) gets the request again with the schema in the
// prompt, and every later one that way; one that takes it keeps getting
// it; errors that are not about the format are not retried.
func TestStructuredFallback(t *testing.T) {
	schema := &llm.Schema{Name: "verdict", JSON: []byte(`{"type":"object"}`), Hint: `{"score": number 0-10}`}
	req := func() *llm.Request {
		return &llm.Request{System: "You judge.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "judge"}}, Schema: schema}
	}
	for _, tc := range []struct {
		name       string
		refusal    string
		status     int
		wantCalls  int
		wantErr    bool
		wantNative bool
	}{
		{name: "llama-server without grammar support", status: 400, refusal: "response_format type json_schema is not supported", wantCalls: 3},
		{name: "a server without structured output", status: 422, refusal: "Unsupported value: 'response_format.type'", wantCalls: 3},
		{name: "another bad request", status: 400, refusal: "messages: too long", wantCalls: 1, wantErr: true, wantNative: true},
		{name: "a rate limit", status: 429, refusal: "response_format requests are limited", wantCalls: 1, wantErr: true, wantNative: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, func(r *openaitest.ChatRequest) openaitest.Reply {
				if r.ResponseFormat != nil {
					return openaitest.Reply{Fault: &openaitest.Fault{Status: tc.status, Message: tc.refusal}}
				}
				return openaitest.Reply{Content: `{"score": 7}`}
			})
			var told []string
			c := newClient(t, srv, openai.Config{Structured: openai.StructuredBoth, OnFallback: func(reason string) { told = append(told, reason) }})
			_, err := c.Generate(context.Background(), req())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				if _, err := c.Generate(context.Background(), req()); err != nil {
					t.Fatal(err)
				}
			}
			reqs := srv.Requests()
			if len(reqs) != tc.wantCalls {
				t.Fatalf("%d requests, want %d", len(reqs), tc.wantCalls)
			}
			if tc.wantNative {
				if c.StructuredMode() != openai.StructuredBoth || len(told) != 0 {
					t.Fatalf("mode %s, told %v: want both, nothing told", c.StructuredMode(), told)
				}
				return
			}
			if c.StructuredMode() != openai.StructuredPrompt || len(told) != 1 || !strings.Contains(told[0], tc.refusal[:10]) {
				t.Fatalf("mode %s, told %v: want prompt, told once why", c.StructuredMode(), told)
			}
			for i, r := range reqs[1:] {
				if r.ResponseFormat != nil || !strings.Contains(r.System(), schema.Hint) {
					t.Errorf("request %d after the refusal: response_format %+v, system %q", i+2, r.ResponseFormat, r.System())
				}
			}
		})
	}
}

// TestSamplingSettings: top_p, stop sequences, the seed and a strict
// schema reach the wire, streamed or not; left unset, none is sent.
func TestSamplingSettings(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := openaitest.NewServer(t, nil)
			c := newClient(t, srv, openai.Config{})
			topP, seed := 0.25, int64(-7)
			req := userReq("hi")
			req.TopP, req.Stop, req.Seed = &topP, []string{"END", "\n\n"}, &seed
			req.Schema = &llm.Schema{Name: "answer", JSON: []byte(testSchema), Strict: true}
			if stream {
				req.OnDelta = func(string) {}
			}
			if _, err := c.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := srv.Requests()[0]
			if got.TopP == nil || *got.TopP != 0.25 || fmt.Sprint(got.Stop) != "[END \n\n]" || got.Seed == nil || *got.Seed != -7 {
				t.Errorf("top_p %v, stop %q, seed %v", got.TopP, got.Stop, got.Seed)
			}
			if js := got.ResponseFormat.JSONSchema; js.Strict == nil || !*js.Strict {
				t.Errorf("strict = %v, want true", js.Strict)
			}
			if _, err := c.Generate(context.Background(), userReq("hi")); err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{`"top_p"`, `"stop"`, `"seed"`} {
				if bytes.Contains(srv.Requests()[1].Body, []byte(field)) {
					t.Errorf("%s sent when unset: %s", field, srv.Requests()[1].Body)
				}
			}
		})
	}
}
