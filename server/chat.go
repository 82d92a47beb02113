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
	"strings"
	"time"

	"github.com/madspark/madspark/llm"
)

// chatRequest is POST /v1/chat/completions, as OpenAI defines it; fields
// madspark does not use are accepted when they cannot change the meaning.
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
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

// requestError is a client error to report as a 4xx.
type requestError struct {
	status      int
	code, param string
	msg         string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(param, format string, a ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, param: param, msg: fmt.Sprintf(format, a...)}
}

// decode reads and validates a chat request.
func (s *Server) decode(w http.ResponseWriter, r *http.Request) (*chatRequest, Prompt, Model, error) {
	var p Prompt
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, p, nil, &requestError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body is larger than %d bytes", s.cfg.MaxBodyBytes)}
		}
		return nil, p, nil, badRequest("", "could not read the request body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req chatRequest
	if err := dec.Decode(&req); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return nil, p, nil, badRequest(strings.Trim(f, `"`), "unknown field %s", f)
		}
		return nil, p, nil, badRequest("", "request body is not valid JSON: %s", msg)
	}
	if dec.More() {
		return nil, p, nil, badRequest("", "request body has data after the JSON object")
	}
	switch {
	case req.Model == "":
		return nil, p, nil, badRequest("model", "model is required")
	case len(req.Messages) == 0:
		return nil, p, nil, badRequest("messages", "messages must not be empty")
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2):
		return nil, p, nil, badRequest("temperature", "temperature must be within 0..2")
	case req.N != nil && *req.N != 1:
		return nil, p, nil, badRequest("n", "only n=1 is supported")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "text":
		return nil, p, nil, badRequest("response_format", "only response_format type text is supported")
	case req.StreamOptions != nil && !req.Stream:
		return nil, p, nil, badRequest("stream_options", "stream_options is only allowed with stream true")
	}
	for _, mt := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
		if mt != nil {
			if *mt < 1 {
				return nil, p, nil, badRequest("max_tokens", "max_tokens must be positive")
			}
			p.MaxTokens = *mt
		}
	}
	m, ok := s.models[req.Model]
	if !ok {
		return nil, p, nil, &requestError{status: http.StatusNotFound, code: "model_not_found", param: "model",
			msg: fmt.Sprintf("model %q does not exist; this server has %s", req.Model, strings.Join(s.order, ", "))}
	}
	p.Temperature = req.Temperature
	var system []string
	for i, msg := range req.Messages {
		text, err := messageText(msg.Content)
		if err != nil {
			return nil, p, nil, badRequest(fmt.Sprintf("messages[%d].content", i), "%v", err)
		}
		switch msg.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			p.Messages = append(p.Messages, llm.Message{Role: llm.RoleUser, Content: text})
		case "assistant":
			p.Messages = append(p.Messages, llm.Message{Role: llm.RoleAssistant, Content: text})
		default:
			return nil, p, nil, badRequest(fmt.Sprintf("messages[%d].role", i), "role %q is not supported (want system, developer, user or assistant)", msg.Role)
		}
	}
	p.System = strings.Join(system, "\n\n")
	if strings.TrimSpace(p.Query()) == "" {
		return nil, p, nil, badRequest("messages", "messages must include a user message with content")
	}
	return &req, p, m, nil
}

// messageText accepts content as a string or as an array of text parts.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, pt := range parts {
		if pt.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported; only text", pt.Type)
		}
		b.WriteString(pt.Text)
	}
	return b.String(), nil
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	req, prompt, model, err := s.decode(w, r)
	if err != nil {
		s.writeErr(w, err)
		return
	}
	id := "chatcmpl-" + randomID()
	created := time.Now().Unix()
	if req.Stream {
		s.stream(w, r, req, prompt, model, id, created)
		return
	}
	c, err := model.Complete(r.Context(), prompt, nil)
	if err != nil {
		s.writeErr(w, err)
		return
	}
	s.metrics.usage(req.Model, c.Usage)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": req.Model,
		"choices": []map[string]any{{
			"index": 0, "message": map[string]any{"role": "assistant", "content": c.Text},
			"finish_reason": finishReason(c),
		}},
		"usage":    usage(c.Usage),
		"madspark": extension(c),
	})
}

// stream answers with server-sent events, chunk by chunk, as OpenAI does.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *chatRequest, prompt Prompt, model Model, id string, created int64) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.writeErr(w, errors.New("streaming is not supported by this connection"))
		return
	}
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var buf bytes.Buffer
	send := func(v any) {
		buf.Reset()
		buf.WriteString("data: ")
		b, _ := json.Marshal(v)
		buf.Write(b)
		buf.WriteString("\n\n")
		_, _ = w.Write(buf.Bytes())
		flusher.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	c, err := model.Complete(r.Context(), prompt, func(d string) {
		if d != "" && r.Context().Err() == nil {
			send(chunk(map[string]any{"content": d}, nil))
		}
	})
	if err != nil {
		if r.Context().Err() == nil {
			_, typ, code, _, msg := classify(err)
			send(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
		}
		s.log.Info("stream ended with an error", "model", req.Model, "err", oneLine(err.Error()))
		return
	}
	s.metrics.usage(req.Model, c.Usage)
	send(chunk(map[string]any{}, finishReason(c)))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{}, "usage": usage(c.Usage), "madspark": extension(c)})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	flusher.Flush()
}

func finishReason(c *Completion) string {
	if c.FinishReason == "" {
		return "stop"
	}
	return c.FinishReason
}

func usage(u llm.Usage) map[string]int {
	return map[string]int{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens}
}

func extension(c *Completion) map[string]any {
	return map[string]any{"run_id": c.RunID, "llm_calls": c.Usage.LLMCalls, "cached_calls": c.Usage.CachedCalls, "cost_usd": c.Usage.CostUSD}
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// classify maps an error to an HTTP status and OpenAI error fields.
func classify(err error) (status int, typ, code, param, msg string) {
	var re *requestError
	var le *llm.Error
	switch {
	case errors.As(err, &re):
		typ = "invalid_request_error"
		if re.status == http.StatusRequestEntityTooLarge {
			code = "request_too_large"
		}
		return re.status, typ, re.code, re.param, re.msg
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "timeout_error", "timeout", "", "the model did not answer in time"
	case errors.As(err, &le):
		if le.Status == 0 && strings.Contains(le.Message, "no reply within") {
			return http.StatusGatewayTimeout, "timeout_error", "timeout", "", oneLine(err.Error())
		}
		return http.StatusBadGateway, "upstream_error", "upstream_error", "", oneLine(err.Error())
	}
	return http.StatusBadGateway, "server_error", "pipeline_error", "", oneLine(err.Error())
}

func (s *Server) writeErr(w http.ResponseWriter, err error) {
	status, typ, code, param, msg := classify(err)
	writeError(w, status, typ, code, param, msg)
}

func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
