package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/providertest"
)

var _ llm.Client = (*Client)(nil)

func TestGenerate(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		writeJSON(w, http.StatusOK, message("end_turn", 12, 5, textBlock("Hello"), textBlock(" again")))
	})
	resp, err := f.client().Generate(context.Background(), providertest.BaseRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Text: "Hello again", Provider: "anthropic", Model: "claude-test-1", FinishReason: "end_turn",
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 12, OutputTokens: 5},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}

	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := reqs[0].JSON(t)
	if body["model"] != DefaultModel || body["max_tokens"] != float64(100) || body["temperature"] != 0.25 {
		t.Errorf("body = %s", reqs[0].Body)
	}
	if _, ok := body["stream"]; ok {
		t.Errorf("non-streaming call sent stream: %v", body["stream"])
	}
	wantSystem := []any{map[string]any{"type": "text", "text": "You are terse."}}
	if !reflect.DeepEqual(body["system"], wantSystem) {
		t.Errorf("system = %#v", body["system"])
	}
	wantMessages := []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Hi"}}},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Hello."}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Say hello again."}}},
	}
	if !reflect.DeepEqual(body["messages"], wantMessages) {
		t.Errorf("messages = %#v", body["messages"])
	}
	if _, ok := body["tools"]; ok {
		t.Error("plain request sent tools")
	}
}

func TestGenerateDefaults(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		writeJSON(w, http.StatusOK, message("end_turn", 1, 1, textBlock("ok")))
	})
	req := providertest.BaseRequest()
	req.MaxTokens = 0
	req.Model = "claude-other"
	req.System = ""
	if _, err := f.client().Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	body := f.Requests()[0].JSON(t)
	if body["max_tokens"] != float64(DefaultMaxTokens) || body["model"] != "claude-other" {
		t.Errorf("body = %s", f.Requests()[0].Body)
	}
	if _, ok := body["system"]; ok {
		t.Error("empty system sent")
	}
}

func TestStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		if !stream {
			t.Error("stream not requested")
		}
		send := sse(w)
		streamStart(send, 9)
		streamText(send, 0, "Hel", "lo, ", "world")
		streamEnd(send, "end_turn", 6)
	})
	var deltas []string
	req := providertest.BaseRequest()
	req.OnDelta = func(d string) { deltas = append(deltas, d) }
	resp, err := f.client().Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hel", "lo, ", "world"}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	want := &llm.Response{
		Text: "Hello, world", Provider: "anthropic", Model: "claude-test-1", FinishReason: "end_turn",
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 9, OutputTokens: 6},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}
}

func TestLargeMaxTokensStreams(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		if !stream {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "expected a stream")
			return
		}
		send := sse(w)
		streamStart(send, 3)
		streamText(send, 0, "long ", "reply")
		streamEnd(send, "end_turn", 2)
	})
	req := providertest.BaseRequest()
	req.MaxTokens = 64000
	resp, err := f.client().Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "long reply" {
		t.Errorf("text = %q", resp.Text)
	}
}

const ideaSchema = `{"type":"object","properties":{"title":{"type":"string"},"score":{"type":"integer","minimum":0,"maximum":10}},"required":["title","score"],"additionalProperties":false}`

func TestStructured(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		writeJSON(w, http.StatusOK, message("tool_use", 20, 15, toolUseBlock("idea", map[string]any{"title": "Solar kettles", "score": 7})))
	})
	req := providertest.BaseRequest()
	req.Schema = &llm.Schema{Name: "idea", JSON: []byte(ideaSchema)}
	resp, err := f.client().Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(resp.Text), &got); err != nil || got["title"] != "Solar kettles" || got["score"] != float64(7) {
		t.Errorf("text = %s (%v)", resp.Text, err)
	}
	if resp.FinishReason != "tool_use" || resp.Usage.OutputTokens != 15 {
		t.Errorf("response = %+v", resp)
	}

	body := f.Requests()[0].JSON(t)
	tools, _ := body["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools = %#v", body["tools"])
	}
	tool := tools[0].(map[string]any)
	var wantSchema any
	_ = json.Unmarshal([]byte(ideaSchema), &wantSchema)
	if tool["name"] != "idea" || !reflect.DeepEqual(tool["input_schema"], wantSchema) {
		t.Errorf("tool = %#v\nwant input_schema %#v", tool, wantSchema)
	}
	if want := map[string]any{"type": "tool", "name": "idea"}; !reflect.DeepEqual(body["tool_choice"], want) {
		t.Errorf("tool_choice = %#v", body["tool_choice"])
	}
}

func TestStructuredStream(t *testing.T) {
	parts := []string{`{"title": "Sol`, `ar kettles", `, `"score": 7}`}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		send := sse(w)
		streamStart(send, 20)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": toolUseBlock("idea", map[string]any{})})
		for _, p := range parts {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		streamEnd(send, "tool_use", 15)
	})
	var deltas []string
	req := providertest.BaseRequest()
	req.Schema = &llm.Schema{Name: "idea", JSON: []byte(ideaSchema)}
	req.OnDelta = func(d string) { deltas = append(deltas, d) }
	resp, err := f.client().Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(parts, ""); resp.Text != want || strings.Join(deltas, "") != want {
		t.Errorf("text = %s, deltas = %q", resp.Text, deltas)
	}
	if !json.Valid([]byte(resp.Text)) {
		t.Errorf("text is not JSON: %s", resp.Text)
	}
}

func TestStructuredNonObject(t *testing.T) {
	const listSchema = `{"type":"array","items":{"$ref":"#/$defs/idea"},"$defs":{"idea":{"type":"string"}}}`
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		writeJSON(w, http.StatusOK, message("tool_use", 1, 1, toolUseBlock("ideas", map[string]any{"value": []string{"a", "b"}})))
	})
	req := providertest.BaseRequest()
	req.Schema = &llm.Schema{Name: "ideas", JSON: []byte(listSchema)}
	resp, err := f.client().Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `["a","b"]` {
		t.Errorf("text = %s", resp.Text)
	}
	tool := f.Requests()[0].JSON(t)["tools"].([]any)[0].(map[string]any)
	schema, _ := json.Marshal(tool["input_schema"])
	want := `{"$defs":{"idea":{"type":"string"}},"additionalProperties":false,"properties":{"value":{"items":{"$ref":"#/$defs/idea"},"type":"array"}},"required":["value"],"type":"object"}`
	if string(schema) != want {
		t.Errorf("input_schema = %s\nwant %s", schema, want)
	}
}

func TestStructuredNoToolCall(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		writeJSON(w, http.StatusOK, message("max_tokens", 1, 1, textBlock("I think")))
	})
	req := providertest.BaseRequest()
	req.Schema = &llm.Schema{Name: "idea", JSON: []byte(ideaSchema)}
	_, err := f.client().Generate(context.Background(), req)
	e := asLLMError(t, err)
	if e.Retryable || !strings.Contains(e.Message, "stop reason max_tokens") {
		t.Errorf("error = %+v", e)
	}
}

func TestRateLimited(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"date", map[string]string{"Retry-After": time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)}, 30 * time.Second},
		{"milliseconds", map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					writeError(w, http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
				})
				req := providertest.BaseRequest()
				if stream {
					req.OnDelta = func(string) {}
				}
				_, err := f.client().Generate(context.Background(), req)
				e := asLLMError(t, err)
				if e.Status != 429 || !e.Retryable || !llm.IsRetryable(err) {
					t.Errorf("error = %+v", e)
				}
				// An HTTP-date loses sub-second precision.
				if d := e.RetryAfter - tc.want; d > 0 || d < -1500*time.Millisecond {
					t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tc.want)
				}
				if n := len(f.Requests()); n != 1 {
					t.Errorf("%d requests reached the server, want 1 (SDK retried)", n)
				}
			})
		}
	}
}

func TestServerError(t *testing.T) {
	for _, tc := range []struct {
		status int
		typ    string
	}{{500, "api_error"}, {529, "overloaded_error"}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
				writeError(w, tc.status, tc.typ, "Internal server error")
			})
			_, err := f.client().Generate(context.Background(), providertest.BaseRequest())
			e := asLLMError(t, err)
			if e.Status != tc.status || !e.Retryable || e.RetryAfter != 0 {
				t.Errorf("error = %+v", e)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests reached the server, want 1 (SDK retried)", n)
			}
		})
	}
}

func TestBadRequest(t *testing.T) {
	const msg = "messages: roles must alternate between \"user\" and \"assistant\""
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		// x-should-retry: true would make the SDK retry if it could.
		w.Header().Set("X-Should-Retry", "true")
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg)
	})
	_, err := f.client().Generate(context.Background(), providertest.BaseRequest())
	e := asLLMError(t, err)
	if e.Status != 400 || e.Retryable || llm.IsRetryable(err) {
		t.Errorf("error = %+v", e)
	}
	if !strings.Contains(e.Message, msg) || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("error = %q", err.Error())
	}
	if n := len(f.Requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
	if u := errors.Unwrap(err); u == nil || !strings.Contains(u.Error(), "req_test") {
		t.Errorf("SDK detail (request ID) lost: %v", u)
	}
}

func TestStreamBroken(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, stream bool)
		status  int
	}{
		{"connection dropped", func(w http.ResponseWriter, r *http.Request, stream bool) {
			send := sse(w)
			streamStart(send, 9)
			send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": textBlock("")})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Hel"}})
			providertest.HangUp(w)
		}, 0},
		{"ended without message_stop", func(w http.ResponseWriter, r *http.Request, stream bool) {
			send := sse(w)
			streamStart(send, 9)
			streamText(send, 0, "Hel", "lo")
		}, 0},
		{"malformed event", func(w http.ResponseWriter, r *http.Request, stream bool) {
			send := sse(w)
			streamStart(send, 9)
			streamText(send, 0, "Hel")
			fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\": \"content_bl\n\n")
		}, 0},
		{"overloaded event", func(w http.ResponseWriter, r *http.Request, stream bool) {
			send := sse(w)
			streamStart(send, 9)
			streamText(send, 0, "Hel")
			send("error", errorEvent("overloaded_error", "Overloaded"))
		}, 529},
	} {
		t.Run(tc.name, func(t *testing.T) {
			harness().BrokenStream(t, func(w http.ResponseWriter, r *http.Request) { tc.handler(w, r, true) }, tc.status)
		})
	}
}

func TestAPIKeyNeverInError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		// Some APIs echo the key back; it must not survive into our error.
		writeError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key "+testKey)
	})
	_, err := f.client().Generate(context.Background(), providertest.BaseRequest())
	e := asLLMError(t, err)
	if e.Status != 401 || e.Retryable || !strings.Contains(e.Message, "[redacted]") {
		t.Errorf("error = %+v", e)
	}
}

func TestEmptyOrRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  map[string]any
		want string
	}{
		{"refusal", message("refusal", 1, 0, textBlock("I can't help with that")), "stop reason refusal"},
		{"empty", message("max_tokens", 1, 0), "empty reply: stop reason max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) { writeJSON(w, http.StatusOK, tc.msg) })
			_, err := f.client().Generate(context.Background(), providertest.BaseRequest())
			e := asLLMError(t, err)
			if e.Retryable || !strings.Contains(e.Message, tc.want) {
				t.Errorf("error = %+v, want %q", e, tc.want)
			}
		})
	}
}

// TestSamplingSettings: top_p and the stop sequences reach the wire; a
// seed, which the API has no place for, is an error before any call, not
// dropped.
func TestSamplingSettings(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		writeJSON(w, http.StatusOK, message("end_turn", 12, 5, textBlock("Hello")))
	})
	req := providertest.BaseRequest()
	topP := 0.4
	req.TopP, req.Stop = &topP, []string{"END"}
	if _, err := f.client().Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	body := f.Requests()[0].JSON(t)
	if body["top_p"] != 0.4 || !reflect.DeepEqual(body["stop_sequences"], []any{"END"}) {
		t.Errorf("body = %s", f.Requests()[0].Body)
	}
	seed := int64(3)
	req.Seed = &seed
	_, err := f.client().Generate(context.Background(), req)
	var le *llm.Error
	if !errors.As(err, &le) || le.Retryable || !strings.Contains(err.Error(), "seed") || len(f.Requests()) != 1 {
		t.Errorf("a seed: %v, %d requests", err, len(f.Requests()))
	}
}
