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
// As for chat completions, every field is applied, or accepted only with
// the value that asks for nothing madspark does not do, or refused naming
// it.
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	Stream          bool            `json:"stream"`
	StreamOptions   *streamOptions  `json:"stream_options"`
	Temperature     *float64        `json:"temperature"`
	TopP            *float64        `json:"top_p"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Text            *struct {
		Format    *wireFormat `json:"format"`
		Verbosity string      `json:"verbosity"`
	} `json:"text"`
	Reasoning *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
		// GenerateSummary is summary's deprecated name.
		GenerateSummary string `json:"generate_summary"`
	} `json:"reasoning"`

	// Function tools, applied (see tools.go).
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	// MaxToolCalls bounds the calls of built-in tools (the debate's web
	// search), for the models that make them.
	MaxToolCalls *int `json:"max_tool_calls"`

	// user, safety_identifier and metadata (the run's tags), store,
	// service_tier and the prompt cache's (see common).
	common

	// Refused unless empty: this server keeps no responses, conversations
	// or prompts to refer to.
	PreviousResponseID *string         `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Prompt             json.RawMessage `json:"prompt"`
	Background         *bool           `json:"background"`
	// Accepted only with the value that asks for nothing madspark does
	// not do: no log probabilities, what OpenAI includes of items
	// madspark never makes, no truncation.
	TopLogprobs *int     `json:"top_logprobs"`
	Include     []string `json:"include"`
	Truncation  string   `json:"truncation"`
}

// includable are the values of include madspark takes: the results of
// hosted tools and the URLs of images, which its answers never hold.
var includable = []string{"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
	"message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs"}

// inputItem is a message of a Responses input list.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// An assistant message sent back from an earlier output.
	ID     string `json:"id"`
	Status string `json:"status"`
	Phase  string `json:"phase"`
}

// callItem is a function_call item sent back from an earlier output: a
// call the model made.
type callItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
	// The official clients' parse of the arguments, sent back.
	ParsedArguments json.RawMessage `json:"parsed_arguments"`
}

// outputItem is a function_call_output item: the result of a call, as
// text or text parts.
type outputItem struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	CallID string          `json:"call_id"`
	Output json.RawMessage `json:"output"`
	Status string          `json:"status"`
}

// reasoningInput is a reasoning item sent back from an earlier output: a
// pipeline's account of its work, which the next answer does not need.
type reasoningInput struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Summary          json.RawMessage `json:"summary"`
	Content          json.RawMessage `json:"content"`
	EncryptedContent json.RawMessage `json:"encrypted_content"`
	Status           string          `json:"status"`
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
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return fail(badRequest("top_logprobs", "top_logprobs is not supported (madspark gives no log probabilities); leave it unset or 0"))
	case req.Truncation != "" && req.Truncation != "disabled":
		return fail(badRequest("truncation", "truncation %q is not supported: an input beyond the limit is refused (context_length_exceeded), never cut; leave it unset or disabled", clip(req.Truncation, 40)))
	case req.StreamOptions != nil && !req.Stream:
		return fail(badRequest("stream_options", "stream_options is only allowed with stream true"))
	case req.StreamOptions != nil && req.StreamOptions.IncludeUsage:
		return fail(badRequest("stream_options.include_usage", "stream_options.include_usage is a chat completions option; a response's usage is in its response.completed event"))
	case req.MaxToolCalls != nil && *req.MaxToolCalls < 0:
		return fail(badRequest("max_tool_calls", "max_tool_calls must not be negative, got %d", *req.MaxToolCalls))
	}
	for i, inc := range req.Include {
		param := fmt.Sprintf("include[%d]", i)
		switch {
		case inc == "message.output_text.logprobs":
			return fail(badRequest(param, "%s: log probabilities are not supported", param))
		case inc == "reasoning.encrypted_content":
			return fail(badRequest(param, "%s: madspark's reasoning items carry their whole text in their summary, and a provider's own hidden reasoning is not passed from one turn to the next; leave it out", param))
		case !slices.Contains(includable, inc):
			return fail(badRequest(param, "%s %q is not a value OpenAI defines", param, clip(inc, 60)))
		}
	}
	if req.StreamOptions != nil {
		if err := obfuscation(req.StreamOptions.IncludeObfuscation); err != nil {
			return fail(err)
		}
	}
	p, g := &x.prompt, &x.given
	var effortValue, verbosity string
	if r := req.Reasoning; r != nil {
		for _, s := range []struct{ param, value string }{{"reasoning.summary", r.Summary}, {"reasoning.generate_summary", r.GenerateSummary}} {
			switch s.value {
			case "", "auto":
			case "concise", "detailed":
				return fail(badRequest(s.param, "%s %q is not supported: a model's summary of its work is what madspark makes of it (a pipeline's stages); leave it unset or auto", s.param, s.value))
			default:
				return fail(badRequest(s.param, "%s %q is not one of auto, concise and detailed", s.param, clip(s.value, 40)))
			}
		}
		effortValue = r.Effort
	}
	if req.Text != nil {
		verbosity = req.Text.Verbosity
	}
	if err := effort(p, g, effortValue, "reasoning.effort", verbosity, "text.verbosity"); err != nil {
		return fail(err)
	}
	if err := req.common.apply(p, g); err != nil {
		return fail(err)
	}
	if req.MaxToolCalls != nil {
		p.MaxToolCalls = req.MaxToolCalls
		g.add(SettingMaxToolCalls, "max_tool_calls")
	}
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
	if err := readTools(p, g, req.Tools, req.ToolChoice, req.ParallelToolCalls, false); err != nil {
		return fail(err)
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
	pos := positions{field: "input"}
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
		pos.add(-1)
	default:
		var items []json.RawMessage
		if err := json.Unmarshal(input, &items); err != nil {
			return fail(badRequest("input", "input must be a string or a list of messages"))
		}
		var made calls
		for i, raw := range items {
			param := fmt.Sprintf("input[%d]", i)
			if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' {
				return fail(badRequest(param, "%s must be a message object, such as {\"role\": \"user\", \"content\": \"...\"}", param))
			}
			var probe struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(raw, &probe); err != nil {
				return fail(badRequest(param+".type", "%s.type must be a string", param))
			}
			switch probe.Type {
			case "", "message":
			case "function_call":
				var it callItem
				if err := decodeAt(raw, &it, param); err != nil {
					return fail(err)
				}
				call := llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
				if err := made.add([]llm.ToolCall{call}, param); err != nil {
					return fail(err)
				}
				// Calls that follow an assistant message are its: one
				// turn.
				if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == llm.RoleAssistant {
					p.Messages[n-1].ToolCalls = append(p.Messages[n-1].ToolCalls, call)
				} else {
					p.Messages = append(p.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}})
					pos.add(i)
				}
				continue
			case "function_call_output":
				var it outputItem
				if err := decodeAt(raw, &it, param); err != nil {
					return fail(err)
				}
				if err := made.answers(it.CallID, param+".call_id"); err != nil {
					return fail(err)
				}
				text, err := itemText(it.Output)
				if err == nil && strings.IndexByte(text, 0) >= 0 {
					err = errors.New("output contains a NUL byte")
				}
				if err != nil {
					return fail(badRequest(param+".output", "%s.output: %v", param, err))
				}
				p.Messages = append(p.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: it.CallID, Content: text})
				pos.add(i)
				continue
			case "reasoning":
				var it reasoningInput
				if err := decodeAt(raw, &it, param); err != nil {
					return fail(err)
				}
				continue
			case "item_reference":
				return fail(badRequest(param+".type", "%s: item_reference is not supported: this server does not store items; send the items themselves", param))
			default:
				return fail(badRequest(param+".type", "%s.type %q is not supported (want message, function_call, function_call_output or reasoning)", param, probe.Type))
			}
			var it inputItem
			if err := decodeAt(raw, &it, param); err != nil {
				return fail(err)
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
				pos.add(i)
			case "assistant":
				p.Messages = append(p.Messages, llm.Message{Role: llm.RoleAssistant, Content: text})
				pos.add(i)
			default:
				return fail(badRequest(param+".role", "%s.role %q is not supported (want system, developer, user or assistant)", param, it.Role))
			}
		}
	}
	p.System = systemText(system)
	if strings.TrimSpace(p.Query()) == "" {
		return fail(badRequest("input", "input must include a user message with content"))
	}
	pos.turns(p, g)
	x.wire = newResponsesWire(newResponse(&req, *p))
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
		Output             []any              `json:"output"`
		ParallelToolCalls  bool               `json:"parallel_tool_calls"`
		PreviousResponseID *string            `json:"previous_response_id"`
		Reasoning          struct {
			Effort  *string `json:"effort"`
			Summary *string `json:"summary"`
		} `json:"reasoning"`
		Store       bool            `json:"store"`
		Temperature *float64        `json:"temperature"`
		Text        responseText    `json:"text"`
		ToolChoice  any             `json:"tool_choice"`
		Tools       []functionTool  `json:"tools"`
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
		Format    map[string]any `json:"format"`
		Verbosity string         `json:"verbosity,omitempty"`
	}
	functionTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict"`
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
	// reasoningOutput is a pipeline's account of its work, as a
	// reasoning model's summary.
	reasoningOutput struct {
		ID      string        `json:"id"`
		Type    string        `json:"type"`
		Summary []summaryPart `json:"summary"`
	}
	summaryPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	functionCall struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
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
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model, Output: []any{},
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, Temperature: req.Temperature,
		ToolChoice: "auto", Tools: []functionTool{}, TopP: req.TopP, Truncation: "disabled", Metadata: json.RawMessage(`{}`),
	}
	if req.User != "" {
		r.User = &req.User
	}
	if nonEmptyObject(req.Metadata) {
		r.Metadata = req.Metadata
	}
	for _, t := range p.Tools {
		ft := functionTool{Type: "function", Name: t.Name, Parameters: t.Parameters, Strict: t.Strict}
		if t.Description != "" {
			ft.Description = &t.Description
		}
		r.Tools = append(r.Tools, ft)
	}
	if c := p.ToolChoice; c != nil {
		r.ToolChoice = c.Mode
		if c.Name != "" {
			r.ToolChoice = map[string]string{"type": "function", "name": c.Name}
		}
	}
	if p.ReasoningEffort != "" {
		r.Reasoning.Effort = &p.ReasoningEffort
	}
	r.Text.Verbosity = p.Verbosity
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

// status is the status of the response of c: incomplete when cut off at
// the token limit.
func status(c *Completion) string {
	if finishReason(c) == "length" {
		return "incomplete"
	}
	return "completed"
}

// complete fills r with the completion c: its output items (the
// reasoning item rsID with thought, when there is any; the message msgID,
// when it has text or calls no tools; a function_call item per call) and
// usage.
func (r *response) complete(c *Completion, rsID, thought, msgID string) {
	r.Status = status(c)
	if r.Status == "incomplete" {
		r.IncompleteDetails = &incompleteDetails{Reason: "max_output_tokens"}
	}
	r.Output = []any{}
	if thought != "" {
		r.Output = append(r.Output, reasoningItem(rsID, thought))
	}
	if c.Text != "" || len(c.ToolCalls) == 0 {
		r.Output = append(r.Output, messageItem(msgID, r.Status, c.Text))
	}
	for _, tc := range c.ToolCalls {
		r.Output = append(r.Output, callOf(tc, "completed"))
	}
	in, out := c.Usage.InputTokens+c.Usage.CachedInputTokens, c.Usage.OutputTokens+c.Usage.CachedOutputTokens
	r.Usage = &responsesUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	r.Usage.InputTokensDetails.CachedTokens = c.Usage.CachedInputTokens
	r.Madspark = extensionOf(c)
}

func reasoningItem(id, text string) reasoningOutput {
	r := reasoningOutput{ID: id, Type: "reasoning", Summary: []summaryPart{}}
	if text != "" {
		r.Summary = append(r.Summary, summaryPart{Type: "summary_text", Text: text})
	}
	return r
}

func messageItem(id, status, text string) outputMessage {
	content := []outputText{}
	if status != "in_progress" {
		content = append(content, textPart(text))
	}
	return outputMessage{ID: id, Type: "message", Status: status, Role: "assistant", Content: content}
}

func textPart(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// callOf is the function_call item of tc. Its item ID is made from the
// call's, so that the same call has the same item in a response and in
// its events.
func callOf(tc llm.ToolCall, status string) functionCall {
	return functionCall{ID: "fc_" + tc.ID, Type: "function_call", Status: status, Arguments: tc.Arguments, CallID: tc.ID, Name: tc.Name}
}

// responsesWire writes a response: the response object, or its events.
type responsesWire struct {
	resp        *response
	rsID, msgID string
}

func newResponsesWire(resp *response) *responsesWire {
	return &responsesWire{resp: resp, rsID: "rs_" + randomID(), msgID: "msg_" + randomID()}
}

func (rw *responsesWire) body(c *Completion) any {
	rw.resp.complete(c, rw.rsID, c.Reasoning, rw.msgID)
	return rw.resp
}

func (rw *responsesWire) events() eventStream {
	return &responseEvents{resp: rw.resp, rsID: rw.rsID, msgID: rw.msgID, rs: -1, msg: -1}
}

// responseEvents are the events of a streamed response: created and
// in_progress; with the first reasoning, the reasoning item added and its
// summary part, a delta per piece, and all done with the first text; with
// the first text, the message added and its text part; a delta per piece
// of text; then the text, part and message done, each function call
// added, its arguments and the call done; then completed (or incomplete,
// when cut off at the token limit). A failure ends it with failed.
type responseEvents struct {
	resp        *response
	rsID, msgID string
	seq         int
	// next is the output index of the next item added.
	next int
	// rs and msg are the reasoning's and the message's output indexes, -1
	// until they are added.
	rs, msg int
	// thought is the reasoning sent; thinking that it is not done.
	thought  strings.Builder
	thinking bool
	// delta is the frame of a delta up to its text.
	delta []byte
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

func (e *responseEvents) open() []byte {
	b := e.frame(nil, "response.created", map[string]any{"response": e.resp})
	return e.frame(b, "response.in_progress", map[string]any{"response": e.resp})
}

// openMessage appends the events that add the message and its text part.
func (e *responseEvents) openMessage(b []byte) []byte {
	e.msg, e.next = e.next, e.next+1
	b = e.frame(b, "response.output_item.added", map[string]any{"output_index": e.msg, "item": messageItem(e.msgID, "in_progress", "")})
	b = e.frame(b, "response.content_part.added", map[string]any{"item_id": e.msgID, "output_index": e.msg, "content_index": 0, "part": textPart("")})
	e.delta = fmt.Appendf(nil, `,"item_id":%q,"output_index":%d,"content_index":0,"logprobs":[],"delta":`, e.msgID, e.msg)
	return b
}

func (e *responseEvents) reasoning(delta string) []byte {
	var b []byte
	if e.rs < 0 {
		e.rs, e.next, e.thinking = e.next, e.next+1, true
		b = e.frame(b, "response.output_item.added", map[string]any{"output_index": e.rs, "item": reasoningItem(e.rsID, "")})
		b = e.frame(b, "response.reasoning_summary_part.added", map[string]any{"item_id": e.rsID, "output_index": e.rs, "summary_index": 0,
			"part": summaryPart{Type: "summary_text", Text: ""}})
	}
	e.thought.WriteString(delta)
	return e.frame(b, "response.reasoning_summary_text.delta", map[string]any{"item_id": e.rsID, "output_index": e.rs, "summary_index": 0, "delta": delta})
}

// endReasoning appends the events that end the reasoning, if it goes on.
func (e *responseEvents) endReasoning(b []byte) []byte {
	if !e.thinking {
		return b
	}
	e.thinking = false
	text := e.thought.String()
	b = e.frame(b, "response.reasoning_summary_text.done", map[string]any{"item_id": e.rsID, "output_index": e.rs, "summary_index": 0, "text": text})
	b = e.frame(b, "response.reasoning_summary_part.done", map[string]any{"item_id": e.rsID, "output_index": e.rs, "summary_index": 0,
		"part": summaryPart{Type: "summary_text", Text: text}})
	return e.frame(b, "response.output_item.done", map[string]any{"output_index": e.rs, "item": reasoningItem(e.rsID, text)})
}

func (e *responseEvents) text(delta string) []byte {
	const typ = "response.output_text.delta"
	b := e.endReasoning(nil)
	if e.msg < 0 {
		b = e.openMessage(b)
	}
	b = slices.Grow(b, 128+len(e.delta)+len(delta))
	b = append(b, "event: "+typ+"\ndata: {\"type\":\""+typ+"\",\"sequence_number\":"...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	e.seq++
	b = append(b, e.delta...)
	b = appendJSONString(b, delta)
	return append(b, "}\n\n"...)
}

func (e *responseEvents) done(c *Completion) []byte {
	// The response's reasoning is what the stream sent.
	e.resp.complete(c, e.rsID, e.thought.String(), e.msgID)
	b := e.endReasoning(nil)
	if e.msg < 0 && (c.Text != "" || len(c.ToolCalls) == 0) {
		// A model that wrote its text without streaming it.
		b = e.openMessage(b)
		if c.Text != "" {
			b = append(b, e.text(c.Text)...)
		}
	}
	if e.msg >= 0 {
		text := c.Text
		b = e.frame(b, "response.output_text.done", map[string]any{"item_id": e.msgID, "output_index": e.msg, "content_index": 0, "text": text, "logprobs": []any{}})
		b = e.frame(b, "response.content_part.done", map[string]any{"item_id": e.msgID, "output_index": e.msg, "content_index": 0, "part": textPart(text)})
		b = e.frame(b, "response.output_item.done", map[string]any{"output_index": e.msg, "item": messageItem(e.msgID, e.resp.Status, text)})
	}
	for _, tc := range c.ToolCalls {
		i := e.next
		e.next++
		added := callOf(tc, "in_progress")
		added.Arguments = ""
		item := callOf(tc, "completed")
		b = e.frame(b, "response.output_item.added", map[string]any{"output_index": i, "item": added})
		b = e.frame(b, "response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": i, "delta": tc.Arguments})
		b = e.frame(b, "response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": i, "name": tc.Name, "arguments": tc.Arguments})
		b = e.frame(b, "response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
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
