package anthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/providertest"
)

// testKey is the API key the tests use; it must never show in an error.
const testKey = "sk-ant-TEST-secret-key-0123456789"

// asLLMError returns err as an *llm.Error, failing the test if it is not
// one or if it carries the API key.
func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	return providertest.LLMError(t, err, Name, testKey)
}

// fakeAnthropic is an in-process server speaking the Messages API's wire
// protocol: POST /v1/messages answered with a JSON message, or, when the
// body has "stream": true, with SSE events message_start,
// content_block_start, content_block_delta, content_block_stop,
// message_delta and message_stop. Each test supplies the handler that shapes
// the reply (and injects faults).
type fakeAnthropic struct{ *providertest.Server }

func newFake(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, stream bool)) *fakeAnthropic {
	t.Helper()
	return &fakeAnthropic{providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			writeError(w, http.StatusNotFound, "not_found_error", "Not found")
			return
		}
		if r.Header.Get("X-Api-Key") != testKey {
			writeError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
			return
		}
		if r.Header.Get("Anthropic-Version") == "" {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version header is required")
			return
		}
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		handler(w, r, req.Stream)
	})}
}

// client returns a Client pointed at the fake server.
func (f *fakeAnthropic) client() *Client {
	return New(Config{APIKey: testKey, BaseURL: f.URL, HTTPClient: f.Client()})
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Request-Id", "req_test")
	providertest.WriteJSON(w, status, "application/json", v)
}

// writeError writes an Anthropic API error body.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, errorEvent(typ, msg))
}

func errorEvent(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// message is a complete Messages API reply.
func message(stop string, in, out int, content ...any) map[string]any {
	return map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test-1",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out},
	}
}

func textBlock(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

func toolUseBlock(name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": "toolu_test", "name": name, "input": input}
}

// sse starts an SSE response and returns a function that sends one event.
func sse(w http.ResponseWriter) func(event string, data any) {
	send := providertest.SSE(w)
	return func(event string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		send(fmt.Sprintf("event: %s\ndata: %s\n\n", event, b))
	}
}

// streamStart sends message_start and a ping.
func streamStart(send func(string, any), in int) {
	msg := message("", in, 1)
	msg["stop_reason"] = nil
	msg["content"] = []any{}
	send("message_start", map[string]any{"type": "message_start", "message": msg})
	send("ping", map[string]any{"type": "ping"})
}

// streamText sends a text block at index with the given deltas.
func streamText(send func(string, any), index int, deltas ...string) {
	send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": textBlock("")})
	for _, d := range deltas {
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": d}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
}

// streamEnd sends message_delta and message_stop.
func streamEnd(send func(string, any), stop string, out int) {
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// harness is the client and the fake server as the checks all providers
// share see them.
func harness() providertest.Harness {
	return providertest.Harness{Provider: Name, Key: testKey,
		Serve: func(t *testing.T, h http.HandlerFunc) (*providertest.Server, llm.Client) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ bool) { h(w, r) })
			return f.Server, f.client()
		},
		StreamStart: func(w http.ResponseWriter) { streamStart(sse(w), 1) }}
}

// TestCommon runs the checks every provider's client must pass.
func TestCommon(t *testing.T) { providertest.Run(t, harness()) }
