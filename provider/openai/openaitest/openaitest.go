// Package openaitest provides an in-process fake of the OpenAI Chat
// Completions API for tests: POST {base}/chat/completions answered with a
// chat.completion JSON object or, when the request asks to stream, with
// server-sent events ("data: {...}" chunks, a usage chunk when
// stream_options.include_usage is set, then "data: [DONE]"), byte for byte
// the shapes OpenAI sends, so that the official SDK and any other
// OpenAI-compatible client parse them.
//
// A test chooses the replies with a respond function and injects failures
// (HTTP errors, Retry-After, dropped connections, streams cut mid-way,
// delays) with Server.Inject:
//
//	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
//		return openaitest.Reply{Content: "hello", PromptTokens: 3, CompletionTokens: 1}
//	})
//	srv.Inject(openaitest.Fault{Status: 429, RetryAfter: "2"})
//	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test"})
package openaitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
)

// ChatRequest is a request as the server received it: the decoded JSON body
// of POST /v1/chat/completions plus its headers.
type ChatRequest struct {
	Model               string    `json:"model"`
	Messages            []Message `json:"messages"`
	Temperature         *float64  `json:"temperature,omitempty"`
	MaxTokens           *int      `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int      `json:"max_completion_tokens,omitempty"`
	TopP                *float64  `json:"top_p,omitempty"`
	Seed                *int64    `json:"seed,omitempty"`
	// Stop is the request's stop sequences, a lone string made a list of
	// one.
	Stop           Stop            `json:"stop,omitempty"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	Stream         bool            `json:"stream,omitempty"`
	StreamOptions  *StreamOptions  `json:"stream_options,omitempty"`
	// Tools are the request's tools; ToolChoice its tool_choice as sent
	// (a string or an object), ParallelToolCalls its
	// parallel_tool_calls.
	Tools             []Tool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`

	// Header holds the HTTP request headers, Authorization included.
	Header http.Header `json:"-"`
	// Body is the raw request body.
	Body []byte `json:"-"`
}

// System returns the content of the system (or developer) messages, joined
// by blank lines.
func (r *ChatRequest) System() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n\n")
}

// Prompt returns the content of the last message, or "" when there is none.
func (r *ChatRequest) Prompt() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// Tool is a function tool of a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	} `json:"function"`
}

// ToolCall is a function call, in a reply or in an assistant message of
// a request.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Call returns the ToolCall of function name with arguments.
func Call(id, name, arguments string) ToolCall {
	c := ToolCall{ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, arguments
	return c
}

// Message is one message of a ChatRequest.
type Message struct {
	Role string `json:"role"`
	// Content is the message text. Content sent as an array of parts has
	// the text of its text parts concatenated.
	Content string `json:"content"`
	// ToolCalls are an assistant message's calls; ToolCallID the call a
	// tool message answers.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// UnmarshalJSON accepts content as a string or as an array of content parts.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []ToolCall      `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	m.Role, m.Content, m.ToolCalls, m.ToolCallID = raw.Role, "", raw.ToolCalls, raw.ToolCallID
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	default:
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return fmt.Errorf("message content: %w", err)
		}
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		m.Content = b.String()
	}
	return nil
}

// Stop is a request's stop: a string or a list of strings.
type Stop []string

// UnmarshalJSON accepts a string or a list of strings.
func (s *Stop) UnmarshalJSON(data []byte) error {
	var one string
	if json.Unmarshal(data, &one) == nil {
		*s = Stop{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	*s = list
	return nil
}

// ResponseFormat is a request's response_format.
type ResponseFormat struct {
	// Type is "text", "json_object" or "json_schema".
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is response_format.json_schema.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict *bool           `json:"strict,omitempty"`
}

// StreamOptions is a request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Reply is the server's answer to one request.
type Reply struct {
	// Content is the reply text.
	Content string
	// Chunks, when not nil, are the content deltas of a streamed reply;
	// Content is then ignored for streams. When nil, Content is streamed
	// one word (with its trailing space) per chunk.
	Chunks []string
	// Interval, when positive, is the time between the content chunks of
	// a stream, as a model generates them (20ms for 50 tokens a second).
	Interval time.Duration
	// ToolCalls are the reply's tool calls, after its content. A stream
	// sends each as OpenAI does: a chunk with its index, ID, type and
	// name, then its arguments in pieces of ArgumentChunk bytes (all at
	// once when 0).
	ToolCalls     []ToolCall
	ArgumentChunk int
	// FinishReason is "stop" when empty ("tool_calls" with ToolCalls).
	FinishReason string
	// Model is the model reported; the requested model when empty.
	Model string
	// PromptTokens and CompletionTokens are reported as usage.
	PromptTokens, CompletionTokens int
	// Fault, when not nil, is applied instead of a normal reply (after
	// the fault's Delay, and with the reply above when the fault only
	// delays or truncates).
	Fault *Fault
}

// Fault is a failure the server injects into the answer to one request.
// The zero Fault answers normally.
type Fault struct {
	// Delay holds the answer back this long, or until the client gives up.
	Delay time.Duration
	// Drop closes the connection without sending a response.
	Drop bool
	// Status, when not zero, answers with this HTTP status and OpenAI's
	// error body: {"error":{"message":...,"type":...,"param":null,"code":...}}.
	Status int
	// Message is the error message in the body; a generic one when empty.
	Message string
	// Body, when not empty, replaces the whole body of the Status answer
	// and is sent as is (as application/json when it starts with "{").
	// With a 2xx Status it can serve malformed or unusual replies.
	Body string
	// RetryAfter is sent as the Retry-After header when not empty.
	RetryAfter string
	// Header holds more response headers, such as retry-after-ms.
	Header http.Header
	// TruncateStreamAfter, when positive, cuts the reply after that many
	// content chunks of a stream (or, for a plain JSON reply, part way
	// through the body): the connection is closed without a finish_reason
	// or "data: [DONE]".
	TruncateStreamAfter int
}

// Server is a fake OpenAI-compatible server. It is safe for concurrent use.
type Server struct {
	// URL is the API base URL, including "/v1", such as
	// "http://127.0.0.1:4242/v1".
	URL string

	srv     *httptest.Server
	respond func(*ChatRequest) Reply
	done    chan struct{}
	seq     atomic.Int64
	latency atomic.Int64 // time.Duration

	mu     sync.Mutex
	faults []Fault
	reqs   []*ChatRequest
	served Count
}

// Count is what a Server served, as a provider counts what it bills: the
// requests it answered in full (an error status included, a dropped
// connection or a client that went away not), and the tokens of the
// replies it sent whole.
type Count struct {
	Answered                       int
	PromptTokens, CompletionTokens int
}

// Served returns what the server has served so far.
func (s *Server) Served() Count {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// count adds an answer, with the tokens of reply when it was one.
func (s *Server) count(reply *Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served.Answered++
	if reply != nil {
		s.served.PromptTokens += reply.PromptTokens
		s.served.CompletionTokens += reply.CompletionTokens
	}
}

// NewServer starts a Server that answers each request with respond(req),
// and closes it when the test ends. respond is called from the server's
// goroutines, possibly concurrently. A nil respond answers "ok".
func NewServer(tb testing.TB, respond func(req *ChatRequest) Reply) *Server {
	tb.Helper()
	if respond == nil {
		respond = func(*ChatRequest) Reply { return Reply{Content: "ok"} }
	}
	s := &Server{respond: respond, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	tb.Cleanup(func() {
		close(s.done) // release handlers held by delays first
		s.srv.Close()
	})
	return s
}

// Inject queues faults. Each request takes the next queued fault, in order,
// until none is left; later requests are answered normally.
func (s *Server) Inject(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, faults...)
}

// Latency delays every answer by d, in addition to any Fault.Delay.
func (s *Server) Latency(d time.Duration) {
	s.latency.Store(int64(d))
}

// Requests returns every request received so far, in order of arrival,
// including those answered with a fault.
func (s *Server) Requests() []*ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*ChatRequest(nil), s.reqs...)
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client {
	return s.srv.Client()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, &Fault{Status: http.StatusNotFound, Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := &ChatRequest{}
	decodeErr := json.Unmarshal(body, req)
	req.Header = r.Header.Clone()
	req.Body = body

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	var fault *Fault
	if len(s.faults) > 0 {
		f := s.faults[0]
		s.faults = s.faults[1:]
		fault = &f
	}
	s.mu.Unlock()

	if !s.sleep(r.Context(), time.Duration(s.latency.Load())) {
		return
	}
	if decodeErr != nil {
		writeError(w, &Fault{Status: http.StatusBadRequest, Message: "We could not parse the JSON body of your request. (" + decodeErr.Error() + ")"})
		s.count(nil)
		return
	}
	var reply Reply
	if fault == nil || (fault.Status == 0 && !fault.Drop) {
		reply = s.respond(req)
		if fault == nil {
			fault = reply.Fault
		}
	}
	if fault == nil {
		fault = &Fault{}
	}
	if !s.sleep(r.Context(), fault.Delay) {
		return
	}
	if fault.Drop {
		panic(http.ErrAbortHandler)
	}
	if fault.Status != 0 {
		writeError(w, fault)
		s.count(nil)
		return
	}
	for k, vs := range fault.Header {
		w.Header()[http.CanonicalHeaderKey(k)] = vs
	}
	model := reply.Model
	if model == "" {
		model = req.Model
	}
	id := fmt.Sprintf("chatcmpl-test%d", s.seq.Add(1))
	if req.Stream {
		s.stream(r.Context(), w, req, reply, model, id, fault.TruncateStreamAfter)
	} else {
		s.plain(w, reply, model, id, fault.TruncateStreamAfter > 0)
	}
	// A reply cut short panics out of the handler before this.
	s.count(&reply)
}

// sleep waits d, or until the client goes away or the server closes; it
// reports whether the wait ran its course.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// usage is the wire form of a usage object.
type usage struct {
	PromptTokens            int            `json:"prompt_tokens"`
	CompletionTokens        int            `json:"completion_tokens"`
	TotalTokens             int            `json:"total_tokens"`
	PromptTokensDetails     map[string]int `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]int `json:"completion_tokens_details"`
}

func usageOf(r Reply) *usage {
	return &usage{
		PromptTokens:            r.PromptTokens,
		CompletionTokens:        r.CompletionTokens,
		TotalTokens:             r.PromptTokens + r.CompletionTokens,
		PromptTokensDetails:     map[string]int{"cached_tokens": 0, "audio_tokens": 0},
		CompletionTokensDetails: map[string]int{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
}

func finishReason(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// plain writes a chat.completion object.
func (s *Server) plain(w http.ResponseWriter, reply Reply, model, id string, truncate bool) {
	out := map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       messageOf(reply),
			"logprobs":      nil,
			"finish_reason": finishReason(reply),
		}},
		"usage":              usageOf(reply),
		"service_tier":       "default",
		"system_fingerprint": "fp_openaitest",
	}
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if truncate {
		_, _ = w.Write(b[:len(b)/2])
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	_, _ = w.Write(b)
}

// messageOf is the message of a plain reply: content null when the reply
// only calls tools, as OpenAI sends it.
func messageOf(reply Reply) map[string]any {
	m := map[string]any{"role": "assistant", "content": reply.Content, "refusal": nil, "annotations": []any{}}
	if len(reply.ToolCalls) > 0 {
		m["tool_calls"] = reply.ToolCalls
		if reply.Content == "" {
			m["content"] = nil
		}
	}
	return m
}

// stream writes a reply as OpenAI streams it: a first chunk with the role,
// one chunk per content delta, a chunk with the finish_reason, a usage
// chunk when asked for, and [DONE].
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, req *ChatRequest, reply Reply, model, id string, truncateAfter int) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	created := time.Now().Unix()
	send := func(choices []any, u *usage) {
		chunk := map[string]any{
			"id":                 id,
			"object":             "chat.completion.chunk",
			"created":            created,
			"model":              model,
			"service_tier":       "default",
			"system_fingerprint": "fp_openaitest",
			"choices":            choices,
		}
		if includeUsage {
			// OpenAI sends "usage": null on every chunk but the last.
			chunk["usage"] = u
		}
		b, _ := json.Marshal(chunk)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
	}

	send(choice(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil), nil)
	chunks := reply.Chunks
	if chunks == nil {
		chunks = splitWords(reply.Content)
	}
	for i, c := range chunks {
		if truncateAfter > 0 && i == truncateAfter {
			panic(http.ErrAbortHandler)
		}
		if i > 0 && reply.Interval > 0 && !s.sleep(ctx, reply.Interval) {
			return
		}
		send(choice(map[string]any{"content": c}, nil), nil)
	}
	if truncateAfter > 0 {
		panic(http.ErrAbortHandler)
	}
	for i, tc := range reply.ToolCalls {
		send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": ""}}}}, nil), nil)
		args := tc.Function.Arguments
		for len(args) > 0 {
			n := len(args)
			if reply.ArgumentChunk > 0 && reply.ArgumentChunk < n {
				n = reply.ArgumentChunk
			}
			send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": args[:n]}}}}, nil), nil)
			args = args[n:]
		}
	}
	send(choice(map[string]any{}, finishReason(reply)), nil)
	if includeUsage {
		send([]any{}, usageOf(reply))
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// splitWords splits s into words, each with the white space that follows
// it; leading white space stays with the first word.
func splitWords(s string) []string {
	var out []string
	start := 0
	inSpace, word := false, false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		if !sp && inSpace && word {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = sp
		word = word || !sp
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// writeError answers with f.Status and f.Body, or OpenAI's error body.
func writeError(w http.ResponseWriter, f *Fault) {
	for k, vs := range f.Header {
		w.Header()[http.CanonicalHeaderKey(k)] = vs
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	body := []byte(f.Body)
	if f.Body == "" {
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("openaitest: injected HTTP %d (%s)", f.Status, http.StatusText(f.Status))
		}
		typ, code := "invalid_request_error", any(nil)
		switch {
		case f.Status == http.StatusUnauthorized:
			code = "invalid_api_key"
		case f.Status == http.StatusTooManyRequests:
			typ, code = "requests", "rate_limit_exceeded"
		case f.Status >= 500:
			typ = "server_error"
		}
		body, _ = json.Marshal(map[string]any{"error": map[string]any{
			"message": msg, "type": typ, "param": nil, "code": code,
		}})
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(f.Status)
	_, _ = w.Write(body)
}
