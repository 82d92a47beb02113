package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// chatRequest is the body of POST /v1/chat/completions as OpenAI defines
// it. Fields madspark does not use are accepted when ignoring them cannot
// change the answer; any other field is refused, or applied.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Temperature         *float64        `json:"temperature"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	N                   *int            `json:"n"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	User                string          `json:"user"`
	Seed                *int64          `json:"seed"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	ResponseFormat      *wireFormat     `json:"response_format"`

	// Fields that OpenAI clients and frameworks send by default and that
	// do not change the answer madspark gives: accepted and ignored.
	// Values that would change it (a required tool call, log
	// probabilities, penalties) are refused by name.
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	Functions         json.RawMessage `json:"functions"`
	FunctionCall      json.RawMessage `json:"function_call"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Logprobs          *bool           `json:"logprobs"`
	TopLogprobs       *int            `json:"top_logprobs"`
	LogitBias         json.RawMessage `json:"logit_bias"`
	Store             *bool           `json:"store"`
	Metadata          json.RawMessage `json:"metadata"`
	ServiceTier       string          `json:"service_tier"`
	ReasoningEffort   string          `json:"reasoning_effort"`
	Modalities        json.RawMessage `json:"modalities"`
	Prediction        json.RawMessage `json:"prediction"`
	SafetyIdentifier  string          `json:"safety_identifier"`
	PromptCacheKey    string          `json:"prompt_cache_key"`
	Verbosity         string          `json:"verbosity"`
}

// nonEmptyList reports whether raw is a JSON array with at least one item.
func nonEmptyList(raw json.RawMessage) bool {
	var list []json.RawMessage
	return json.Unmarshal(raw, &list) == nil && len(list) > 0
}

// nonEmptyObject reports whether raw is a JSON object with a member.
func nonEmptyObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && len(obj) > 0
}

// forcesCall reports whether a tool_choice (or function_call) value asks
// for a call: "required", or an object naming a tool.
func forcesCall(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == "required"
	}
	return raw[0] == '{'
}

type streamOptions struct {
	IncludeUsage       bool `json:"include_usage"`
	IncludeObfuscation bool `json:"include_obfuscation"` // ignored
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

// The response types: a chat.completion object, the usage chunk of a
// stream (the other chunks are written by chunker) and an error.
type (
	chatCompletion struct {
		ID       string     `json:"id"`
		Object   string     `json:"object"`
		Created  int64      `json:"created"`
		Model    string     `json:"model"`
		Choices  []choice   `json:"choices"`
		Usage    *wireUsage `json:"usage,omitempty"`
		Madspark *extension `json:"madspark,omitempty"`
	}
	choice struct {
		Index        int      `json:"index"`
		Message      *message `json:"message,omitempty"`
		Logprobs     any      `json:"logprobs"`      // always null
		FinishReason *string  `json:"finish_reason"` // null in chunks until the last
	}
	message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	wireUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
		// PromptTokensDetails.CachedTokens are the prompt tokens of calls
		// the response cache answered: not paid for again.
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	// extension is madspark's own addition to a completion.
	extension struct {
		RunID       string `json:"run_id,omitempty"`
		LLMCalls    int    `json:"llm_calls"`
		CachedCalls int    `json:"cached_calls"`
		// CostUSD is null when a model has no known price (Priced false).
		CostUSD *float64 `json:"cost_usd"`
		Priced  bool     `json:"priced"`
	}
	errorBody struct {
		Error wireError `json:"error"`
	}
	wireError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
)

// requestError is a client error, reported as a 4xx invalid_request_error.
type requestError struct {
	status      int
	code, param string
	msg         string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(param, format string, a ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, param: param, msg: fmt.Sprintf(format, a...)}
}

func modelNotFound(id string, served []string) *requestError {
	return &requestError{status: http.StatusNotFound, code: "model_not_found", param: "model",
		msg: fmt.Sprintf("model %q does not exist; this server has %s", id, strings.Join(served, ", "))}
}

// panicError is a Model.Complete that panicked.
type panicError struct{ val any }

func (e *panicError) Error() string { return fmt.Sprintf("model panicked: %v", e.val) }

// readBody reads a request's body, bounded by Config.MaxBodyBytes, and
// checks that it is UTF-8.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &requestError{status: http.StatusRequestEntityTooLarge, code: "request_too_large",
				msg: fmt.Sprintf("request body is larger than %d bytes", s.cfg.MaxBodyBytes)}
		}
		return nil, badRequest("", "could not read the request body")
	}
	if !utf8.Valid(body) {
		return nil, badRequest("", "request body is not valid UTF-8")
	}
	return body, nil
}

// decode reads and validates a chat request: the prompt it makes, the
// model it asks, and the settings it gives, which that model must apply.
func (s *Server) decode(w http.ResponseWriter, r *http.Request) (*chatRequest, Prompt, Model, error) {
	var p Prompt
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, p, nil, err
	}
	var req chatRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, p, nil, err
	}
	fail := func(err error) (*chatRequest, Prompt, Model, error) { return &req, p, nil, err }
	switch {
	case req.Model == "":
		return fail(badRequest("model", "model is required"))
	case len(req.Messages) == 0:
		return fail(badRequest("messages", "messages must not be empty"))
	case req.N != nil && *req.N != 1:
		return fail(badRequest("n", "only n=1 is supported, got n=%d", *req.N))
	case req.StreamOptions != nil && !req.Stream:
		return fail(badRequest("stream_options", "stream_options is only allowed with stream true"))
	case nonEmptyList(req.Tools) && forcesCall(req.ToolChoice):
		return fail(badRequest("tool_choice", "tool_choice requires a tool call, but this server answers without calling tools; leave tool_choice unset, \"auto\" or \"none\""))
	case nonEmptyList(req.Functions) && forcesCall(req.FunctionCall):
		return fail(badRequest("function_call", "function_call requires a function call, but this server answers without calling functions"))
	case req.Logprobs != nil && *req.Logprobs:
		return fail(badRequest("logprobs", "logprobs is not supported; leave it unset or false"))
	case req.PresencePenalty != nil && *req.PresencePenalty != 0:
		return fail(badRequest("presence_penalty", "presence_penalty is not supported; leave it unset or 0"))
	case req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0:
		return fail(badRequest("frequency_penalty", "frequency_penalty is not supported; leave it unset or 0"))
	case nonEmptyObject(req.LogitBias):
		return fail(badRequest("logit_bias", "logit_bias is not supported; leave it unset or empty"))
	}
	var g given
	smp := sampling{temperature: req.Temperature, topP: req.TopP, maxTokens: req.MaxTokens, maxTokensParam: "max_tokens"}
	if req.MaxCompletionTokens != nil { // the newer name wins
		smp.maxTokens, smp.maxTokensParam = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if err := smp.apply(&p, &g); err != nil {
		return fail(err)
	}
	if p.Stop, err = stopOf(req.Stop); err != nil {
		return fail(err)
	}
	if p.Stop != nil {
		g.add(SettingStop, "stop")
	}
	if req.Seed != nil {
		p.Seed = req.Seed
		g.add(SettingSeed, "seed")
	}
	if p.Format, err = formatOf(req.ResponseFormat, "response_format", true); err != nil {
		return fail(err)
	}
	if p.Format != nil {
		g.add(SettingFormat, "response_format")
	}
	m, ok := s.models[req.Model]
	if !ok {
		return fail(modelNotFound(req.Model, s.order))
	}
	var system []string
	for i, msg := range req.Messages {
		field := fmt.Sprintf("messages[%d].content", i)
		text, err := messageText(msg.Content)
		if err != nil {
			return fail(badRequest(field, "%s: %v", field, err))
		}
		if err := input.Text(field, text); err != nil {
			return fail(badRequest(field, "%v", err))
		}
		switch msg.Role {
		case "system", "developer":
			if len(system) == 0 {
				g.add(SettingSystem, fmt.Sprintf("messages[%d]", i))
			}
			system = append(system, text)
		case "user":
			p.Messages = append(p.Messages, llm.Message{Role: llm.RoleUser, Content: text})
		case "assistant":
			p.Messages = append(p.Messages, llm.Message{Role: llm.RoleAssistant, Content: text})
		default:
			return fail(badRequest(fmt.Sprintf("messages[%d].role", i),
				"messages[%d].role %q is not supported (want system, developer, user or assistant)", i, msg.Role))
		}
	}
	p.System = systemText(system)
	if strings.TrimSpace(p.Query()) == "" {
		return fail(badRequest("messages", "messages must include a user message with content"))
	}
	if err := g.check(m); err != nil {
		return fail(err)
	}
	return &req, p, m, nil
}

// decodeStrict decodes body into v as one JSON object with no unknown
// fields.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			return badRequest(te.Field, "%s must be %s, not %s", te.Field, structured.KindOf(te.Type), te.Value)
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return badRequest(strings.Trim(f, `"`), "unknown field %s", f)
		}
		if errors.Is(err, io.EOF) {
			return badRequest("", "request body is empty; want a JSON object")
		}
		return badRequest("", "request body is not valid JSON: %s", failure.Plain(oneLine(strings.TrimPrefix(err.Error(), "json: "))))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("", "request body has data after the JSON object")
	}
	return nil
}

// messageText accepts content as a string or as an array of text parts.
func messageText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of text parts")
	}
	var b strings.Builder
	for i, pt := range parts {
		if pt.Type != "text" {
			return "", fmt.Errorf("content part %d has type %q; only text is supported", i, pt.Type)
		}
		var text string
		if err := json.Unmarshal(pt.Text, &text); err != nil {
			return "", fmt.Errorf("content part %d: text must be a string", i)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	info := infoOf(r.Context())
	req, prompt, model, err := s.decode(w, r)
	if req != nil {
		info.model, info.stream = req.Model, req.Stream
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	id := "chatcmpl-" + randomID()
	created := time.Now().Unix()
	if req.Stream {
		usage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		s.answerStream(w, r, model, prompt, &chatEvents{chunker: newChunker(id, created, req.Model), usage: usage})
		return
	}
	c, ok := s.answer(w, r, model, prompt)
	if !ok {
		return
	}
	finish := finishReason(c)
	writeJSON(w, http.StatusOK, &chatCompletion{
		ID: id, Object: "chat.completion", Created: created, Model: req.Model,
		Choices:  []choice{{Message: &message{Role: "assistant", Content: c.Text}, FinishReason: &finish}},
		Usage:    usageOf(c.Usage),
		Madspark: extensionOf(c),
	})
}

// answer runs model for prompt, once the request is admitted, and returns
// its completion; on failure it has answered the request with the error.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, model Model, prompt Prompt) (*Completion, bool) {
	ctx, release, err := s.admit(r.Context())
	if err != nil {
		s.writeErr(w, r, err)
		return nil, false
	}
	defer release()
	c, err := s.complete(ctx, model, prompt, nil)
	if err != nil {
		s.writeErr(w, r, err)
		return nil, false
	}
	s.done(r, model, c)
	return c, true
}

// done records a completion in the request log and the metrics.
func (s *Server) done(r *http.Request, model Model, c *Completion) {
	infoOf(r.Context()).runID = c.RunID
	s.metrics.usage(model.ID(), c.Usage)
}

// complete calls m.Complete and turns a panic or a nil Completion into an
// error.
func (s *Server) complete(ctx context.Context, m Model, p Prompt, onDelta func(string)) (c *Completion, err error) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("model panicked", "model", m.ID(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			c, err = nil, &panicError{val: v}
		}
	}()
	c, err = m.Complete(ctx, p, onDelta)
	if err == nil && c == nil {
		err = fmt.Errorf("model %s returned no completion", m.ID())
	}
	return c, err
}

// eventStream encodes the server-sent events of one streamed answer in an
// API's format; each method returns whole frames ("data: ...\n\n").
type eventStream interface {
	// open returns the frames that start the stream, sent with its first
	// text.
	open() []byte
	// text returns the frame of a piece of the answer.
	text(delta string) []byte
	// done returns the frames that end the stream of a completed answer.
	done(c *Completion) []byte
	// failed returns the frame that ends the stream of an answer that
	// failed after the stream started.
	failed(err error) []byte
}

// answerStream answers with server-sent events as the model writes. The
// stream starts (status 200, its first frames) with the first text, or
// with a keep-alive comment after Config.KeepAlive without one: until
// then the request can still be refused with its own status, such as a
// 429 for capacity or a 400 a model found, as a JSON error.
func (s *Server) answerStream(w http.ResponseWriter, r *http.Request, model Model, prompt Prompt, es eventStream) {
	ctx, release, err := s.admit(r.Context())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer release()
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	// A client that stops reading fails a write after WriteTimeout; the
	// run is then stopped as if the client had gone away.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		open   = true
		sse    *sseWriter
		spoken bool // the model's first text was sent
	)
	start := func() {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		sse = newSSEWriter(w, s.cfg.WriteTimeout, cancel)
		sse.send(es.open())
	}
	// Until the first text, a comment now and then keeps the connection
	// from looking idle. The timer is set under mu, which its function
	// takes first.
	var beat *time.Timer
	mu.Lock()
	beat = time.AfterFunc(s.cfg.KeepAlive, func() {
		mu.Lock()
		defer mu.Unlock()
		if !open || spoken {
			return
		}
		if sse == nil {
			start()
		}
		sse.send([]byte(": waiting for the model\n\n"))
		beat.Reset(s.cfg.KeepAlive)
	})
	mu.Unlock()
	// Deltas are taken until Complete returns, and never after: a model
	// that calls onDelta late cannot slip text after the end.
	c, err := s.complete(ctx, model, prompt, func(text string) {
		mu.Lock()
		defer mu.Unlock()
		if !open || text == "" {
			return
		}
		if sse == nil {
			start()
		}
		spoken = true
		sse.send(es.text(text))
	})
	mu.Lock()
	open = false // no beat writes after this
	started := sse != nil
	mu.Unlock()
	beat.Stop()
	if !started {
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		start()
	}
	defer sse.close()
	if err != nil {
		infoOf(r.Context()).err = err
		if ctx.Err() == nil {
			sse.send(es.failed(err))
		}
		return
	}
	s.done(r, model, c)
	sse.send(es.done(c))
}

// chatEvents are the events of a streamed chat completion: chunks, then
// the usage chunk if asked for, then [DONE]; a failure ends the stream
// with an error object and no [DONE].
type chatEvents struct {
	*chunker
	usage bool
}

func (e *chatEvents) open() []byte { return e.delta(`{"role":"assistant","content":""}`, "") }

func (e *chatEvents) text(delta string) []byte { return e.content(delta) }

func (e *chatEvents) done(c *Completion) []byte {
	b := e.delta(`{}`, finishReason(c))
	if e.usage {
		b = appendData(b, mustJSON(&chatCompletion{ID: e.id, Object: "chat.completion.chunk", Created: e.created, Model: e.model,
			Choices: []choice{}, Usage: usageOf(c.Usage), Madspark: extensionOf(c)}))
	}
	return appendData(b, []byte("[DONE]"))
}

func (e *chatEvents) failed(err error) []byte {
	_, we := classify(err)
	return appendData(nil, mustJSON(&errorBody{Error: we}))
}

// mustJSON encodes one of the server's own response types, which cannot
// fail, without escaping HTML characters.
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func finishReason(c *Completion) string {
	if c.FinishReason == "" {
		return "stop"
	}
	return c.FinishReason
}

func usageOf(u llm.Usage) *wireUsage {
	// A cached answer reports the tokens it took when it was made, its
	// prompt's as cached tokens (and the extension's cached_calls says it
	// was cached).
	in, out := u.InputTokens+u.CachedInputTokens, u.OutputTokens+u.CachedOutputTokens
	w := &wireUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
	w.PromptTokensDetails.CachedTokens = u.CachedInputTokens
	return w
}

func extensionOf(c *Completion) *extension {
	x := &extension{RunID: c.RunID, LLMCalls: c.Usage.LLMCalls, CachedCalls: c.Usage.CachedCalls, Priced: c.Usage.Priced()}
	if x.Priced {
		x.CostUSD = &c.Usage.CostUSD
	}
	return x
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusClientClosed is the status logged for a request whose client went
// away before the answer (nginx's convention; never seen by the client).
const statusClientClosed = 499

// classify maps an error to an HTTP status and an OpenAI error object.
func classify(err error) (int, wireError) {
	e := func(status int, typ, code, param, msg string) (int, wireError) {
		we := wireError{Message: msg, Type: typ}
		if code != "" {
			we.Code = &code
		}
		if param != "" {
			we.Param = &param
		}
		return status, we
	}
	if re, ok := errors.AsType[*requestError](err); ok {
		return e(re.status, "invalid_request_error", re.code, re.param, oneLine(re.msg))
	}
	if _, ok := errors.AsType[*panicError](err); ok {
		return e(http.StatusInternalServerError, "server_error", "internal_error", "", "the model failed unexpectedly; see the server log")
	}
	// In words (package failure), and without the provider's address:
	// the client did not configure it.
	msg := failure.Scrub(failure.Of(oneLine(err.Error())).Line())
	if isBusy(err) {
		return e(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "", msg)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return e(http.StatusGatewayTimeout, "timeout_error", "timeout", "", msg)
	}
	if _, ok := errors.AsType[*llm.Error](err); ok {
		return e(http.StatusBadGateway, "upstream_error", "upstream_error", "", msg)
	}
	return e(http.StatusBadGateway, "server_error", "pipeline_error", "", msg)
}

// writeErr answers with err as an OpenAI error. For failures of the model
// it also tells OpenAI SDKs (x-should-retry, Retry-After) whether retrying
// can help, so that a deterministic failure is not run again.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	status, we := classify(err)
	info := infoOf(r.Context())
	if status == http.StatusTooManyRequests {
		retryAfterHeader(w.Header(), err)
	}
	if status >= 500 {
		info.err = err
		if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
			// The client went away; nobody reads this answer.
			w.WriteHeader(statusClientClosed)
			return
		}
		if !llm.IsRetryable(err) {
			w.Header().Set("X-Should-Retry", "false")
		} else {
			retryAfterHeader(w.Header(), err)
		}
	}
	writeJSON(w, status, &errorBody{Error: we})
}

// writeError answers with an OpenAI error object.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	_, we := classify(&requestError{status: status, code: code, msg: msg})
	writeJSON(w, status, &errorBody{Error: we})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var body []byte
	if err := enc.Encode(v); err == nil {
		body = buf.Bytes()
	} else {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"message":"could not encode the response","type":"server_error","param":null,"code":null}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
