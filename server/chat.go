package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
)

// Chat Completions, POST /v1/chat/completions: the request read into an
// exchange, the answer written as a chat.completion object or its chunks.

// chatRequest is the body of POST /v1/chat/completions as OpenAI defines
// it. Every field is applied, or accepted only with the value that asks
// for nothing madspark does not do, or refused naming it; a field OpenAI
// does not define is refused too.
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
	Seed                *int64          `json:"seed"`
	ResponseFormat      *wireFormat     `json:"response_format"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	Verbosity           string          `json:"verbosity"`

	// Function tools, applied (see tools.go); the deprecated functions
	// are refused.
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Functions         json.RawMessage `json:"functions"`
	FunctionCall      json.RawMessage `json:"function_call"`

	// user, safety_identifier and metadata (the run's tags), store,
	// service_tier and the prompt cache's (see common).
	common

	// Accepted only with the value that asks for nothing madspark does
	// not do (no log probabilities, no penalties, text only, no predicted
	// output); any other is refused by name.
	Logprobs         *bool           `json:"logprobs"`
	TopLogprobs      *int            `json:"top_logprobs"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	LogitBias        json.RawMessage `json:"logit_bias"`
	Modalities       []string        `json:"modalities"`
	Prediction       json.RawMessage `json:"prediction"`
}

type streamOptions struct {
	IncludeUsage       bool  `json:"include_usage"`
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// Name is taken where it tells nothing apart (see participants).
	Name string `json:"name"`
	// An assistant message's tool calls; a tool message's call.
	ToolCalls  []chatToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
	// What an assistant message sent back as a client got it also
	// carries, derived from its content or empty in madspark's answers,
	// so that ignoring it cannot change the next: its refusal (null),
	// annotations ([]), audio (null), the official clients' parse of its
	// content, and a pipeline's account of its work, which the next
	// answer does not need (see Completion.Reasoning).
	Refusal          *string         `json:"refusal"`
	Annotations      json.RawMessage `json:"annotations"`
	Audio            json.RawMessage `json:"audio"`
	Parsed           json.RawMessage `json:"parsed"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	FunctionCall     json.RawMessage `json:"function_call"`
}

// chatToolCall is a tool call in Chat Completions' shape.
type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		// The official clients' parse of the arguments, sent back.
		ParsedArguments json.RawMessage `json:"parsed_arguments,omitempty"`
	} `json:"function"`
}

func chatToolCalls(calls []llm.ToolCall) []chatToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]chatToolCall, len(calls))
	for i, c := range calls {
		out[i] = chatToolCall{ID: c.ID, Type: "function"}
		out[i].Function.Name, out[i].Function.Arguments = c.Name, c.Arguments
	}
	return out
}

// decodeChat reads a chat completions request.
func (s *Server) decodeChat(body []byte) (*exchange, error) {
	var req chatRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	x := &exchange{name: req.Model, stream: req.Stream}
	fail := func(err error) (*exchange, error) { return x, err }
	switch {
	case req.Model == "":
		return fail(badRequest("model", "model is required"))
	case len(req.Messages) == 0:
		return fail(badRequest("messages", "messages must not be empty"))
	case req.N != nil && *req.N != 1:
		return fail(badRequest("n", "only n=1 is supported, got n=%d", *req.N))
	case req.StreamOptions != nil && !req.Stream:
		return fail(badRequest("stream_options", "stream_options is only allowed with stream true"))
	case nonEmptyList(req.Functions):
		return fail(badRequest("functions", "functions (deprecated by OpenAI) is not supported; send the functions as tools"))
	case !isNull(req.FunctionCall) && !isString(req.FunctionCall, "none", "auto"):
		return fail(badRequest("function_call", "function_call (deprecated by OpenAI) is not supported; use tool_choice"))
	case req.Logprobs != nil && *req.Logprobs:
		return fail(badRequest("logprobs", "logprobs is not supported; leave it unset or false"))
	case req.PresencePenalty != nil && *req.PresencePenalty != 0:
		return fail(badRequest("presence_penalty", "presence_penalty is not supported; leave it unset or 0"))
	case req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0:
		return fail(badRequest("frequency_penalty", "frequency_penalty is not supported; leave it unset or 0"))
	case nonEmptyObject(req.LogitBias):
		return fail(badRequest("logit_bias", "logit_bias is not supported; leave it unset or empty"))
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return fail(badRequest("top_logprobs", "top_logprobs is not supported (madspark gives no log probabilities); leave it unset or 0"))
	case len(req.Modalities) > 0 && !slices.Equal(req.Modalities, []string{"text"}):
		return fail(badRequest("modalities", "modalities: madspark answers in text only; leave it unset or [\"text\"]"))
	case !isNull(req.Prediction):
		return fail(badRequest("prediction", "prediction (a predicted output) is not supported; leave it unset"))
	}
	if req.StreamOptions != nil {
		if err := obfuscation(req.StreamOptions.IncludeObfuscation); err != nil {
			return fail(err)
		}
	}
	p, g := &x.prompt, &x.given
	smp := sampling{temperature: req.Temperature, topP: req.TopP, maxTokens: req.MaxTokens, maxTokensParam: "max_tokens"}
	if req.MaxCompletionTokens != nil { // the newer name wins
		smp.maxTokens, smp.maxTokensParam = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if err := smp.apply(p, g); err != nil {
		return fail(err)
	}
	var err error
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
	if err := readTools(p, g, req.Tools, req.ToolChoice, req.ParallelToolCalls, true); err != nil {
		return fail(err)
	}
	if err := effort(p, g, req.ReasoningEffort, "reasoning_effort", req.Verbosity, "verbosity"); err != nil {
		return fail(err)
	}
	if err := req.common.apply(p, g); err != nil {
		return fail(err)
	}
	var system []string
	var made calls
	pos := positions{field: "messages"}
	var names participants
	for i, msg := range req.Messages {
		field := fmt.Sprintf("messages[%d].content", i)
		text, err := messageText(msg.Content)
		if err != nil {
			return fail(badRequest(field, "%s: %v", field, err))
		}
		if err := input.Text(field, text); err != nil {
			return fail(badRequest(field, "%v", err))
		}
		at := func(f string) string { return fmt.Sprintf("messages[%d].%s", i, f) }
		switch {
		case !isNull(msg.FunctionCall):
			return fail(badRequest(at("function_call"), "%s (deprecated by OpenAI) is not supported; send tool_calls", at("function_call")))
		case len(msg.ToolCalls) > 0 && msg.Role != "assistant":
			return fail(badRequest(at("tool_calls"), "%s: only an assistant message calls tools", at("tool_calls")))
		case msg.ToolCallID != "" && msg.Role != "tool":
			return fail(badRequest(at("tool_call_id"), "%s: only a tool message answers a tool call", at("tool_call_id")))
		case !isNull(msg.ReasoningContent) && msg.Role != "assistant":
			return fail(badRequest(at("reasoning_content"), "%s: only an assistant message has reasoning", at("reasoning_content")))
		case !isNull(msg.Audio):
			return fail(badRequest(at("audio"), "%s: audio is not supported", at("audio")))
		case nonEmptyList(msg.Annotations):
			return fail(badRequest(at("annotations"), "%s: annotations (citations) are not supported", at("annotations")))
		case msg.Refusal != nil && *msg.Refusal != "":
			return fail(badRequest(at("refusal"), "%s: a refusal sent back is not supported; send it as the content", at("refusal")))
		}
		if msg.Name != "" {
			if err := names.check(msg, made, at("name")); err != nil {
				return fail(err)
			}
		}
		switch msg.Role {
		case "system", "developer":
			if len(system) == 0 {
				g.add(SettingSystem, fmt.Sprintf("messages[%d]", i))
			}
			system = append(system, text)
		case "user":
			p.Messages = append(p.Messages, llm.Message{Role: llm.RoleUser, Content: text})
			pos.add(i)
		case "assistant":
			m := llm.Message{Role: llm.RoleAssistant, Content: text}
			for j, tc := range msg.ToolCalls {
				if tc.Type != "function" {
					return fail(badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].type", i, j), "messages[%d].tool_calls[%d].type %q is not supported: function calls only", i, j, tc.Type))
				}
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			if err := made.add(m.ToolCalls, at("tool_calls")); err != nil {
				return fail(err)
			}
			p.Messages = append(p.Messages, m)
			pos.add(i)
		case "tool":
			if err := made.answers(msg.ToolCallID, at("tool_call_id")); err != nil {
				return fail(err)
			}
			p.Messages = append(p.Messages, llm.Message{Role: llm.RoleTool, Content: text, ToolCallID: msg.ToolCallID})
			pos.add(i)
		default:
			return fail(badRequest(at("role"), "%s %q is not supported (want system, developer, user, assistant or tool)", at("role"), msg.Role))
		}
	}
	p.System = systemText(system)
	if strings.TrimSpace(p.Query()) == "" {
		return fail(badRequest("messages", "messages must include a user message with content"))
	}
	pos.turns(p, g)
	id := "chatcmpl-" + randomID()
	x.wire = &chatWire{id: id, created: time.Now().Unix(), model: req.Model,
		usage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	return x, nil
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

// The response types: a chat.completion object, and the usage chunk of a
// stream (the other chunks are written by chunker).
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
		Role string `json:"role"`
		// Content is null for an answer that only calls tools.
		Content *string `json:"content"`
		// ReasoningContent is a pipeline's account of its work, where
		// vLLM's reasoning parsers and DeepSeek put a model's thinking.
		ReasoningContent string         `json:"reasoning_content,omitempty"`
		ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
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
)

// chatWire writes a chat completion: a chat.completion object, or chunks,
// then the usage chunk if asked for, then [DONE]; a failure ends the
// stream with an error object and no [DONE].
type chatWire struct {
	id, model string
	created   int64
	// usage: stream_options.include_usage.
	usage bool
}

func (cw *chatWire) body(c *Completion) any {
	finish := finishReason(c)
	return &chatCompletion{
		ID: cw.id, Object: "chat.completion", Created: cw.created, Model: cw.model,
		Choices:  []choice{{Message: messageOf(c), FinishReason: &finish}},
		Usage:    usageOf(c.Usage),
		Madspark: extensionOf(c),
	}
}

func (cw *chatWire) events() eventStream {
	return &chatEvents{chunker: newChunker(cw.id, cw.created, cw.model), usage: cw.usage}
}

// chatEvents are the events of a streamed chat completion.
type chatEvents struct {
	*chunker
	usage bool
}

func (e *chatEvents) open() []byte { return e.delta(`{"role":"assistant","content":""}`, "") }

func (e *chatEvents) text(delta string) []byte { return e.content(delta) }

func (e *chatEvents) reasoning(delta string) []byte { return e.reasoningContent(delta) }

// messageOf is the message of an answer.
func messageOf(c *Completion) *message {
	m := &message{Role: "assistant", ReasoningContent: c.Reasoning, ToolCalls: chatToolCalls(c.ToolCalls)}
	if c.Text != "" || len(c.ToolCalls) == 0 {
		m.Content = &c.Text
	}
	return m
}

func (e *chatEvents) done(c *Completion) []byte {
	var b []byte
	// The calls come whole, one chunk each, once the answer is known.
	for i, tc := range chatToolCalls(c.ToolCalls) {
		b = append(b, e.delta(string(mustJSON(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": tc.Type, "function": tc.Function}}})), "")...)
	}
	b = append(b, e.delta(`{}`, finishReason(c))...)
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

func usageOf(u llm.Usage) *wireUsage {
	// A cached answer reports the tokens it took when it was made, its
	// prompt's as cached tokens (and the extension's cached_calls says it
	// was cached).
	in, out := u.InputTokens+u.CachedInputTokens, u.OutputTokens+u.CachedOutputTokens
	w := &wireUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
	w.PromptTokensDetails.CachedTokens = u.CachedInputTokens
	return w
}
