package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/providertest"
)

var _ llm.Client = (*Client)(nil)

func TestGenerate(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		resp := textResponse("Hello", "STOP", map[string]any{
			"promptTokenCount": 11, "candidatesTokenCount": 5, "thoughtsTokenCount": 3, "totalTokenCount": 19,
		})
		// A thought part is not part of the reply.
		cand := resp["candidates"].([]any)[0].(map[string]any)
		cand["content"].(map[string]any)["parts"] = []any{
			map[string]any{"text": "thinking...", "thought": true},
			map[string]any{"text": "Hello"},
			map[string]any{"text": " again"},
		}
		writeJSON(w, http.StatusOK, resp)
	})
	c := f.client(t)
	resp, err := c.Generate(context.Background(), providertest.BaseRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Text: "Hello again", Provider: "gemini", Model: "gemini-2.5-flash-001", FinishReason: "stop",
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 11, OutputTokens: 8},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}

	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("path = %s", r.Path)
	}
	if strings.Contains(r.Query, "key") {
		t.Errorf("API key in the query: %s", r.Query)
	}
	body := r.JSON(t)
	wantContents := []any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Hi"}}},
		map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Hello."}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Say hello again."}}},
	}
	if !reflect.DeepEqual(body["contents"], wantContents) {
		t.Errorf("contents = %#v", body["contents"])
	}
	sys, _ := json.Marshal(body["systemInstruction"])
	if !strings.Contains(string(sys), `"text":"You are terse."`) {
		t.Errorf("systemInstruction = %s", sys)
	}
	gc, _ := body["generationConfig"].(map[string]any)
	if gc["temperature"] != 0.25 || gc["maxOutputTokens"] != float64(100) {
		t.Errorf("generationConfig = %#v", gc)
	}
	if _, ok := gc["responseMimeType"]; ok {
		t.Errorf("plain request asks for JSON: %#v", gc)
	}
	for k := range body {
		if strings.Contains(strings.ToLower(k), "continuation") {
			t.Errorf("SDK-only field %q sent", k)
		}
	}
}

func TestGenerateModelOverride(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		resp := textResponse("ok", "STOP", nil)
		delete(resp, "modelVersion")
		writeJSON(w, http.StatusOK, resp)
	})
	req := providertest.BaseRequest()
	req.Model = "gemini-2.5-pro"
	resp, err := f.client(t).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "gemini-2.5-pro" || resp.Usage.LLMCalls != 1 {
		t.Errorf("response = %+v", resp)
	}
	if p := f.Requests()[0].Path; p != "/v1beta/models/gemini-2.5-pro:generateContent" {
		t.Errorf("path = %s", p)
	}
}

func TestStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		send := sse(w)
		send(textResponse("Hel", "", map[string]any{"promptTokenCount": 7}))
		send(textResponse("lo, ", "", map[string]any{"promptTokenCount": 7, "candidatesTokenCount": 2}))
		send(textResponse("world", "STOP", map[string]any{"promptTokenCount": 7, "candidatesTokenCount": 4, "thoughtsTokenCount": 10}))
	})
	var deltas []string
	req := providertest.BaseRequest()
	req.OnDelta = func(d string) { deltas = append(deltas, d) }
	resp, err := f.client(t).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hel", "lo, ", "world"}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if resp.Text != "Hello, world" || resp.FinishReason != "stop" {
		t.Errorf("response = %+v", resp)
	}
	if want := (llm.Usage{LLMCalls: 1, InputTokens: 7, OutputTokens: 14}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	r := f.Requests()[0]
	if r.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r.Query != "alt=sse" {
		t.Errorf("request = %s?%s", r.Path, r.Query)
	}
}

const ideaSchema = `{"type":"object","properties":{"title":{"type":"string"},"score":{"type":"integer","minimum":0,"maximum":10}},"required":["title","score"],"additionalProperties":false}`

func TestStructured(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, textResponse(`{"title":"Solar kettles","score":7}`, "STOP", nil))
	})
	req := providertest.BaseRequest()
	req.Schema = &llm.Schema{Name: "idea", JSON: []byte(ideaSchema)}
	resp, err := f.client(t).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"title":"Solar kettles","score":7}` {
		t.Errorf("text = %s", resp.Text)
	}
	gc, _ := f.Requests()[0].JSON(t)["generationConfig"].(map[string]any)
	if gc["responseMimeType"] != "application/json" {
		t.Errorf("responseMimeType = %v", gc["responseMimeType"])
	}
	var want any
	_ = json.Unmarshal([]byte(ideaSchema), &want)
	if !reflect.DeepEqual(gc["responseJsonSchema"], want) {
		t.Errorf("responseJsonSchema = %#v\nwant %#v", gc["responseJsonSchema"], want)
	}
	if _, ok := gc["responseSchema"]; ok {
		t.Error("responseSchema (OpenAPI form) sent as well")
	}
}

func TestStructuredBadSchema(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { t.Error("request sent") })
	req := providertest.BaseRequest()
	req.Schema = &llm.Schema{Name: "idea", JSON: []byte(`{not json`)}
	_, err := f.client(t).Generate(context.Background(), req)
	if e := asLLMError(t, err); e.Retryable {
		t.Errorf("bad schema is retryable: %v", e)
	}
}

func TestRateLimited(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		detail map[string]any
		want   time.Duration
	}{
		{"header seconds", "7", nil, 7 * time.Second},
		{"header date", time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat), nil, 30 * time.Second},
		{"RetryInfo", "", map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12.5s"}, 12500 * time.Millisecond},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
					if tc.header != "" {
						w.Header().Set("Retry-After", tc.header)
					}
					var details []map[string]any
					if tc.detail != nil {
						details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure"}, tc.detail)
					}
					writeError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Quota exceeded", details...)
				})
				req := providertest.BaseRequest()
				if stream {
					req.OnDelta = func(string) {}
				}
				_, err := f.client(t).Generate(context.Background(), req)
				e := asLLMError(t, err)
				if e.Status != 429 || !e.Retryable || !llm.IsRetryable(err) {
					t.Errorf("error = %+v", e)
				}
				// An HTTP-date loses sub-second precision.
				if d := e.RetryAfter - tc.want; d > 0 || d < -1500*time.Millisecond {
					t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tc.want)
				}
				if llm.RetryAfterOf(err) != e.RetryAfter {
					t.Error("RetryAfterOf disagrees")
				}
				if n := len(f.Requests()); n != 1 {
					t.Errorf("%d requests reached the server, want 1 (SDK retried)", n)
				}
			})
		}
	}
}

func TestServerError(t *testing.T) {
	for _, status := range []int{500, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				writeError(w, status, "INTERNAL", "An internal error has occurred.")
			})
			_, err := f.client(t).Generate(context.Background(), providertest.BaseRequest())
			e := asLLMError(t, err)
			if e.Status != status || !e.Retryable || e.RetryAfter != 0 {
				t.Errorf("error = %+v", e)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests reached the server, want 1", n)
			}
		})
	}
}

func TestBadRequest(t *testing.T) {
	const msg = "* GenerateContentRequest.contents: contents is not specified"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg)
	})
	_, err := f.client(t).Generate(context.Background(), providertest.BaseRequest())
	e := asLLMError(t, err)
	if e.Status != 400 || e.Retryable || llm.IsRetryable(err) {
		t.Errorf("error = %+v", e)
	}
	if e.Message != msg || !strings.Contains(err.Error(), msg) {
		t.Errorf("error message = %q", err.Error())
	}
	if n := len(f.Requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
}

func TestStreamBroken(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		status  int
	}{
		{"connection dropped", func(w http.ResponseWriter, r *http.Request) {
			send := sse(w)
			send(textResponse("Hel", "", nil))
			send(textResponse("lo", "", nil))
			providertest.HangUp(w)
		}, 0},
		{"half an event", func(w http.ResponseWriter, r *http.Request) {
			send := sse(w)
			send(textResponse("Hel", "", nil))
			fmt.Fprint(w, `data: {"candidates": [{"content": {"parts": [{"te`)
			w.(http.Flusher).Flush()
			providertest.HangUp(w)
		}, 0},
		{"ended without finish reason", func(w http.ResponseWriter, r *http.Request) {
			send := sse(w)
			send(textResponse("Hel", "", nil))
			send(textResponse("lo", "", nil))
		}, 0},
		{"error event", func(w http.ResponseWriter, r *http.Request) {
			send := sse(w)
			send(textResponse("Hel", "", nil))
			send(map[string]any{"error": map[string]any{"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})
		}, 503},
	} {
		t.Run(tc.name, func(t *testing.T) { harness().BrokenStream(t, tc.handler, tc.status) })
	}
}

func TestAPIKeyNeverInError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		// Some APIs echo the key back; it must not survive into our error.
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid: "+testKey+". Please pass a valid API key.")
	})
	_, err := f.client(t).Generate(context.Background(), providertest.BaseRequest())
	e := asLLMError(t, err)
	if !strings.Contains(e.Message, "[redacted]") {
		t.Errorf("message = %q", e.Message)
	}

	if got := llm.Redact("GET https://x/v1beta/models/m?alt=sse&key=abc123&y=1"); got != "GET https://x/v1beta/models/m?alt=sse&key=[redacted]&y=1" {
		t.Errorf("redact = %q", got)
	}
}

func TestBlocked(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp map[string]any
		want string
	}{
		{"prompt blocked", map[string]any{"promptFeedback": map[string]any{"blockReason": "SAFETY"}}, "prompt blocked: block reason safety"},
		{"candidate blocked", map[string]any{"candidates": []any{map[string]any{"finishReason": "SAFETY", "index": 0}}}, "reply blocked: finish reason safety"},
		{"recitation with text", textResponse("Once upon", "RECITATION", nil), "reply blocked: finish reason recitation"},
		{"empty at max tokens", map[string]any{"candidates": []any{map[string]any{"finishReason": "MAX_TOKENS", "content": map[string]any{"role": "model"}}}}, "empty reply: finish reason max_tokens"},
		{"no candidates", map[string]any{}, "empty reply: finish reason none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
					sse(w)(tc.resp)
					return
				}
				writeJSON(w, http.StatusOK, tc.resp)
			})
			for _, stream := range []bool{false, true} {
				if stream && tc.name == "no candidates" {
					continue // a stream without a finish reason is a broken stream
				}
				req := providertest.BaseRequest()
				if stream {
					req.OnDelta = func(string) {}
				}
				_, err := f.client(t).Generate(context.Background(), req)
				e := asLLMError(t, err)
				if e.Retryable || !strings.Contains(e.Message, tc.want) {
					t.Errorf("stream=%v: error = %+v, want %q", stream, e, tc.want)
				}
			}
		})
	}
}

func TestMaxTokensWithText(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, textResponse("Once upon a", "MAX_TOKENS", nil))
	})
	resp, err := f.client(t).Generate(context.Background(), providertest.BaseRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "max_tokens" || resp.Text != "Once upon a" {
		t.Errorf("response = %+v", resp)
	}
}

func TestNewRequiresKey(t *testing.T) {
	_, err := New(context.Background(), Config{})
	asLLMError(t, err)
}

func TestNoAutomaticContinuation(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				resp := textResponse("Part one", "CONTINUATION", nil)
				resp["candidates"].([]any)[0].(map[string]any)["continuationToken"] = "dG9rZW4="
				if stream {
					sse(w)(resp)
					return
				}
				writeJSON(w, http.StatusOK, resp)
			})
			req := providertest.BaseRequest()
			if stream {
				req.OnDelta = func(string) {}
			}
			resp, err := f.client(t).Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "Part one" || resp.FinishReason != "continuation" {
				t.Errorf("response = %+v", resp)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests reached the server, want 1 (SDK continued)", n)
			}
		})
	}
}

// staticToken is a token source for tests: no network, one fixed token.
type staticToken struct{}

func (staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: "ya29.test-token", Type: "Bearer"}, nil
}

// TestVertexAI: with Vertex set, the SDK's Vertex AI endpoint for the
// project and location is called with OAuth credentials, not an API key.
func TestVertexAI(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		writeJSON(w, http.StatusOK, map[string]any{
			"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "hi"}}}, "finishReason": "STOP"}},
			"usageMetadata": map[string]any{"promptTokenCount": 3, "candidatesTokenCount": 1},
			"modelVersion":  "gemini-2.5-flash",
		})
	}))
	defer srv.Close()
	c, err := New(context.Background(), Config{Vertex: true, Project: "my-proj", Location: "europe-west4", BaseURL: srv.URL,
		Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken{}})})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Generate(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}})
	if err != nil || resp.Text != "hi" {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if want := "/projects/my-proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent"; !strings.HasSuffix(got.URL.Path, want) {
		t.Errorf("path %s, want suffix %s", got.URL.Path, want)
	}
	if got.Header.Get("Authorization") != "Bearer ya29.test-token" || got.Header.Get("x-goog-api-key") != "" {
		t.Errorf("auth headers %v", got.Header)
	}
	if _, err := New(context.Background(), Config{Vertex: true, Project: "p"}); err == nil || !strings.Contains(err.Error(), "location") {
		t.Errorf("missing location: %v", err)
	}
}

// TestSamplingSettings: top_p, the stop sequences and the seed reach the
// wire; a seed beyond 32 bits is an error before any call.
func TestSamplingSettings(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, textResponse("Hello", "STOP", map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1}))
	})
	c := f.client(t)
	req := providertest.BaseRequest()
	topP, seed := 0.5, int64(42)
	req.TopP, req.Stop, req.Seed = &topP, []string{"END"}, &seed
	if _, err := c.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	cfg, _ := f.Requests()[0].JSON(t)["generationConfig"].(map[string]any)
	if cfg["topP"] != 0.5 || !reflect.DeepEqual(cfg["stopSequences"], []any{"END"}) || cfg["seed"] != float64(42) {
		t.Errorf("generationConfig = %v", cfg)
	}
	big := int64(1) << 40
	req.Seed = &big
	if _, err := c.Generate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "32-bit") || len(f.Requests()) != 1 {
		t.Errorf("a 40-bit seed: %v", err)
	}
}

// callResponse is a response whose parts are text and function calls.
func callResponse(text string, calls ...map[string]any) map[string]any {
	parts := []any{}
	if text != "" {
		parts = append(parts, map[string]any{"text": text})
	}
	for _, c := range calls {
		parts = append(parts, map[string]any{"functionCall": c})
	}
	return map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"modelVersion": "gemini-2.5-flash-001"}
}

// TestToolCalls: a request's tools go out as function declarations (their
// parameters' JSON Schema as given), its tool choice as the function
// calling mode; the reply's functionCall parts are its calls (an ID made
// for one that has none), plain and streamed; calls and their results in
// the conversation go back as functionCall and functionResponse parts,
// each result named after its call.
func TestToolCalls(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			resp := callResponse("Looking.", map[string]any{"id": "fc1", "name": "weather", "args": map[string]any{"city": "Oslo"}},
				map[string]any{"name": "clock", "args": map[string]any{}})
			if stream {
				sse(w)(resp)
				return
			}
			writeJSON(w, http.StatusOK, resp)
		})
		req := providertest.BaseRequest()
		req.Tools = []llm.Tool{{Name: "weather", Description: "The weather", Parameters: json.RawMessage(ideaSchema)}, {Name: "clock"}}
		req.ToolChoice = &llm.ToolChoice{Mode: llm.ToolRequired, Name: "weather"}
		if stream {
			req.OnDelta = func(string) {}
		}
		resp, err := f.client(t).Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		if len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != (llm.ToolCall{ID: "fc1", Name: "weather", Arguments: `{"city":"Oslo"}`}) ||
			!strings.HasPrefix(resp.ToolCalls[1].ID, "call_") || resp.ToolCalls[1].Arguments != "{}" || resp.FinishReason != llm.FinishToolCalls || resp.Text != "Looking." {
			t.Errorf("stream %v: %+v", stream, resp)
		}
		body := f.Requests()[0].JSON(t)
		var want any
		_ = json.Unmarshal([]byte(ideaSchema), &want)
		tools, _ := body["tools"].([]any)
		decls, _ := tools[0].(map[string]any)["functionDeclarations"].([]any)
		if len(tools) != 1 || len(decls) != 2 || !reflect.DeepEqual(decls[0].(map[string]any)["parametersJsonSchema"], want) || decls[1].(map[string]any)["name"] != "clock" {
			t.Errorf("tools %#v", body["tools"])
		}
		if fc := body["toolConfig"].(map[string]any)["functionCallingConfig"]; !reflect.DeepEqual(fc, map[string]any{"mode": "ANY", "allowedFunctionNames": []any{"weather"}}) {
			t.Errorf("toolConfig %#v", fc)
		}
	}

	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, textResponse("It is sunny.", "STOP", nil))
	})
	req := providertest.BaseRequest()
	req.Tools = []llm.Tool{{Name: "weather"}, {Name: "clock"}}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "t2", Name: "clock", Arguments: "{}"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "t1", Content: "sunny"}, llm.Message{Role: llm.RoleTool, ToolCallID: "t2", Content: "noon"})
	resp, err := f.client(t).Generate(context.Background(), req)
	if err != nil || resp.Text != "It is sunny." || resp.FinishReason != "stop" {
		t.Fatalf("%+v, %v", resp, err)
	}
	contents := f.Requests()[0].JSON(t)["contents"].([]any)
	calls := contents[3].(map[string]any)["parts"].([]any)
	results := contents[4].(map[string]any)["parts"].([]any)
	if len(contents) != 5 || len(calls) != 2 || !reflect.DeepEqual(calls[0], map[string]any{"functionCall": map[string]any{"id": "t1", "name": "weather", "args": map[string]any{"city": "Oslo"}}}) ||
		len(results) != 2 || !reflect.DeepEqual(results[1], map[string]any{"functionResponse": map[string]any{"id": "t2", "name": "clock", "response": map[string]any{"output": "noon"}}}) {
		t.Errorf("contents %s", f.Requests()[0].Body)
	}
}

// TestToolsRefused: what Gemini cannot take is refused before anything is
// sent, naming it: one tool call at a time, a result of no call, a call
// whose arguments are not an object.
func TestToolsRefused(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { t.Error("request sent") })
	no := false
	for _, tc := range []struct {
		change func(*llm.Request)
		param  string
	}{
		{func(r *llm.Request) { r.Tools, r.ParallelToolCalls = []llm.Tool{{Name: "weather"}}, &no }, "parallel_tool_calls"},
		{func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "x"})
		}, "tools"},
		{func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: "[]"}}})
		}, "tools"},
	} {
		req := providertest.BaseRequest()
		tc.change(req)
		_, err := f.client(t).Generate(context.Background(), req)
		if e := asLLMError(t, err); e.Param != tc.param {
			t.Errorf("%+v, want param %s", e, tc.param)
		}
	}
}
