package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/madspark/madspark/llm"
)

// fakeModel streams Chunks with Delay between them, or fails.
type fakeModel struct {
	id        string
	chunks    []string
	delay     time.Duration
	failAt    int // fail before chunk failAt (1-based); 0 never
	err       error
	mu        sync.Mutex
	cancelled bool
	prompts   []Prompt
}

func (f *fakeModel) ID() string { return f.id }

func (f *fakeModel) Complete(ctx context.Context, p Prompt, onDelta func(string)) (*Completion, error) {
	f.mu.Lock()
	f.prompts = append(f.prompts, p)
	f.mu.Unlock()
	var b strings.Builder
	for i, c := range f.chunks {
		if f.failAt == i+1 {
			return nil, f.err
		}
		select {
		case <-ctx.Done():
			f.mu.Lock()
			f.cancelled = true
			f.mu.Unlock()
			return nil, ctx.Err()
		case <-time.After(f.delay):
		}
		b.WriteString(c)
		if onDelta != nil {
			onDelta(c)
		}
	}
	return &Completion{Text: b.String(), Usage: llm.Usage{LLMCalls: 4, InputTokens: 30, OutputTokens: 12, CostUSD: 0.01}, RunID: "run-1"}, nil
}

func newTestServer(t *testing.T, token string, models ...Model) *httptest.Server {
	t.Helper()
	s, err := New(Config{Models: models, Token: token, Version: "test", MaxBodyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

const hello = `{"model":"madspark-debate","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":[{"type":"text","text":"Explain "},{"type":"text","text":"Raft"}]}]}`

func TestHealthAndModels(t *testing.T) {
	srv := newTestServer(t, "", &fakeModel{id: "madspark-debate"}, &fakeModel{id: "madspark-direct"})
	resp, err := http.Get(srv.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatal(err)
	}
	var h map[string]any
	json.NewDecoder(resp.Body).Decode(&h)
	if h["status"] != "ok" || h["version"] != "test" || len(h["models"].([]any)) != 2 {
		t.Fatalf("health %v", h)
	}
	resp, _ = http.Get(srv.URL + "/v1/models")
	var l struct {
		Object string `json:"object"`
		Data   []struct{ ID, Object, OwnedBy string }
	}
	json.NewDecoder(resp.Body).Decode(&l)
	if l.Object != "list" || len(l.Data) != 2 || l.Data[0].ID != "madspark-debate" || l.Data[0].Object != "model" {
		t.Fatalf("models %+v", l)
	}
}

func TestCompletion(t *testing.T) {
	m := &fakeModel{id: "madspark-debate", chunks: []string{"Raft ", "elects ", "a leader."}}
	srv := newTestServer(t, "", m)
	resp, body := post(t, srv.URL, "", hello)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var c map[string]any
	json.Unmarshal([]byte(body), &c)
	choice := c["choices"].([]any)[0].(map[string]any)
	u := c["usage"].(map[string]any)
	if !strings.HasPrefix(c["id"].(string), "chatcmpl-") || c["object"] != "chat.completion" || c["model"] != "madspark-debate" ||
		choice["message"].(map[string]any)["content"] != "Raft elects a leader." || choice["finish_reason"] != "stop" ||
		u["total_tokens"] != 42.0 || c["madspark"].(map[string]any)["run_id"] != "run-1" {
		t.Fatalf("completion %s", body)
	}
	p := m.prompts[0]
	if p.System != "be brief" || len(p.Messages) != 3 || p.Query() != "Explain Raft" || p.Messages[1].Role != llm.RoleAssistant {
		t.Fatalf("prompt %+v", p)
	}
}

// readSSE parses an event stream as a client does.
func readSSE(t *testing.T, r io.Reader) (events []map[string]any, done bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		if done {
			t.Fatal("data after [DONE]")
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad chunk %q", data)
		}
		events = append(events, ev)
	}
	return events, done
}

func TestStreaming(t *testing.T) {
	m := &fakeModel{id: "madspark-debate", chunks: []string{"Raft ", "elects ", "a leader."}}
	srv := newTestServer(t, "", m)
	for _, includeUsage := range []bool{false, true} {
		body := strings.Replace(hello, `{"model"`, fmt.Sprintf(`{"stream":true,"stream_options":{"include_usage":%v},"model"`, includeUsage), 1)
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%v %v", err, resp.Header)
		}
		events, done := readSSE(t, resp.Body)
		resp.Body.Close()
		if !done {
			t.Fatal("no [DONE]")
		}
		var text strings.Builder
		id := events[0]["id"]
		first := events[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		if first["role"] != "assistant" {
			t.Fatalf("first chunk %v", events[0])
		}
		finishes, usages := 0, 0
		for _, ev := range events {
			if ev["id"] != id || ev["object"] != "chat.completion.chunk" {
				t.Fatalf("chunk %v", ev)
			}
			if ev["usage"] != nil {
				usages++
				if len(ev["choices"].([]any)) != 0 {
					t.Fatal("usage chunk must have no choices")
				}
				continue
			}
			ch := ev["choices"].([]any)[0].(map[string]any)
			if s, ok := ch["delta"].(map[string]any)["content"].(string); ok {
				text.WriteString(s)
			}
			if ch["finish_reason"] == "stop" {
				finishes++
			}
		}
		wantUsage := 0
		if includeUsage {
			wantUsage = 1
		}
		if text.String() != "Raft elects a leader." || finishes != 1 || usages != wantUsage {
			t.Fatalf("text %q, finishes %d, usages %d", text.String(), finishes, usages)
		}
	}
}

// TestOfficialSDK is the proof that any OpenAI client works.
func TestOfficialSDK(t *testing.T) {
	srv := newTestServer(t, "secret-token", &fakeModel{id: "madspark-debate", chunks: []string{"Hello", ", ", "world"}})
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("secret-token"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := sdk.ChatCompletionNewParams{Model: "madspark-debate", Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Say hello")}}
	c, err := client.Chat.Completions.New(ctx, params)
	if err != nil || c.Choices[0].Message.Content != "Hello, world" || c.Usage.TotalTokens != 42 {
		t.Fatalf("%v %+v", err, c)
	}
	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc sdk.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != "Hello, world" || acc.Usage.TotalTokens != 42 {
		t.Fatalf("stream: %v %+v", err, acc)
	}
	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "madspark-debate" {
		t.Fatalf("models %v %+v", err, models)
	}
	bad := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err = bad.Chat.Completions.New(ctx, params)
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	srv := newTestServer(t, "", &fakeModel{id: "madspark-debate", chunks: []string{"x"}})
	for _, tt := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi"}],"temperture":1}`, 400, "unknown field \"temperture\""},
		{`{"messages":[{"role":"user","content":"hi"}]}`, 400, "model is required"},
		{`{"model":"madspark-debate","messages":[]}`, 400, "messages must not be empty"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi"}],"temperature":3}`, 400, "temperature"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi"}],"n":2}`, 400, "n=1"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "only text"},
		{`{"model":"madspark-debate","messages":[{"role":"tool","content":"x"}]}`, 400, "role \"tool\""},
		{`{"model":"madspark-debate","messages":[{"role":"system","content":"x"}]}`, 400, "user message"},
		{`{"model":"gpt-4","messages":[{"role":"user","content":"hi"}]}`, 404, "does not exist"},
		{`not json`, 400, "not valid JSON"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "larger than"},
	} {
		resp, body := post(t, srv.URL, "", tt.body)
		var e struct {
			Error struct{ Message, Type string }
		}
		json.Unmarshal([]byte(body), &e)
		if resp.StatusCode != tt.status || !strings.Contains(e.Error.Message, tt.want) || e.Error.Type == "" {
			t.Errorf("%.60s: %d %s; want %d and %q", tt.body, resp.StatusCode, body, tt.status, tt.want)
		}
	}
}

func TestAuthAndBinding(t *testing.T) {
	srv := newTestServer(t, "s3cr3t-Z9", &fakeModel{id: "madspark-debate", chunks: []string{"x"}})
	if resp, _ := post(t, srv.URL, "", hello); resp.StatusCode != 401 {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	if resp, body := post(t, srv.URL, "nope", hello); resp.StatusCode != 401 || strings.Contains(body, "s3cr3t") {
		t.Fatalf("wrong token: %d %s", resp.StatusCode, body)
	}
	if resp, _ := post(t, srv.URL, "s3cr3t-Z9", hello); resp.StatusCode != 200 {
		t.Fatalf("right token: %d", resp.StatusCode)
	}
	if resp, _ := http.Get(srv.URL + "/health"); resp.StatusCode != 200 {
		t.Fatal("/health must be open")
	}
	if _, err := New(Config{Addr: "0.0.0.0:8080"}); err == nil || !strings.Contains(err.Error(), "MADSPARK_API_TOKEN") {
		t.Fatalf("public bind without token: %v", err)
	}
	if _, err := New(Config{Addr: "0.0.0.0:8080", Token: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Models: []Model{&fakeModel{id: "a"}, &fakeModel{id: "a"}}}); err == nil {
		t.Fatal("duplicate model accepted")
	}
}

func TestUpstreamErrors(t *testing.T) {
	up := &llm.Error{Provider: "openai", Status: 503, Message: "overloaded"}
	srv := newTestServer(t, "", &fakeModel{id: "madspark-debate", chunks: []string{"a", "b"}, failAt: 1, err: up},
		&fakeModel{id: "mid", chunks: []string{"a", "b", "c"}, failAt: 2, err: up},
		&fakeModel{id: "bad", chunks: []string{"a"}, failAt: 1, err: InvalidRequest(errors.New("query must not be empty"))})
	resp, body := post(t, srv.URL, "", hello)
	if resp.StatusCode != 502 || !strings.Contains(body, "overloaded") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, srv.URL, "", strings.Replace(hello, "madspark-debate", "bad", 1)); resp.StatusCode != 400 {
		t.Fatalf("invalid request from model: %d %s", resp.StatusCode, body)
	}
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(strings.Replace(hello, `"madspark-debate"`, `"mid","stream":true`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	events, done := readSSE(t, resp.Body)
	if done || events[len(events)-1]["error"] == nil {
		t.Fatalf("mid-stream failure: done=%v last=%v", done, events[len(events)-1])
	}
}

func TestClientDisconnectCancels(t *testing.T) {
	m := &fakeModel{id: "madspark-debate", chunks: []string{"a", "b", "c", "d", "e", "f"}, delay: 50 * time.Millisecond}
	srv := newTestServer(t, "", m)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(strings.Replace(hello, `{"model"`, `{"stream":true,"model"`, 1)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	br.ReadString('\n') // the role chunk
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		m.mu.Lock()
		c := m.cancelled
		m.mu.Unlock()
		if c {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the model's context was not cancelled when the client left")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestGracefulShutdownDrainsStreams(t *testing.T) {
	m := &fakeModel{id: "madspark-debate", chunks: []string{"a", "b", "c", "d"}, delay: 40 * time.Millisecond}
	s, err := New(Config{Models: []Model{m}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(strings.Replace(hello, `{"model"`, `{"stream":true,"model"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	cancel() // shut down while the stream is open
	events, done := readSSE(t, resp.Body)
	if !done || len(events) < 5 {
		t.Fatalf("stream cut by shutdown: done=%v, %d events", done, len(events))
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Fatal("still accepting connections after shutdown")
	}
}

func TestMetrics(t *testing.T) {
	srv := newTestServer(t, "", &fakeModel{id: "madspark-debate", chunks: []string{"x"}})
	post(t, srv.URL, "", hello)
	post(t, srv.URL, "", `{}`)
	resp, _ := http.Get(srv.URL + "/metrics")
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`madspark_http_requests_total{code="200",route="POST /v1/chat/completions"} 1`,
		`madspark_http_requests_total{code="400",route="POST /v1/chat/completions"} 1`,
		`madspark_llm_calls_total{kind="llm",model="madspark-debate"} 4`,
		`madspark_tokens_total{direction="input",model="madspark-debate"} 30`,
		`madspark_http_request_duration_seconds_bucket`,
	} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
}
