package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// fakeModel streams chunks, with delay before each, and can fail, block or
// panic on the way. It honours ctx and records what it saw.
type fakeModel struct {
	id     string
	chunks []string
	delay  time.Duration
	// err, when not nil, is returned before chunk failAt (0: before any).
	err    error
	failAt int
	// gate, when not nil, holds Complete before chunk gateAt until it is
	// closed or ctx is done; reached is closed when it gets there.
	gate    chan struct{}
	gateAt  int
	reached chan struct{}
	finish  string
	panics  bool

	mu        sync.Mutex
	prompts   []Prompt
	calls     int
	cancelled chan struct{} // closed when Complete stopped because ctx was done
	once      sync.Once
}

func newFake(id string, chunks ...string) *fakeModel {
	return &fakeModel{id: id, chunks: chunks, reached: make(chan struct{}), cancelled: make(chan struct{})}
}

var fakeUsage = llm.Usage{LLMCalls: 4, CachedCalls: 2, InputTokens: 30, OutputTokens: 12, CostUSD: 0.01, CachedInputTokens: 5, CachedOutputTokens: 3}

func (f *fakeModel) ID() string { return f.id }

func (f *fakeModel) Complete(ctx context.Context, p Prompt, out *Stream) (*Completion, error) {
	f.mu.Lock()
	f.prompts = append(f.prompts, p)
	f.calls++
	f.mu.Unlock()
	if f.panics {
		panic("fake model: boom")
	}
	stop := func() (*Completion, error) {
		f.once.Do(func() { close(f.cancelled) })
		return nil, ctx.Err()
	}
	var b strings.Builder
	for i := 0; i <= len(f.chunks); i++ {
		if f.err != nil && i == f.failAt {
			return nil, f.err
		}
		if f.gate != nil && i == f.gateAt {
			close(f.reached)
			select {
			case <-f.gate:
			case <-ctx.Done():
				return stop()
			}
		}
		if i == len(f.chunks) {
			break
		}
		if f.delay > 0 {
			select {
			case <-time.After(f.delay):
			case <-ctx.Done():
				return stop()
			}
		}
		b.WriteString(f.chunks[i])
		if out != nil {
			out.Text(f.chunks[i])
		}
	}
	return &Completion{Text: b.String(), FinishReason: f.finish, Usage: fakeUsage, RunID: "run-1"}, nil
}

func (f *fakeModel) lastPrompt() Prompt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prompts[len(f.prompts)-1]
}

func (f *fakeModel) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testServer is a Server behind httptest.
type testServer struct {
	*httptest.Server
	s    *Server
	reg  *prometheus.Registry
	logs *syncBuffer
}

func newTestServer(t *testing.T, token string, models ...Model) *testServer {
	t.Helper()
	ts := &testServer{reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	s, err := New(Config{Models: models, Token: token, Version: "test", MaxBodyBytes: 4096, Registry: ts.reg,
		Logger: slog.New(slog.NewJSONHandler(ts.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts.s = s
	ts.Server = httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// do sends a request and returns the response with its whole body.
func do(t *testing.T, method, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func post(t *testing.T, base, token, body string) (*http.Response, string) {
	t.Helper()
	return do(t, http.MethodPost, base+"/v1/chat/completions", token, body)
}

func jsonMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not a JSON object: %v: %q", err, s)
	}
	return m
}

// eventually waits, briefly, for cond: logs and metrics are written just
// after the response.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

const hello = `{"model":"madspark-debate","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"developer","content":"in English"},{"role":"user","content":[{"type":"text","text":"Explain "},{"type":"text","text":"Raft"}]}]}`

// streamed returns hello as a streaming request with more fields.
func streamed(model, extra string) string {
	return strings.Replace(hello, `{"model":"madspark-debate"`, `{"model":"`+model+`","stream":true`+extra, 1)
}

func TestHealthAndModels(t *testing.T) {
	srv := newTestServer(t, "", newFake("madspark-debate"), newFake("madspark-direct"))
	resp, body := do(t, http.MethodGet, srv.URL+"/health", "", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("health: %d %v", resp.StatusCode, resp.Header)
	}
	if h := jsonMap(t, body); h["status"] != "ok" || h["version"] != "test" || fmt.Sprint(h["models"]) != "[madspark-debate madspark-direct]" {
		t.Fatalf("health %s", body)
	}

	_, body = do(t, http.MethodGet, srv.URL+"/v1/models", "", "")
	l := jsonMap(t, body)
	data, _ := l["data"].([]any)
	if l["object"] != "list" || len(data) != 2 {
		t.Fatalf("models %s", body)
	}
	for i, id := range []string{"madspark-debate", "madspark-direct"} {
		m := data[i].(map[string]any)
		if m["id"] != id || m["object"] != "model" || m["owned_by"] != "madspark" || m["created"].(float64) < 1.7e9 || len(m) != 4 {
			t.Errorf("model %d: %v", i, m)
		}
	}
	if resp, body := do(t, http.MethodGet, srv.URL+"/v1/models/madspark-direct", "", ""); resp.StatusCode != 200 || jsonMap(t, body)["id"] != "madspark-direct" {
		t.Errorf("get model: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, http.MethodGet, srv.URL+"/v1/models/gpt-4o", "", ""); resp.StatusCode != 404 || !strings.Contains(body, `"code":"model_not_found"`) {
		t.Errorf("get unknown model: %d %s", resp.StatusCode, body)
	}

	empty := newTestServer(t, "")
	if _, body := do(t, http.MethodGet, empty.URL+"/health", "", ""); !strings.Contains(body, `"models":[]`) {
		t.Errorf("health without models: %s", body)
	}
	if _, body := do(t, http.MethodGet, empty.URL+"/v1/models", "", ""); !strings.Contains(body, `"data":[]`) {
		t.Errorf("no models: %s", body)
	}
}

func TestCompletion(t *testing.T) {
	m := newFake("madspark-debate", "Raft ", "elects ", "a leader.")
	srv := newTestServer(t, "", m)
	body := strings.Replace(hello, `{"model"`, `{"temperature":0.3,"max_tokens":100,"max_completion_tokens":200,"model"`, 1)
	resp, out := post(t, srv.URL, "", body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, out)
	}
	c := jsonMap(t, out)
	if id, _ := c["id"].(string); !strings.HasPrefix(id, "chatcmpl-") || len(id) < len("chatcmpl-")+16 {
		t.Errorf("id %v", c["id"])
	}
	if created, _ := c["created"].(float64); int64(created) < time.Now().Unix()-5 || int64(created) > time.Now().Unix()+1 {
		t.Errorf("created %v", c["created"])
	}
	if c["object"] != "chat.completion" || c["model"] != "madspark-debate" {
		t.Errorf("object, model: %s", out)
	}
	choices, _ := c["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("choices %s", out)
	}
	ch := choices[0].(map[string]any)
	msg, _ := ch["message"].(map[string]any)
	if ch["index"] != 0.0 || ch["finish_reason"] != "stop" || msg["role"] != "assistant" || msg["content"] != "Raft elects a leader." {
		t.Errorf("choice %v", ch)
	}
	u, _ := c["usage"].(map[string]any)
	// The cached calls' tokens count: the answer's real size.
	if u["prompt_tokens"] != 35.0 || u["completion_tokens"] != 15.0 || u["total_tokens"] != 50.0 {
		t.Errorf("usage %v", u)
	}
	if x, _ := c["madspark"].(map[string]any); x["run_id"] != "run-1" || x["llm_calls"] != 4.0 || x["cached_calls"] != 2.0 || x["cost_usd"] != 0.01 {
		t.Errorf("madspark extension %v", c["madspark"])
	}

	p := m.lastPrompt()
	if p.System != "be brief\n\nin English" || len(p.Messages) != 3 || p.Query() != "Explain Raft" ||
		p.Messages[0].Role != llm.RoleUser || p.Messages[1].Role != llm.RoleAssistant || p.Messages[1].Content != "hello" {
		t.Errorf("prompt %+v", p)
	}
	if p.Temperature == nil || *p.Temperature != 0.3 || p.MaxTokens != 200 {
		t.Errorf("temperature %v, max tokens %d", p.Temperature, p.MaxTokens)
	}

	m.finish = "length"
	if _, out := post(t, srv.URL, "", hello); !strings.Contains(out, `"finish_reason":"length"`) {
		t.Errorf("finish reason length: %s", out)
	}
	if p := m.lastPrompt(); p.Temperature != nil || p.MaxTokens != 0 {
		t.Errorf("defaults: temperature %v, max tokens %d", p.Temperature, p.MaxTokens)
	}
}

// sseData parses a whole event stream as a client does: events are
// separated by blank lines, and each line of an event is "data: ...". It
// returns the data of each event in order.
func sseData(t *testing.T, body string) []string {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				t.Fatalf("not an SSE data line: %q", line)
			}
			out = append(out, data)
		}
	}
	return out
}

// chunkOf decodes a chunk and checks the fields every chunk has.
func chunkOf(t *testing.T, data, id string, created float64) map[string]any {
	t.Helper()
	c := jsonMap(t, data)
	if c["id"] != id || c["created"] != created || c["object"] != "chat.completion.chunk" || c["model"] != "madspark-debate" {
		t.Fatalf("chunk %s: want id %s, created %v", data, id, created)
	}
	return c
}

func TestStreaming(t *testing.T) {
	chunks := []string{"Raft ", "elects ", "a \"leader\"\n<b>"}
	m := newFake("madspark-debate", chunks...)
	srv := newTestServer(t, "", m)
	for _, includeUsage := range []bool{false, true} {
		t.Run(fmt.Sprint("include_usage=", includeUsage), func(t *testing.T) {
			resp, body := post(t, srv.URL, "", streamed("madspark-debate", fmt.Sprintf(`,"stream_options":{"include_usage":%v}`, includeUsage)))
			h := resp.Header
			if resp.StatusCode != 200 || h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" || h.Get("X-Accel-Buffering") != "no" {
				t.Fatalf("%d %v", resp.StatusCode, h)
			}
			data := sseData(t, body)
			if data[len(data)-1] != "[DONE]" {
				t.Fatalf("last event %q, want [DONE]", data[len(data)-1])
			}
			data = data[:len(data)-1]
			first := jsonMap(t, data[0])
			id, _ := first["id"].(string)
			created, _ := first["created"].(float64)
			if !strings.HasPrefix(id, "chatcmpl-") || created == 0 {
				t.Fatalf("first chunk %s", data[0])
			}

			// Role chunk.
			ch := chunkOf(t, data[0], id, created)["choices"].([]any)[0].(map[string]any)
			if d := ch["delta"].(map[string]any); d["role"] != "assistant" || d["content"] != "" || len(d) != 2 || ch["finish_reason"] != nil || ch["index"] != 0.0 {
				t.Fatalf("role chunk %s", data[0])
			}
			// Content chunks, then the finish chunk.
			var text strings.Builder
			i := 1
			for ; i < len(data); i++ {
				ch := chunkOf(t, data[i], id, created)["choices"].([]any)[0].(map[string]any)
				d := ch["delta"].(map[string]any)
				if ch["finish_reason"] != nil {
					if len(d) != 0 || ch["finish_reason"] != "stop" {
						t.Fatalf("finish chunk %s", data[i])
					}
					break
				}
				s, ok := d["content"].(string)
				if !ok || len(d) != 1 {
					t.Fatalf("content chunk %s", data[i])
				}
				text.WriteString(s)
			}
			if i-1 != len(chunks) || text.String() != strings.Join(chunks, "") {
				t.Fatalf("%d content chunks %q, want %q", i-1, text.String(), chunks)
			}
			// The usage chunk, only when asked for.
			rest := data[i+1:]
			if !includeUsage {
				if len(rest) != 0 {
					t.Fatalf("chunks after the finish chunk: %q", rest)
				}
				return
			}
			if len(rest) != 1 {
				t.Fatalf("want one usage chunk, got %q", rest)
			}
			uc := chunkOf(t, rest[0], id, created)
			u, _ := uc["usage"].(map[string]any)
			if choices, ok := uc["choices"].([]any); !ok || len(choices) != 0 || u["prompt_tokens"] != 35.0 || u["completion_tokens"] != 15.0 || u["total_tokens"] != 50.0 {
				t.Fatalf("usage chunk %s", rest[0])
			}
		})
	}
}

// TestOfficialSDK is the proof that any OpenAI client works: the official
// Go SDK, plain and streaming.
func TestOfficialSDK(t *testing.T) {
	m := newFake("madspark-debate", "Hello", ", ", "world")
	failing := newFake("failing", "never")
	failing.err = &llm.Error{Provider: "openai", Status: 401, Message: "invalid upstream key"}
	mid := newFake("mid", "Hel", "lo")
	mid.err, mid.failAt = &llm.Error{Provider: "openai", Message: "stream broken", Retryable: true}, 1
	srv := newTestServer(t, "secret-token", m, failing, mid)
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("secret-token"))
	ctx := context.Background()
	params := sdk.ChatCompletionNewParams{
		Model: "madspark-debate",
		Messages: []sdk.ChatCompletionMessageParamUnion{
			sdk.SystemMessage("be brief"), sdk.UserMessage("Say hello"),
		},
		Temperature: sdk.Float(0.5),
	}

	c, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if c.Object != "chat.completion" || c.Choices[0].Message.Content != "Hello, world" || c.Choices[0].FinishReason != "stop" ||
		c.Usage.TotalTokens != 50 || !strings.HasPrefix(c.ID, "chatcmpl-") {
		t.Fatalf("completion %+v", c)
	}
	if p := m.lastPrompt(); p.System != "be brief" || p.Query() != "Say hello" || *p.Temperature != 0.5 {
		t.Fatalf("prompt %+v", p)
	}

	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc sdk.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("chunk %d does not fit: %+v", chunks, stream.Current())
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks != 6 || acc.Choices[0].Message.Content != "Hello, world" || acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens != 50 {
		t.Fatalf("stream: %d chunks, %+v", chunks, acc.ChatCompletion)
	}

	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) != 3 || models.Data[0].ID != "madspark-debate" {
		t.Fatalf("models %v %+v", err, models)
	}

	// A failure of the model: 502, and the SDK does not retry a failure
	// that retrying cannot fix.
	params.Model = "failing"
	_, err = client.Chat.Completions.New(ctx, sdk.ChatCompletionNewParams{Model: "failing", Messages: params.Messages})
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || !strings.Contains(apiErr.Message, "invalid upstream key") || apiErr.Type != "upstream_error" {
		t.Fatalf("upstream failure: %v", err)
	}
	if n := failing.callCount(); n != 1 {
		t.Errorf("the SDK called a deterministic failure %d times", n)
	}

	// A failure mid-stream ends the SDK's stream with an error.
	params.Model = "mid"
	stream = client.Chat.Completions.NewStreaming(ctx, params)
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "stream broken") {
		t.Fatalf("mid-stream failure: %v", err)
	}

	bad := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err = bad.Chat.Completions.New(ctx, params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	m := newFake("madspark-debate", "x")
	srv := newTestServer(t, "", m)
	const user = `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		body   string
		status int
		param  string // "" for null
		want   string
	}{
		{`{"model":"madspark-debate",` + user + `,"temperture":1}`, 400, "temperture", `unknown field "temperture"`},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 400, "messages[0].tool_calls", "only an assistant message calls tools"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi","audio":{}}]}`, 400, "messages[0].audio", `audio is not supported`},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi","voice":{}}]}`, 400, "voice", `unknown field "voice"`},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x","refusal":"no"}]}`, 400, "messages[1].refusal", `refusal sent back`},
		{`{` + user + `}`, 400, "model", "model is required"},
		{`{"model":"madspark-debate"}`, 400, "messages", "messages must not be empty"},
		{`{"model":"madspark-debate","messages":[]}`, 400, "messages", "messages must not be empty"},
		{`{"model":"madspark-debate",` + user + `,"temperature":2.5}`, 400, "temperature", "between 0 and 2"},
		{`{"model":"madspark-debate",` + user + `,"temperature":-1}`, 400, "temperature", "between 0 and 2"},
		{`{"model":"madspark-debate",` + user + `,"temperature":"hot"}`, 400, "temperature", "temperature must be a number"},
		{`{"model":"madspark-debate",` + user + `,"max_tokens":0}`, 400, "max_tokens", "positive"},
		{`{"model":"madspark-debate",` + user + `,"max_completion_tokens":-5}`, 400, "max_completion_tokens", "positive"},
		{`{"model":"madspark-debate",` + user + `,"n":2}`, 400, "n", "only n=1"},
		{`{"model":"madspark-debate",` + user + `,"response_format":{"type":"xml"}}`, 400, "response_format.type", `"xml" is not supported`},
		{`{"model":"madspark-debate",` + user + `,"response_format":{"type":"json_schema"}}`, 400, "response_format.json_schema", "required"},
		{`{"model":"madspark-debate",` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"a b"}}}`, 400, "response_format.json_schema.name", "letters"},
		{`{"model":"madspark-debate",` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":[1]}}}`, 400, "response_format.json_schema.schema", "JSON Schema object"},
		{`{"model":"madspark-debate",` + user + `,"top_p":1.5}`, 400, "top_p", "between 0 and 1"},
		{`{"model":"madspark-debate",` + user + `,"stop":["a","b","c","d","e"]}`, 400, "stop", "at most 4"},
		{`{"model":"madspark-debate",` + user + `,"stop":7}`, 400, "stop", "string or a list"},
		{`{"model":"madspark-debate",` + user + `,"stop":[""]}`, 400, "stop", "empty"},
		{`{"model":"madspark-debate",` + user + `,"seed":"x"}`, 400, "seed", "seed must be"},
		{`{"model":"madspark-debate",` + user + `,"presence_penalty":0.5}`, 400, "presence_penalty", "not supported"},
		{`{"model":"madspark-debate",` + user + `,"frequency_penalty":-1}`, 400, "frequency_penalty", "not supported"},
		{`{"model":"madspark-debate",` + user + `,"logit_bias":{"50256":-100}}`, 400, "logit_bias", "not supported"},
		{`{"model":"madspark-debate",` + user + `,"stream_options":{"include_usage":true}}`, 400, "stream_options", "stream true"},
		{`{"model":"madspark-debate",` + user + `,"logprobs":true}`, 400, "logprobs", "logprobs is not supported"},
		{`{"model":"madspark-debate",` + user + `,"tools":[{"type":"custom","custom":{"name":"f"}}]}`, 400, "tools[0].type", `"custom" is not supported`},
		{`{"model":"madspark-debate",` + user + `,"tools":[{"type":"function"}]}`, 400, "tools[0].function", "required"},
		{`{"model":"madspark-debate",` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, 400, "tools", "JSON Schema object"},
		{`{"model":"madspark-debate",` + user + `,"tools":[{"type":"function","function":{"name":"f","extra":1}}]}`, 400, "tools[0].function.extra", "unknown field"},
		{`{"model":"madspark-debate",` + user + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"maybe"}`, 400, "tool_choice", `"maybe" is not one of`},
		{`{"model":"madspark-debate",` + user + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, 400, "tool_choice", `"g", which is not among the tools`},
		{`{"model":"madspark-debate",` + user + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"allowed_tools","allowed_tools":{}}}`, 400, "tool_choice.type", `"allowed_tools" is not supported`},
		{`{"model":"madspark-debate",` + user + `,"tool_choice":"required"}`, 400, "tool_choice", "without tools"},
		{`{"model":"madspark-debate",` + user + `,"functions":[{"name":"f"}]}`, 400, "functions", "send the functions as tools"},
		{`{"model":"madspark-debate",` + user + `,"function_call":{"name":"f"}}`, 400, "function_call", "use tool_choice"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 400, "messages[1].tool_calls[0]", "needs an ID"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`, 400, "messages[1].tool_call_id", `"c9" answers no tool call`},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content", `type "image_url"`},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":42}]}`, 400, "messages[0].content", "string or an array"},
		{`{"model":"madspark-debate","messages":[{"role":"tool","content":"x"}]}`, 400, "messages[0].tool_call_id", `is required`},
		{`{"model":"madspark-debate","messages":[{"role":"function","content":"x"}]}`, 400, "messages[0].role", `"function" is not supported`},
		{`{"model":"madspark-debate","messages":[{"role":"system","content":"x"}]}`, 400, "messages", "user message"},
		{`{"model":"gpt-4o",` + user + `}`, 404, "model", `model "gpt-4o" does not exist`},
		{`not json`, 400, "", "not valid JSON"},
		{``, 400, "", "empty"},
		{`{"model":"madspark-debate",` + user + `} {}`, 400, "", "after the JSON object"},
		{`{"model":"madspark-debate","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "", "larger than 4096 bytes"},
	} {
		resp, body := post(t, srv.URL, "", tt.body)
		e, _ := jsonMap(t, body)["error"].(map[string]any)
		msg, _ := e["message"].(string)
		param, hasParam := e["param"]
		_, hasCode := e["code"]
		if resp.StatusCode != tt.status || !strings.Contains(msg, tt.want) || e["type"] != "invalid_request_error" ||
			!hasParam || !hasCode || strings.Contains(msg, "\n") || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%.70s: %d %s; want %d and %q", tt.body, resp.StatusCode, body, tt.status, tt.want)
		}
		if (tt.param == "" && param != nil) || (tt.param != "" && param != tt.param) {
			t.Errorf("%.70s: param %v, want %q", tt.body, param, tt.param)
		}
	}
	if _, body := post(t, srv.URL, "", `{"model":"nope",`+user+`}`); !strings.Contains(body, `"code":"model_not_found"`) {
		t.Errorf("unknown model code: %s", body)
	}
	if m.callCount() != 0 {
		t.Errorf("the model was called %d times for bad requests", m.callCount())
	}

	// The optional fields clients commonly send are accepted.
	ok := `{"model":"madspark-debate","messages":[{"role":"user","name":"ann","content":"hi"},{"role":"assistant","content":null}],` +
		`"top_p":0.9,"n":1,"stop":["\n"],"user":"u-1","seed":7,"presence_penalty":0,"frequency_penalty":0,` +
		`"response_format":{"type":"text"},"max_tokens":50,"stream":false}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(ok))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("optional fields: %d %s", resp.StatusCode, b)
	}
}

// TestClientDefaults: the fields OpenAI clients and frameworks send by
// default are accepted; those that cannot change the answer (no tools,
// tool_choice auto or none without tools, an empty functions list) are
// ignored.
func TestClientDefaults(t *testing.T) {
	m := newFake("madspark-debate", "x")
	srv := newTestServer(t, "", m)
	for i, extra := range []string{
		`"tools":[],"tool_choice":"none","logprobs":false,"top_logprobs":0,"store":false,"metadata":{"app":"x"},` +
			`"parallel_tool_calls":true,"service_tier":"auto","presence_penalty":0,"frequency_penalty":0,"logit_bias":{}`,
		`"tools":[{"type":"function","function":{"name":"lookup"}}],"tool_choice":"auto"`,
		`"tool_choice":"auto","functions":[],"function_call":"none"`,
	} {
		body := `{"model":"madspark-debate","messages":[{"role":"user","content":"hi"}],` + extra + `}`
		resp, b := post(t, srv.URL, "", body)
		if resp.StatusCode != 200 || m.callCount() != i+1 {
			t.Fatalf("client defaults %d: %d %s", i, resp.StatusCode, b)
		}
	}
}

// TestWrongMethod: a route asked with another method is a 405 naming the
// methods it takes, also where the web UI's catch-all would match.
func TestWrongMethod(t *testing.T) {
	srv := newTestServer(t, "", newFake("madspark-debate"))
	srv.s.Mux().HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ui")) })
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v1/chat/completions", "POST"},
		{http.MethodDelete, "/v1/chat/completions", "POST"},
		{http.MethodPost, "/v1/models", "GET, HEAD"},
	} {
		resp, body := do(t, tc.method, srv.URL+tc.path, "", "")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != tc.allow || !strings.Contains(body, "not allowed") {
			t.Errorf("%s %s: %d Allow %q %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}
	if resp, body := do(t, http.MethodGet, srv.URL+"/runs/123", "", ""); resp.StatusCode != 200 || body != "ui" {
		t.Errorf("UI path: %d %s", resp.StatusCode, body)
	}
}

func TestUnknownRoutes(t *testing.T) {
	srv := newTestServer(t, "", newFake("madspark-debate"))
	resp, body := do(t, http.MethodGet, srv.URL+"/v1/nothing", "", "")
	if resp.StatusCode != 404 || jsonMap(t, body)["error"].(map[string]any)["code"] != "unknown_url" {
		t.Errorf("unknown URL: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, http.MethodGet, srv.URL+"/v1/chat/completions", "", "")
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || jsonMap(t, body)["error"].(map[string]any)["code"] != "method_not_allowed" {
		t.Errorf("wrong method: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestAuth(t *testing.T) {
	const token = "s3cr3t-Z9"
	srv := newTestServer(t, token, newFake("madspark-debate", "x"))
	for _, tt := range []struct {
		name, auth string
	}{
		{"missing", ""},
		{"wrong", "Bearer nope"},
		{"prefix", "Bearer " + token[:4]},
		{"longer", "Bearer " + token + "x"},
		{"scheme", "Basic " + token},
		{"bare", token},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(hello))
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e, _ := jsonMap(t, string(b))["error"].(map[string]any)
		if resp.StatusCode != 401 || e["code"] != "invalid_api_key" || e["type"] != "invalid_request_error" ||
			strings.Contains(string(b), token) || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %s", tt.name, resp.StatusCode, b)
		}
	}
	if resp, body := post(t, srv.URL, token, hello); resp.StatusCode != 200 {
		t.Errorf("right token: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/v1/models", "/metrics", "/nothing"} {
		if resp, _ := do(t, http.MethodGet, srv.URL+path, "", ""); resp.StatusCode != 401 {
			t.Errorf("GET %s without token: %d", path, resp.StatusCode)
		}
		if resp, _ := do(t, http.MethodGet, srv.URL+path, token, ""); resp.StatusCode == 401 {
			t.Errorf("GET %s with token: 401", path)
		}
	}
	if resp, _ := do(t, http.MethodGet, srv.URL+"/health", "", ""); resp.StatusCode != 200 {
		t.Error("/health must be open")
	}
	eventually(t, "request logs", func() bool { return strings.Count(srv.logs.String(), "\n") >= 14 })
	if logs := srv.logs.String(); strings.Contains(logs, token) || strings.Contains(logs, "nope") || strings.Contains(strings.ToLower(logs), "authorization") {
		t.Errorf("logs leak credentials:\n%s", logs)
	}
}

func TestNewValidates(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string // "" for success
	}{
		{Config{}, ""},
		{Config{Addr: "localhost:9000"}, ""},
		{Config{Addr: "[::1]:8080"}, ""},
		{Config{Addr: "127.0.0.2:80"}, ""},
		{Config{Addr: "0.0.0.0:8080"}, "MADSPARK_API_TOKEN"},
		{Config{Addr: ":8080"}, "MADSPARK_API_TOKEN"},
		{Config{Addr: "192.168.1.5:8080"}, "MADSPARK_API_TOKEN"},
		{Config{Addr: "0.0.0.0:8080", Token: "t"}, "at least 32 characters, got 1"},
		{Config{Addr: "0.0.0.0:8080", Token: " \t "}, "blank"},
		{Config{Addr: "127.0.0.1:8080", Token: "  "}, "blank"},
		{Config{Addr: "0.0.0.0:8080", Token: strings.Repeat("a", 31) + "  "}, "at least 32 characters, got 31"},
		{Config{Addr: "0.0.0.0:8080", Token: strings.Repeat("a", MinTokenLength)}, ""},
		{Config{Addr: "127.0.0.1:8080", Token: "t"}, ""},
		{Config{Addr: "8080"}, "address"},
		{Config{Models: []Model{newFake("a"), newFake("b"), newFake("a")}}, `"a" is used twice`},
		{Config{Models: []Model{newFake("")}}, "empty ID"},
		{Config{Models: []Model{nil}}, "nil"},
	} {
		_, err := New(tt.cfg)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("New(%+v) = %v; want %q", tt.cfg, err, tt.want)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := New(Config{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Registry: reg}); err == nil {
		t.Error("two servers registered the same metrics")
	}
}

func TestModelErrors(t *testing.T) {
	models := map[string]error{
		"upstream":  &llm.Error{Provider: "openai", Status: 400, Message: "context length\nexceeded"},
		"retry":     &llm.Error{Provider: "openai", Status: 429, Message: "slow down", Retryable: true, RetryAfter: 1500 * time.Millisecond},
		"timeout":   &llm.Error{Provider: "spark.evaluate", Message: "no reply within 30s", Retryable: true, Err: context.DeadlineExceeded},
		"deadline":  fmt.Errorf("debate: %w", context.DeadlineExceeded),
		"invalid":   InvalidRequest(errors.New("query must not be empty")),
		"pipeline":  errors.New("judge returned no verdict"),
		"panicking": nil,
		"paused": &llm.Error{Message: "circuit breaker open after 5 consecutive failures (last: x); next trial call at 2026-01-01T00:00:00Z (in 42s)",
			RetryAfter: 41200 * time.Millisecond, Err: middleware.ErrCircuitOpen},
		"limited": &llm.Error{Provider: "openai", Status: 429, Message: "Rate limit reached"},
	}
	var ms []Model
	for id, err := range models {
		f := newFake(id, "x")
		f.err, f.panics = err, id == "panicking"
		ms = append(ms, f)
	}
	srv := newTestServer(t, "", ms...)
	for _, tt := range []struct {
		model, typ, code, msg string
		status                int
		retry, retryAfter     string
	}{
		{"upstream", "upstream_error", "upstream_error", "OpenAI refused the request (HTTP 400: context length exceeded)", 502, "false", ""},
		{"retry", "rate_limit_error", "rate_limit_exceeded", "slow down", 429, "true", "2"},
		{"limited", "rate_limit_error", "rate_limit_exceeded", "Rate limit reached", 429, "true", "5"},
		{"paused", "server_error", "provider_paused", "paused its calls to the model provider", 503, "true", "42"},
		{"timeout", "timeout_error", "timeout", "no reply within 30s", 503, "true", "5"},
		{"deadline", "timeout_error", "timeout", "took longer than allowed", 503, "true", "5"},
		{"invalid", "invalid_request_error", "", "query must not be empty", 400, "", ""},
		{"pipeline", "server_error", "pipeline_error", "judge returned no verdict", 502, "false", ""},
		{"panicking", "server_error", "internal_error", "failed unexpectedly", 500, "false", ""},
	} {
		resp, body := post(t, srv.URL, "", strings.Replace(hello, "madspark-debate", tt.model, 1))
		e, _ := jsonMap(t, body)["error"].(map[string]any)
		code, _ := e["code"].(string)
		if resp.StatusCode != tt.status || e["type"] != tt.typ || code != tt.code || !strings.Contains(e["message"].(string), tt.msg) {
			t.Errorf("%s: %d %s", tt.model, resp.StatusCode, body)
		}
		if resp.Header.Get("X-Should-Retry") != tt.retry || resp.Header.Get("Retry-After") != tt.retryAfter {
			t.Errorf("%s: X-Should-Retry %q, Retry-After %q", tt.model, resp.Header.Get("X-Should-Retry"), resp.Header.Get("Retry-After"))
		}
		if strings.Contains(body, "goroutine") || strings.Contains(body, ".go:") {
			t.Errorf("%s: stack trace in the answer: %s", tt.model, body)
		}
	}
}

// TestStreamErrors: a model that fails after the stream started ends it
// with an error event and no [DONE]; one that fails before its first text
// is answered with the error's own status, as a plain request is, since
// nothing of the stream was sent.
func TestStreamErrors(t *testing.T) {
	up := &llm.Error{Provider: "openai", Message: "stream broken", Retryable: true}
	mid := newFake("mid", "a", "b", "c")
	mid.err, mid.failAt = up, 2
	early := newFake("early", "a")
	early.err = up
	srv := newTestServer(t, "", mid, early)
	resp, body := post(t, srv.URL, "", streamed("mid", ""))
	data := sseData(t, body)
	if resp.StatusCode != 200 || len(data) != 4 {
		t.Fatalf("mid: %d %q", resp.StatusCode, data)
	}
	for _, d := range data[:len(data)-1] {
		if d == "[DONE]" || strings.Contains(d, `"error"`) {
			t.Fatalf("mid: %q", data)
		}
	}
	e, _ := jsonMap(t, data[len(data)-1])["error"].(map[string]any)
	if e["message"] != "openai: stream broken" || e["type"] != "upstream_error" {
		t.Fatalf("mid: last event %s", data[len(data)-1])
	}
	resp, body = post(t, srv.URL, "", streamed("early", ""))
	e, _ = jsonMap(t, body)["error"].(map[string]any)
	if resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "application/json" || e["message"] != "openai: stream broken" {
		t.Fatalf("early: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// readEvent reads one event from a stream.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v after %q", err, ev.String())
		}
		if line == "\n" {
			return ev.String()
		}
		ev.WriteString(line)
	}
}

func TestClientDisconnectCancels(t *testing.T) {
	m := newFake("madspark-debate", "a", "b")
	m.gate, m.gateAt = make(chan struct{}), 1 // hold the stream open after "a"
	srv := newTestServer(t, "", m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(streamed("madspark-debate", "")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	readEvent(t, br) // role
	if ev := readEvent(t, br); !strings.Contains(ev, `"content":"a"`) {
		t.Fatalf("want the first content chunk, got %q", ev)
	}
	<-m.reached
	if v := gauge(t, srv.reg, "madspark_streams_in_flight"); v != 1 {
		t.Errorf("streams in flight %v, want 1", v)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-m.cancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("the model's context was not cancelled when the client went away")
	}
	eventually(t, "the stream to end", func() bool { return gauge(t, srv.reg, "madspark_streams_in_flight") == 0 })
}

func TestGracefulShutdown(t *testing.T) {
	m := newFake("madspark-debate", "a", "b", "c")
	m.gate, m.gateAt = make(chan struct{}), 1
	s, err := New(Config{Models: []Model{m}, DrainTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	addr := ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	resp, err := client.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(streamed("madspark-debate", "")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	events := []string{readEvent(t, br), readEvent(t, br)} // role, "a"
	<-m.reached

	cancel() // shut down while the stream is open
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // refused: the listener is closed
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections after shutdown began")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) while a stream was in progress", err)
	default:
	}

	close(m.gate) // let the stream finish
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	data := sseData(t, strings.Join(events, "\n")+"\n"+string(rest))
	if len(data) != 6 || data[len(data)-1] != "[DONE]" || !strings.Contains(data[3], `"content":"c"`) {
		t.Fatalf("stream cut by the shutdown: %q", data)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Serve did not return after the stream ended")
	}
}

func TestShutdownDrainTimeout(t *testing.T) {
	m := newFake("madspark-debate", "a")
	m.gate, m.gateAt = make(chan struct{}), 1 // never released: the stream outlives the drain
	s, err := New(Config{Models: []Model{m}, DrainTimeout: 20 * time.Millisecond})
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
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json", strings.NewReader(streamed("madspark-debate", "")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-m.reached
	cancel()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "shutdown") {
			t.Fatalf("Serve = %v, want a drain timeout", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Serve did not give up draining")
	}
	select {
	case <-m.cancelled: // the cut connection cancelled the model
	case <-time.After(2 * time.Second):
		t.Fatal("the model kept running after its connection was closed")
	}
}

// gauge returns the value of an unlabelled gauge.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metric(t, reg, name, nil).GetGauge().GetValue()
}

// metric returns the sample of name with labels, or nil when there is none.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func TestMetrics(t *testing.T) {
	srv := newTestServer(t, "tok", newFake("madspark-debate", "x"))
	post(t, srv.URL, "tok", hello)
	post(t, srv.URL, "tok", streamed("madspark-debate", ""))
	post(t, srv.URL, "tok", `{}`)
	post(t, srv.URL, "", hello)
	do(t, http.MethodGet, srv.URL+"/nothing", "tok", "")
	const chat = "POST /v1/chat/completions"
	counter := func(name string, labels map[string]string) float64 {
		return metric(t, srv.reg, name, labels).GetCounter().GetValue()
	}
	eventually(t, "request metrics", func() bool {
		return counter("madspark_http_requests_total", map[string]string{"route": chat, "code": "200"}) == 2 &&
			counter("madspark_http_requests_total", map[string]string{"route": chat, "code": "400"}) == 1 &&
			counter("madspark_http_requests_total", map[string]string{"route": chat, "code": "401"}) == 1 &&
			counter("madspark_http_requests_total", map[string]string{"route": "unmatched", "code": "404"}) == 1
	})
	if n := metric(t, srv.reg, "madspark_http_request_duration_seconds", map[string]string{"route": chat}).GetHistogram().GetSampleCount(); n != 4 {
		t.Errorf("duration samples %d, want 4", n)
	}
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"madspark_llm_calls_total", map[string]string{"model": "madspark-debate", "kind": "llm"}, 8},
		{"madspark_llm_calls_total", map[string]string{"model": "madspark-debate", "kind": "cached"}, 4},
		{"madspark_tokens_total", map[string]string{"model": "madspark-debate", "direction": "input"}, 60},
		{"madspark_tokens_total", map[string]string{"model": "madspark-debate", "direction": "output"}, 24},
	} {
		if got := counter(tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if v := gauge(t, srv.reg, "madspark_streams_in_flight"); v != 0 {
		t.Errorf("streams in flight %v", v)
	}

	// The same, as Prometheus scrapes them.
	resp, body := do(t, http.MethodGet, srv.URL+"/metrics", "tok", "")
	for _, want := range []string{
		`madspark_http_requests_total{code="200",route="POST /v1/chat/completions"} 2`,
		`madspark_llm_calls_total{kind="llm",model="madspark-debate"} 8`,
		`madspark_tokens_total{direction="output",model="madspark-debate"} 24`,
		`madspark_http_request_duration_seconds_bucket{route="POST /v1/chat/completions",le="+Inf"} 4`,
		`madspark_streams_in_flight 0`,
	} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestRequestLog(t *testing.T) {
	srv := newTestServer(t, "", newFake("madspark-debate", "x"))
	post(t, srv.URL, "", streamed("madspark-debate", ""))
	var line map[string]any
	eventually(t, "the request log", func() bool {
		for _, l := range strings.Split(srv.logs.String(), "\n") {
			if strings.Contains(l, `"path":"/v1/chat/completions"`) {
				line = jsonMap(t, l)
				return true
			}
		}
		return false
	})
	if line["method"] != "POST" || line["status"] != 200.0 || line["model"] != "madspark-debate" || line["stream"] != true ||
		line["run_id"] != "run-1" || line["bytes"].(float64) < 100 || line["duration"] == nil {
		t.Errorf("log line %v", line)
	}
	if logs := srv.logs.String(); strings.Contains(logs, "Explain") || strings.Contains(logs, "be brief") {
		t.Errorf("logs hold the request body:\n%s", logs)
	}
}

func TestMuxRoutes(t *testing.T) {
	srv := newTestServer(t, "tok")
	srv.s.Mux().HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id")})
	})
	if resp, _ := do(t, http.MethodGet, srv.URL+"/v1/runs/r1", "", ""); resp.StatusCode != 401 {
		t.Errorf("added route without token: %d", resp.StatusCode)
	}
	if resp, body := do(t, http.MethodGet, srv.URL+"/v1/runs/r1", "tok", ""); resp.StatusCode != 200 || !strings.Contains(body, `"r1"`) {
		t.Errorf("added route: %d %s", resp.StatusCode, body)
	}
	eventually(t, "route metrics", func() bool {
		return metric(t, srv.reg, "madspark_http_requests_total", map[string]string{"route": "GET /v1/runs/{id}", "code": "200"}) != nil
	})
}

// lateModel sends text from another goroutine that outlives Complete,
// as a buggy pipeline might.
type lateModel struct{ done chan struct{} }

func (lateModel) ID() string { return "late" }

func (m lateModel) Complete(ctx context.Context, p Prompt, out *Stream) (*Completion, error) {
	out.Text("on time")
	go func() {
		defer close(m.done)
		for range 1000 {
			out.Text("late")
		}
	}()
	return &Completion{Text: "on time"}, nil
}

func TestLateDeltasAreDropped(t *testing.T) {
	m := lateModel{done: make(chan struct{})}
	srv := newTestServer(t, "", m)
	_, body := post(t, srv.URL, "", strings.Replace(hello, `{"model":"madspark-debate"`, `{"model":"late","stream":true`, 1))
	<-m.done
	// Deltas sent before Complete returned may be streamed; none may
	// follow the finish chunk, and none may crash the server.
	data := sseData(t, body)
	n := len(data)
	if n < 4 || data[n-1] != "[DONE]" || !strings.Contains(data[n-2], `"finish_reason":"stop"`) || !strings.Contains(data[1], `"content":"on time"`) {
		t.Fatalf("stream %q", data)
	}
	for _, d := range data[2 : n-2] {
		if !strings.Contains(d, `"delta":{"content":"late"}`) {
			t.Fatalf("unexpected chunk %s", d)
		}
	}
}

// TestConcurrentStreamsIntact streams many small chunks on many streams at
// once: every stream must arrive whole and in order.
func TestConcurrentStreamsIntact(t *testing.T) {
	chunks := make([]string, 300)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("<%d>", i)
	}
	want := strings.Join(chunks, "")
	srv := newTestServer(t, "", newFake("madspark-debate", chunks...))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(streamed("madspark-debate", "")))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var text strings.Builder
			data := sseData(t, string(b))
			for _, d := range data[1 : len(data)-2] {
				var c struct {
					Choices []struct{ Delta struct{ Content string } }
				}
				if err := json.Unmarshal([]byte(d), &c); err != nil {
					t.Errorf("chunk %q: %v", d, err)
					return
				}
				text.WriteString(c.Choices[0].Delta.Content)
			}
			if text.String() != want || data[len(data)-1] != "[DONE]" {
				t.Errorf("stream garbled: got %d bytes of text, want %d", text.Len(), len(want))
			}
		})
	}
	wg.Wait()
}

// slowWriter is a ResponseWriter that takes its time over each Write and
// checks that the caller does not change the bytes meanwhile.
type slowWriter struct {
	mu      sync.Mutex
	out     bytes.Buffer
	changed bool
}

func (w *slowWriter) Header() http.Header { return http.Header{} }
func (w *slowWriter) WriteHeader(int)     {}
func (w *slowWriter) Flush()              {}

func (w *slowWriter) Write(b []byte) (int, error) {
	before := string(b)
	time.Sleep(20 * time.Microsecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changed = w.changed || string(b) != before
	w.out.WriteString(before)
	return len(b), nil
}

func TestSSEWriterKeepsBuffersApart(t *testing.T) {
	w := &slowWriter{}
	sse := newSSEWriter(w, time.Second, nil)
	var want strings.Builder
	for i := range 2000 {
		p := fmt.Sprintf("event-%d", i)
		sse.send(appendData(nil, []byte(p)))
		want.WriteString("data: " + p + "\n\n")
		if i%7 == 0 {
			time.Sleep(time.Microsecond) // let the writer drain now and then
		}
	}
	sse.close()
	sse.send(appendData(nil, []byte("after close")))
	if w.changed || w.out.String() != want.String() {
		t.Fatalf("events changed while being written (%v) or garbled: %d bytes, want %d", w.changed, w.out.Len(), want.Len())
	}
}

// TestCORS: an allowed origin's preflight is answered before
// authentication, and its requests get the CORS headers; another origin
// gets none; a bad origin in the configuration is refused.
func TestCORS(t *testing.T) {
	const token = "tok-CORS-1"
	s, err := New(Config{Models: []Model{newFake("madspark-debate")}, Token: token, CORSOrigins: []string{"https://ui.example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/api/runs", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight("https://ui.example.org")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://ui.example.org" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "DELETE") {
		t.Errorf("allowed preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := preflight("https://evil.example"); resp.StatusCode == 204 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin's preflight: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
	req.Header.Set("Origin", "https://ui.example.org")
	req.Header.Set("Authorization", "Bearer "+token)
	got, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != 200 || got.Header.Get("Access-Control-Allow-Origin") != "https://ui.example.org" ||
		!strings.Contains(got.Header.Get("Access-Control-Expose-Headers"), "Retry-After") || !strings.Contains(got.Header.Get("Vary"), "Origin") {
		t.Errorf("allowed request: %d %v", got.StatusCode, got.Header)
	}
	for _, bad := range []string{"ui.example.org", "https://ui.example.org/app", "ftp://x"} {
		if _, err := New(Config{Models: []Model{newFake("m")}, CORSOrigins: []string{bad}}); err == nil {
			t.Errorf("CORS origin %q accepted", bad)
		}
	}
}

// TestRouteErrorsOutsideV1: outside /v1 the authentication and routing
// errors are the REST API's {"error": {"message", "type"}}.
func TestRouteErrorsOutsideV1(t *testing.T) {
	srv := newTestServer(t, "tok", newFake("madspark-debate"))
	resp, body := do(t, http.MethodGet, srv.URL+"/api/runs", "", "")
	if e := jsonMap(t, body)["error"].(map[string]any); resp.StatusCode != 401 || e["type"] != "unauthorized" || e["code"] != nil {
		t.Errorf("401 outside /v1: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, http.MethodGet, srv.URL+"/api/nothing", "tok", "")
	if e := jsonMap(t, body)["error"].(map[string]any); resp.StatusCode != 404 || e["type"] != "not_found" {
		t.Errorf("404 outside /v1: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, http.MethodDelete, srv.URL+"/metrics", "tok", "")
	if e := jsonMap(t, body)["error"].(map[string]any); resp.StatusCode != 405 || e["type"] != "invalid_request" || resp.Header.Get("Allow") == "" {
		t.Errorf("405 outside /v1: %d %s", resp.StatusCode, body)
	}
}
