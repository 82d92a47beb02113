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

// TestToolCalls: a request's tools go out as Anthropic's tools (their
// input schemas as given), its tool choice as auto, any, tool or none with
// disable_parallel_tool_use for parallel_tool_calls false; the reply's
// tool_use blocks are its tool calls, plain and streamed; calls and their
// results in the conversation go back as tool_use blocks and one user
// message of tool_result blocks.
func TestToolCalls(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
			call := map[string]any{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": map[string]any{"city": "Oslo"}}
			if !stream {
				writeJSON(w, http.StatusOK, message("tool_use", 20, 9, textBlock("Looking."), call))
				return
			}
			send := sse(w)
			streamStart(send, 20)
			send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": textBlock("")})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Looking."}})
			send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			call["input"] = map[string]any{}
			send("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": call})
			for _, p := range []string{`{"city"`, `: "Oslo"}`} {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
			send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1})
			streamEnd(send, "tool_use", 9)
		})
		no := false
		req := providertest.BaseRequest()
		req.Tools = []llm.Tool{{Name: "weather", Description: "The weather", Parameters: json.RawMessage(ideaSchema)}, {Name: "clock"}}
		req.ToolChoice, req.ParallelToolCalls = &llm.ToolChoice{Mode: llm.ToolRequired}, &no
		var deltas strings.Builder
		if stream {
			req.OnDelta = func(s string) { deltas.WriteString(s) }
		}
		resp, err := f.client().Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "toolu_1" || resp.ToolCalls[0].Name != "weather" || resp.ToolCalls[0].Arguments != `{"city":"Oslo"}` && resp.ToolCalls[0].Arguments != `{"city": "Oslo"}` ||
			resp.FinishReason != llm.FinishToolCalls || resp.Text != "Looking." || (stream && deltas.String() != "Looking.") {
			t.Errorf("stream %v: %+v (deltas %q)", stream, resp, deltas.String())
		}
		body := f.Requests()[0].JSON(t)
		tools, _ := body["tools"].([]any)
		var wantSchema any
		_ = json.Unmarshal([]byte(ideaSchema), &wantSchema)
		if len(tools) != 2 || !reflect.DeepEqual(tools[0].(map[string]any)["input_schema"], wantSchema) || tools[0].(map[string]any)["description"] != "The weather" ||
			!reflect.DeepEqual(tools[1].(map[string]any)["input_schema"], map[string]any{"type": "object", "properties": map[string]any{}}) {
			t.Errorf("tools %#v", body["tools"])
		}
		if want := map[string]any{"type": "any", "disable_parallel_tool_use": true}; !reflect.DeepEqual(body["tool_choice"], want) {
			t.Errorf("tool_choice %#v", body["tool_choice"])
		}
	}

	// The choices, and a conversation with calls and results.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) {
		writeJSON(w, http.StatusOK, message("end_turn", 5, 2, textBlock("It is sunny.")))
	})
	for _, tc := range []struct {
		choice *llm.ToolChoice
		want   map[string]any
	}{
		{&llm.ToolChoice{Mode: llm.ToolAuto}, map[string]any{"type": "auto"}},
		{&llm.ToolChoice{Mode: llm.ToolNone}, map[string]any{"type": "none"}},
		{&llm.ToolChoice{Mode: llm.ToolRequired, Name: "clock"}, map[string]any{"type": "tool", "name": "clock"}},
	} {
		req := providertest.BaseRequest()
		req.Tools, req.ToolChoice = []llm.Tool{{Name: "weather"}, {Name: "clock"}}, tc.choice
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleUser, Content: "weather and time?"},
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "t2", Name: "clock", Arguments: "{}"}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: "t1", Content: "sunny"}, llm.Message{Role: llm.RoleTool, ToolCallID: "t2", Content: "noon"})
		resp, err := f.client().Generate(context.Background(), req)
		if err != nil || resp.Text != "It is sunny." || resp.FinishReason != "end_turn" {
			t.Fatalf("%+v, %v", resp, err)
		}
		reqs := f.Requests()
		body := reqs[len(reqs)-1].JSON(t)
		if !reflect.DeepEqual(body["tool_choice"], tc.want) {
			t.Errorf("tool_choice %#v, want %#v", body["tool_choice"], tc.want)
		}
		msgs := body["messages"].([]any)
		assistant, results := msgs[len(msgs)-2].(map[string]any), msgs[len(msgs)-1].(map[string]any)
		blocks, rblocks := assistant["content"].([]any), results["content"].([]any)
		if len(msgs) != 6 || len(blocks) != 2 || blocks[0].(map[string]any)["type"] != "tool_use" || blocks[0].(map[string]any)["id"] != "t1" ||
			!reflect.DeepEqual(blocks[0].(map[string]any)["input"], map[string]any{"city": "Oslo"}) || results["role"] != "user" || len(rblocks) != 2 ||
			rblocks[1].(map[string]any)["tool_use_id"] != "t2" {
			t.Errorf("messages %s", reqs[len(reqs)-1].Body)
		}
	}
}

// TestToolsRefused: tools with a JSON schema, which Anthropic's structured
// output (a forced tool) cannot take with them, or a tool call whose
// arguments are not an object, are refused before anything is sent,
// naming tools.
func TestToolsRefused(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, stream bool) { t.Error("request sent") })
	for _, change := range []func(*llm.Request){
		func(r *llm.Request) {
			r.Tools, r.Schema = []llm.Tool{{Name: "weather"}}, &llm.Schema{Name: "idea", JSON: []byte(ideaSchema)}
		},
		func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: "[1]"}}})
		},
		func(r *llm.Request) {
			r.Tools = []llm.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"string"}`)}}
		},
	} {
		req := providertest.BaseRequest()
		change(req)
		_, err := f.client().Generate(context.Background(), req)
		if e := asLLMError(t, err); e.Param != "tools" {
			t.Errorf("%+v", e)
		}
	}
}
