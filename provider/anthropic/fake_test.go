package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// testKey is the API key the tests use; it must never show in an error.
const testKey = "sk-ant-TEST-secret-key-0123456789"

// recorded is one request as the fake server received it.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the recorded body.
func (r recorded) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return m
}

// fakeAnthropic is an in-process server speaking the Messages API's wire
// protocol: POST /v1/messages answered with a JSON message, or, when the
// body has "stream": true, with SSE events message_start,
// content_block_start, content_block_delta, content_block_stop,
// message_delta and message_stop. Each test supplies the handler that shapes
// the reply (and injects faults).
type fakeAnthropic struct {
	srv     *httptest.Server
	handler func(w http.ResponseWriter, r *http.Request, stream bool)
	// release is closed at the end of the test to free blocked handlers.
	release chan struct{}

	mu   sync.Mutex
	reqs []recorded
}

func newFake(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, stream bool)) *fakeAnthropic {
	t.Helper()
	f := &fakeAnthropic{handler: handler, release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.release) }) // runs before srv.Close
	return f
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	f.mu.Unlock()
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
	f.handler(w, r, req.Stream)
}

// requests returns what the server has received so far.
func (f *fakeAnthropic) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// client returns a Client pointed at the fake server.
func (f *fakeAnthropic) client() *Client {
	return New(Config{APIKey: testKey, BaseURL: f.srv.URL, HTTPClient: f.srv.Client()})
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_test")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
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
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	return func(event string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		fl.Flush()
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

// hangUp drops the connection without finishing the response, as a network
// failure would.
func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}
