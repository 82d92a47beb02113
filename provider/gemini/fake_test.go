package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/providertest"
)

// testKey is the API key the tests use; it must never show in an error.
const testKey = "AIzaTEST-secret-key-0123456789"

// asLLMError returns err as an *llm.Error, failing the test if it is not
// one or if it carries the API key.
func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	return providertest.LLMError(t, err, Name, testKey)
}

// fakeGemini is an in-process server speaking the Gemini API's wire
// protocol: POST /v1beta/models/{model}:generateContent with a JSON reply
// and POST /v1beta/models/{model}:streamGenerateContent?alt=sse with
// "data: {...}" events. Each test supplies the handler that shapes the reply
// (and injects faults).
type fakeGemini struct{ *providertest.Server }

func newFake(t *testing.T, handler http.HandlerFunc) *fakeGemini {
	t.Helper()
	return &fakeGemini{providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") ||
			!(strings.HasSuffix(r.URL.Path, ":generateContent") || strings.HasSuffix(r.URL.Path, ":streamGenerateContent")) {
			writeError(w, http.StatusNotFound, "NOT_FOUND", "no such method "+r.URL.Path)
			return
		}
		if r.Header.Get("x-goog-api-key") != testKey {
			writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "missing or wrong API key")
			return
		}
		handler(w, r)
	})}
}

// client returns a Client pointed at the fake server.
func (f *fakeGemini) client(t *testing.T) *Client {
	t.Helper()
	c, err := New(context.Background(), Config{APIKey: testKey, BaseURL: f.URL, HTTPClient: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	providertest.WriteJSON(w, status, "application/json; charset=UTF-8", v)
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
	send := providertest.SSE(w)
	return func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		send(fmt.Sprintf("data: %s\r\n\r\n", b))
	}
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

// harness is the client and the fake server as the checks all providers
// share see them.
func harness() providertest.Harness {
	return providertest.Harness{Provider: Name, Key: testKey,
		Serve: func(t *testing.T, h http.HandlerFunc) (*providertest.Server, llm.Client) {
			f := newFake(t, h)
			return f.Server, f.client(t)
		},
		StreamStart: func(w http.ResponseWriter) { sse(w)(textResponse("Hel", "", nil)) }}
}

// TestCommon runs the checks every provider's client must pass.
func TestCommon(t *testing.T) { providertest.Run(t, harness()) }
