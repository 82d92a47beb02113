package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// testKey is the API key the tests use; it must never show in an error.
const testKey = "AIzaTEST-secret-key-0123456789"

// recorded is one request as the fake server received it.
type recorded struct {
	Method string
	Path   string
	Query  string
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

// fakeGemini is an in-process server speaking the Gemini API's wire
// protocol: POST /v1beta/models/{model}:generateContent with a JSON reply
// and POST /v1beta/models/{model}:streamGenerateContent?alt=sse with
// "data: {...}" events. Each test supplies the handler that shapes the reply
// (and injects faults).
type fakeGemini struct {
	srv     *httptest.Server
	handler func(w http.ResponseWriter, r *http.Request)
	// release is closed at the end of the test to free blocked handlers.
	release chan struct{}

	mu   sync.Mutex
	reqs []recorded
}

func newFake(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *fakeGemini {
	t.Helper()
	f := &fakeGemini{handler: handler, release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.release) }) // runs before srv.Close
	return f
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	f.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") ||
		!(strings.HasSuffix(r.URL.Path, ":generateContent") || strings.HasSuffix(r.URL.Path, ":streamGenerateContent")) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such method "+r.URL.Path)
		return
	}
	if r.Header.Get("x-goog-api-key") != testKey {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "missing or wrong API key")
		return
	}
	f.handler(w, r)
}

// requests returns what the server has received so far.
func (f *fakeGemini) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// client returns a Client pointed at the fake server.
func (f *fakeGemini) client(t *testing.T) *Client {
	t.Helper()
	c, err := New(context.Background(), Config{APIKey: testKey, BaseURL: f.srv.URL, HTTPClient: f.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes a Google API error body.
func writeError(w http.ResponseWriter, status int, code, msg string, details ...map[string]any) {
	e := map[string]any{"code": status, "message": msg, "status": code}
	if len(details) > 0 {
		e["details"] = details
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// sse starts an SSE response and returns a function that sends one event.
func sse(w http.ResponseWriter) func(v any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	return func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		fl.Flush()
	}
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

// textResponse is a generateContent response (or stream chunk) with text,
// and finish reason and usage when they are not empty.
func textResponse(text, finish string, usage map[string]any) map[string]any {
	cand := map[string]any{
		"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
		"index":   0,
	}
	if finish != "" {
		cand["finishReason"] = finish
	}
	r := map[string]any{
		"candidates":   []any{cand},
		"modelVersion": "gemini-2.5-flash-001",
		"responseId":   "resp-1",
	}
	if usage != nil {
		r["usageMetadata"] = usage
	}
	return r
}
