package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/madspark/madspark/llm"
)

// responsesRequest is the body of POST /v1/responses as OpenAI defines it.
// As for chat completions, fields that cannot change the answer are
// accepted; settings are applied, or refused by name.
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	Stream          bool            `json:"stream"`
	StreamOptions   json.RawMessage `json:"stream_options"` // include_obfuscation only
	Temperature     *float64        `json:"temperature"`
	TopP            *float64        `json:"top_p"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Text            *struct {
		Format    *wireFormat `json:"format"`
		Verbosity string      `json:"verbosity"`
	} `json:"text"`

	// Refused unless empty: this server keeps no responses, conversations
	// or prompts to refer to, and calls no tools.
	PreviousResponseID *string         `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Prompt             json.RawMessage `json:"prompt"`
	Background         *bool           `json:"background"`
	Reasoning          json.RawMessage `json:"reasoning"`
	TopLogprobs        *int            `json:"top_logprobs"`
	Include            []string        `json:"include"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`

	// Accepted and ignored: they do not change the answer.
	Store                *bool           `json:"store"`
	Metadata             json.RawMessage `json:"metadata"`
	User                 string          `json:"user"`
	SafetyIdentifier     string          `json:"safety_identifier"`
	PromptCacheKey       string          `json:"prompt_cache_key"`
	PromptCacheRetention string          `json:"prompt_cache_retention"`
	ServiceTier          string          `json:"service_tier"`
	ParallelToolCalls    *bool           `json:"parallel_tool_calls"`
	MaxToolCalls         *int            `json:"max_tool_calls"`
	Truncation           string          `json:"truncation"`
}

// inputItem is an item of a Responses input list: a message.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// An assistant message sent back from an earlier output.
	ID     string `json:"id"`
	Status string `json:"status"`
	Phase  string `json:"phase"`
}

// inputPart is a content part of an input message.
type inputPart struct {
	Type        string          `json:"type"`
	Text        *string         `json:"text"`
	Annotations json.RawMessage `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs"`
}

// decodeResponses reads and validates a Responses request.
func (s *Server) decodeResponses(body []byte) (*exchange, error) {
	var req responsesRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	x := &exchange{name: req.Model, stream: req.Stream}
	fail := func(err error) (*exchange, error) { return x, err }
	switch {
	case req.Model == "":
		return fail(badRequest("model", "model is required"))
	case req.PreviousResponseID != nil && *req.PreviousResponseID != "":
		return fail(badRequest("previous_response_id", "previous_response_id is not supported: this server does not store responses; send the whole conversation as input items"))
	case !isNull(req.Conversation):
		return fail(badRequest("conversation", "conversation is not supported: this server does not store conversations; send the whole conversation as input items"))
	case !isNull(req.Prompt):
		return fail(badRequest("prompt", "prompt (a stored prompt template) is not supported; send the instructions and input themselves"))
	case req.Background != nil && *req.Background:
		return fail(badRequest("background", "background responses are not supported; leave background unset or false"))
	case nonEmptyObject(req.Reasoning):
		return fail(badRequest("reasoning", "reasoning settings are not supported by madspark's models; leave reasoning unset"))
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return fail(badRequest("top_logprobs", "top_logprobs is not supported; leave it unset or 0"))
	case slices.Contains(req.Include, "message.output_text.logprobs"):
		return fail(badRequest("include", "include: message.output_text.logprobs is not supported"))
	case nonEmptyList(req.Tools) && forcesCall(req.ToolChoice):
		return fail(badRequest("tool_choice", "tool_choice requires a tool call, but this server answers without calling tools; leave tool_choice unset, \"auto\" or \"none\""))
	}
	p, g := &x.prompt, &x.given
	if err := (sampling{temperature: req.Temperature, topP: req.TopP, maxTokens: req.MaxOutputTokens, maxTokensParam: "max_output_tokens"}).apply(p, g); err != nil {
		return fail(err)
	}
	if req.Text != nil {
		var err error
		if p.Format, err = formatOf(req.Text.Format, "text.format", false); err != nil {
			return fail(err)
		}
		if p.Format != nil {
			g.add(SettingFormat, "text.format")
		}
	}
	var system []string
	if req.Instructions != nil && *req.Instructions != "" {
		if strings.IndexByte(*req.Instructions, 0) >= 0 {
			return fail(badRequest("instructions", "instructions contain a NUL byte"))
		}
		g.add(SettingSystem, "instructions")
		system = append(system, *req.Instructions)
	}
	input := bytes.TrimSpace(req.Input)
	switch {
	case isNull(input):
		return fail(badRequest("input", "input is required: a string or a list of messages"))
	case input[0] == '"':
		var text string
		if err := json.Unmarshal(input, &text); err != nil {
			return fail(badRequest("input", "input must be a string or a list of messages"))
		}
		if strings.IndexByte(text, 0) >= 0 {
			return fail(badRequest("input", "input contains a NUL byte"))
		}
		p.Messages = []llm.Message{{Role: llm.RoleUser, Content: text}}
	default:
		var items []json.RawMessage
		if err := json.Unmarshal(input, &items); err != nil {
			return fail(badRequest("input", "input must be a string or a list of messages"))
		}
		for i, raw := range items {
			param := fmt.Sprintf("input[%d]", i)
			if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' {
				return fail(badRequest(param, "%s must be a message object, such as {\"role\": \"user\", \"content\": \"...\"}", param))
			}
			var it inputItem
			if err := decodeStrict(raw, &it); err != nil {
				if re, ok := errors.AsType[*requestError](err); ok {
					re.param, re.msg = strings.TrimSuffix(param+"."+re.param, "."), param+": "+re.msg
				}
				return fail(err)
			}
			if it.Type != "" && it.Type != "message" {
				return fail(badRequest(param+".type", "%s.type %q is not supported; this server takes messages only", param, it.Type))
			}
			text, err := itemText(it.Content)
			if err == nil && strings.IndexByte(text, 0) >= 0 {
				err = errors.New("content contains a NUL byte")
			}
			if err != nil {
				return fail(badRequest(param+".content", "%s.content: %v", param, err))
			}
			switch it.Role {
			case "system", "developer":
				if len(system) == 0 {
					g.add(SettingSystem, param)
				}
				system = append(system, text)
			case "user":
				p.Messages = append(p.Messages, llm.Message{Role: llm.RoleUser, Content: text})
			case "assistant":
				p.Messages = append(p.Messages, llm.Message{Role: llm.RoleAssistant, Content: text})
			default:
				return fail(badRequest(param+".role", "%s.role %q is not supported (want system, developer, user or assistant)", param, it.Role))
			}
		}
	}
	p.System = systemText(system)
	if strings.TrimSpace(p.Query()) == "" {
		return fail(badRequest("input", "input must include a user message with content"))
	}
	x.wire = &responsesWire{resp: newResponse(&req, *p), msgID: "msg_" + randomID()}
	return x, nil
}

// itemText accepts a message's content as a string or a list of text
// parts (input_text, output_text).
func itemText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or a list of text parts")
	}
	var b strings.Builder
	for i, pt := range parts {
		switch pt.Type {
		case "input_text", "output_text", "text":
		default:
			return "", fmt.Errorf("content part %d has type %q; only text is supported", i, pt.Type)
		}
		if pt.Text == nil {
			return "", fmt.Errorf("content part %d has no text", i)
		}
		b.WriteString(*pt.Text)
	}
	return b.String(), nil
}

// The Responses API's objects, as madspark fills them.
type (
	response struct {
		ID                 string             `json:"id"`
		Object             string             `json:"object"`
		CreatedAt          int64              `json:"created_at"`
		Status             string             `json:"status"`
		Error              *responseError     `json:"error"`
		IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
		Instructions       *string            `json:"instructions"`
		MaxOutputTokens    *int               `json:"max_output_tokens"`
		Model              string             `json:"model"`
		Output             []outputMessage    `json:"output"`
		ParallelToolCalls  bool               `json:"parallel_tool_calls"`
		PreviousResponseID *string            `json:"previous_response_id"`
		Reasoning          struct {
			Effort  *string `json:"effort"`
			Summary *string `json:"summary"`
		} `json:"reasoning"`
		Store       bool            `json:"store"`
		Temperature *float64        `json:"temperature"`
		Text        responseText    `json:"text"`
		ToolChoice  string          `json:"tool_choice"`
		Tools       []any           `json:"tools"`
		TopP        *float64        `json:"top_p"`
		Truncation  string          `json:"truncation"`
		Usage       *responsesUsage `json:"usage"`
		User        *string         `json:"user"`
		Metadata    json.RawMessage `json:"metadata"`
		Madspark    *extension      `json:"madspark,omitempty"`
	}
	responseError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	incompleteDetails struct {
		Reason string `json:"reason"`
	}
	responseText struct {
		Format map[string]any `json:"format"`
	}
	outputMessage struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []outputText `json:"content"`
	}
	outputText struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
		Logprobs    []any  `json:"logprobs"`
	}
	responsesUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			// CachedTokens are the input tokens of calls the response
			// cache answered: not paid for again.
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
)

// newResponse is the response object of req, in progress, with no output.
func newResponse(req *responsesRequest, p Prompt) *response {
	r := &response{
		ID: "resp_" + randomID(), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model, Output: []outputMessage{},
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, Temperature: req.Temperature,
		ToolChoice: "auto", Tools: []any{}, TopP: req.TopP, Truncation: "disabled", Metadata: json.RawMessage(`{}`),
	}
	if req.User != "" {
		r.User = &req.User
	}
	if nonEmptyObject(req.Metadata) {
		r.Metadata = req.Metadata
	}
	r.Text.Format = map[string]any{"type": "text"}
	if f := p.Format; f != nil {
		if f.Name == "" {
			r.Text.Format = map[string]any{"type": "json_object"}
		} else {
			r.Text.Format = map[string]any{"type": "json_schema", "name": f.Name, "schema": f.Schema, "strict": f.Strict}
		}
	}
	return r
}

// complete fills r with the completion c, whose text is in message msgID.
func (r *response) complete(c *Completion, msgID string) {
	r.Status = "completed"
	if finishReason(c) == "length" {
		r.Status, r.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	}
	r.Output = []outputMessage{{ID: msgID, Type: "message", Status: r.Status, Role: "assistant",
		Content: []outputText{{Type: "output_text", Text: c.Text, Annotations: []any{}, Logprobs: []any{}}}}}
	in, out := c.Usage.InputTokens+c.Usage.CachedInputTokens, c.Usage.OutputTokens+c.Usage.CachedOutputTokens
	r.Usage = &responsesUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	r.Usage.InputTokensDetails.CachedTokens = c.Usage.CachedInputTokens
	r.Madspark = extensionOf(c)
}

// responsesWire writes a response: the response object, or its events.
type responsesWire struct {
	resp  *response
	msgID string
}

func (rw *responsesWire) body(c *Completion) any {
	rw.resp.complete(c, rw.msgID)
	return rw.resp
}

func (rw *responsesWire) events() eventStream { return newResponseEvents(rw.resp, rw.msgID) }

// responseEvents are the events of a streamed response: created and
// in_progress, the message and its text part added, a delta per piece of
// text, the text, part and message done, then completed (or incomplete,
// when cut off at the token limit); a failure ends it with failed.
type responseEvents struct {
	resp  *response
	msgID string
	seq   int
	// delta is the frame of a delta up to its text.
	delta []byte
}

func newResponseEvents(resp *response, msgID string) *responseEvents {
	return &responseEvents{resp: resp, msgID: msgID}
}

// frame appends the event of type typ, with v's fields after type and
// sequence_number, to b.
func (e *responseEvents) frame(b []byte, typ string, v map[string]any) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":"...)
	b = appendJSONString(b, typ)
	b = append(b, ",\"sequence_number\":"...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	e.seq++
	if len(v) > 0 {
		rest := mustJSON(v)
		b = append(b, ',')
		b = append(b, rest[1:]...)
	} else {
		b = append(b, '}')
	}
	return append(b, "\n\n"...)
}

func (e *responseEvents) item(status string, content []outputText) map[string]any {
	return map[string]any{"id": e.msgID, "type": "message", "status": status, "role": "assistant", "content": content}
}

func (e *responseEvents) part(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

func (e *responseEvents) open() []byte {
	b := e.frame(nil, "response.created", map[string]any{"response": e.resp})
	b = e.frame(b, "response.in_progress", map[string]any{"response": e.resp})
	b = e.frame(b, "response.output_item.added", map[string]any{"output_index": 0, "item": e.item("in_progress", []outputText{})})
	b = e.frame(b, "response.content_part.added", map[string]any{"item_id": e.msgID, "output_index": 0, "content_index": 0, "part": e.part("")})
	e.delta = fmt.Appendf(nil, `,"item_id":%q,"output_index":0,"content_index":0,"logprobs":[],"delta":`, e.msgID)
	return b
}

func (e *responseEvents) text(delta string) []byte {
	const typ = "response.output_text.delta"
	b := make([]byte, 0, 128+len(e.delta)+len(delta))
	b = append(b, "event: "+typ+"\ndata: {\"type\":\""+typ+"\",\"sequence_number\":"...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	e.seq++
	b = append(b, e.delta...)
	b = appendJSONString(b, delta)
	return append(b, "}\n\n"...)
}

func (e *responseEvents) done(c *Completion) []byte {
	e.resp.complete(c, e.msgID)
	text := c.Text
	b := e.frame(nil, "response.output_text.done", map[string]any{"item_id": e.msgID, "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{}})
	b = e.frame(b, "response.content_part.done", map[string]any{"item_id": e.msgID, "output_index": 0, "content_index": 0, "part": e.part(text)})
	b = e.frame(b, "response.output_item.done", map[string]any{"output_index": 0, "item": e.item(e.resp.Status, []outputText{e.part(text)})})
	end := "response.completed"
	if e.resp.Status == "incomplete" {
		end = "response.incomplete"
	}
	return e.frame(b, end, map[string]any{"response": e.resp})
}

func (e *responseEvents) failed(err error) []byte {
	_, we := classify(err)
	code := "server_error"
	if we.Code != nil {
		code = *we.Code
	}
	e.resp.Status, e.resp.Error = "failed", &responseError{Code: code, Message: we.Message}
	return e.frame(nil, "response.failed", map[string]any{"response": e.resp})
}
