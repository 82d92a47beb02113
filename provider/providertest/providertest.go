// Package providertest is what the tests of the provider packages share:
// an in-process server that records what a client sends and answers as
// each test says (faults included), and the checks every provider's client
// must pass on its own wire protocol (Run): a cancelled call, a deadline, a
// role it cannot send, a refused connection, no API key in any error.
package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

// Request is one request as a Server received it.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// JSON decodes the request's body, failing t if it is not a JSON object.
func (r Request) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return m
}

// Server is an in-process HTTP server that records the requests it
// receives and answers each with its handler.
type Server struct {
	*httptest.Server
	// Release is closed when the test ends, before the server closes, to
	// free handlers that block.
	Release chan struct{}

	mu   sync.Mutex
	reqs []Request
}

// NewServer starts a Server answering with handler, which finds the body
// read into the Request recorded (and r.Body empty); it closes when t ends.
func NewServer(t testing.TB, handler func(w http.ResponseWriter, r *http.Request, body []byte)) *Server {
	t.Helper()
	s := &Server{Release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		handler(w, r, body)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.Release) }) // runs before Close
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Block waits until the request's client gives up or the test ends.
func (s *Server) Block(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.Release:
	}
}

// WriteJSON writes v as a JSON response with status and contentType.
func WriteJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// SSE starts a response of server-sent events and returns a function that
// sends one, as it is, and flushes it.
func SSE(w http.ResponseWriter) func(event string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	return func(event string) {
		_, _ = io.WriteString(w, event)
		fl.Flush()
	}
}

// HangUp drops the connection without finishing the response, as a
// network failure would.
func HangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// BaseRequest is a request of a system prompt and three messages.
func BaseRequest() *llm.Request {
	return &llm.Request{
		Agent:  "test.agent",
		System: "You are terse.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Hi"},
			{Role: llm.RoleAssistant, Content: "Hello."},
			{Role: llm.RoleUser, Content: "Say hello again."},
		},
		Temperature: 0.25,
		MaxTokens:   100,
	}
}

// LLMError returns err as an *llm.Error of provider, failing t if it is not
// one or if it carries key.
func LLMError(t *testing.T, err error, provider, key string) *llm.Error {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error")
	}
	NoKey(t, err, key)
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not an *llm.Error: %v", err, err)
	}
	if e.Provider != provider {
		t.Errorf("Provider = %q, want %q", e.Provider, provider)
	}
	return e
}

// NoKey fails t if key appears in err or the errors it wraps, printed in
// any way.
func NoKey(t *testing.T, err error, key string) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, key) {
				t.Fatalf("API key leaked in error: %s", s)
			}
		}
	}
}

// Harness is a provider's client and its test server.
type Harness struct {
	// Provider is the name the client's errors carry; Key the API key it
	// sends, which no error may carry.
	Provider, Key string
	// Serve starts the provider's test server, which answers, once it has
	// checked a request as the provider does, with handler, and returns it
	// with a client of it.
	Serve func(t *testing.T, handler http.HandlerFunc) (*Server, llm.Client)
	// StreamStart begins a streamed reply on w with the provider's first
	// events.
	StreamStart func(w http.ResponseWriter)
}

// Run runs the checks every provider's client must pass as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Run("ContextCanceled", func(t *testing.T) { forStreams(t, h.contextCanceled) })
	t.Run("DeadlineExceeded", h.deadlineExceeded)
	t.Run("UnknownRole", h.unknownRole)
	t.Run("ConnectionRefused", func(t *testing.T) { forStreams(t, h.connectionRefused) })
}

// forStreams runs check as subtests with and without streaming.
func forStreams(t *testing.T, check func(t *testing.T, req *llm.Request, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			req := BaseRequest()
			if stream {
				req.OnDelta = func(string) {}
			}
			check(t, req, stream)
		})
	}
}

// contextCanceled: a call cancelled while the server answers ends with
// the context's error, which is not retryable.
func (h Harness) contextCanceled(t *testing.T, req *llm.Request, stream bool) {
	started := make(chan struct{})
	var s *Server
	s, c := h.Serve(t, func(w http.ResponseWriter, r *http.Request) {
		if stream {
			h.StreamStart(w)
		}
		close(started)
		s.Block(r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := c.Generate(ctx, req)
	e := LLMError(t, err, h.Provider, h.Key)
	if !errors.Is(err, context.Canceled) || e.Retryable || llm.IsRetryable(err) {
		t.Errorf("error = %+v, want context.Canceled, not retryable", e)
	}
}

// deadlineExceeded: a call whose deadline passes ends with the context's
// error, which is retryable.
func (h Harness) deadlineExceeded(t *testing.T) {
	var s *Server
	s, c := h.Serve(t, func(w http.ResponseWriter, r *http.Request) { s.Block(r) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Generate(ctx, BaseRequest())
	e := LLMError(t, err, h.Provider, h.Key)
	if !errors.Is(err, context.DeadlineExceeded) || !e.Retryable {
		t.Errorf("error = %+v, want context.DeadlineExceeded, retryable", e)
	}
}

// unknownRole: a message of a role the provider has no place for is
// refused before anything is sent, and asking again will not help.
func (h Harness) unknownRole(t *testing.T) {
	_, c := h.Serve(t, func(w http.ResponseWriter, r *http.Request) { t.Error("request sent") })
	req := BaseRequest()
	req.Messages = append(req.Messages, llm.Message{Role: "narrator", Content: "x"})
	_, err := c.Generate(context.Background(), req)
	if e := LLMError(t, err, h.Provider, h.Key); e.Retryable {
		t.Errorf("error = %+v, want not retryable", e)
	}
}

// connectionRefused: a server that is gone is a retryable error without a
// status, which names the URL but not the key (it is in a header).
func (h Harness) connectionRefused(t *testing.T, req *llm.Request, _ bool) {
	s, c := h.Serve(t, func(w http.ResponseWriter, r *http.Request) { t.Error("request served") })
	s.Close()
	_, err := c.Generate(context.Background(), req)
	if e := LLMError(t, err, h.Provider, h.Key); !e.Retryable || e.Status != 0 {
		t.Errorf("connection refused: %+v", e)
	}
}

// BrokenStream checks a streamed reply that handler breaks after the text
// "Hel": the call fails, retryable with status (0 for none), after "Hel"
// reached OnDelta, and the client did not ask again.
func (h Harness) BrokenStream(t *testing.T, handler http.HandlerFunc, status int) {
	t.Helper()
	s, c := h.Serve(t, handler)
	var deltas []string
	req := BaseRequest()
	req.OnDelta = func(d string) { deltas = append(deltas, d) }
	resp, err := c.Generate(context.Background(), req)
	if resp != nil {
		t.Errorf("response with error: %+v", resp)
	}
	if e := LLMError(t, err, h.Provider, h.Key); !e.Retryable || e.Status != status {
		t.Errorf("error = %+v, want retryable with status %d", e, status)
	}
	if len(deltas) == 0 || deltas[0] != "Hel" {
		t.Errorf("deltas = %q, want Hel first", deltas)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests reached the server, want 1 (the client asked again)", n)
	}
}
