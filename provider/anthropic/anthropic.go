// Package anthropic is the Anthropic provider: an llm.Client that talks to
// the Claude Messages API through github.com/anthropics/anthropic-sdk-go.
//
// The client makes exactly one HTTP request per Generate call: the SDK's
// retries (two by default) are switched off, because retrying is the job of
// the retry middleware. The SDK's environment defaults (ANTHROPIC_API_KEY,
// ANTHROPIC_BASE_URL, profiles, ...) are not used either; Config is the
// whole configuration.
package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/madspark/madspark/llm"
)

// Name is the provider name reported in responses and errors.
const Name = "anthropic"

// DefaultModel is the model used when neither Config.Model nor
// llm.Request.Model names one.
const DefaultModel = "claude-sonnet-4-6"

// DefaultMaxTokens is the reply cap sent when llm.Request.MaxTokens is 0;
// the Messages API requires one.
const DefaultMaxTokens = 4096

// maxNonStreamingTokens is the largest max_tokens the SDK accepts for a
// non-streaming call: it refuses calls it expects to last over ten minutes
// (max_tokens/128000 hours). Larger requests are streamed.
const maxNonStreamingTokens = 21333

// Config configures a Client.
type Config struct {
	// APIKey is the Anthropic API key, sent as the x-api-key header.
	APIKey string
	// Model is the default model; DefaultModel when empty.
	Model string
	// BaseURL overrides the API endpoint, such as an httptest server's URL
	// in tests. Empty means https://api.anthropic.com/.
	BaseURL string
	// HTTPClient is the HTTP client to use; the SDK's default when nil.
	HTTPClient *http.Client
}

// Client is a Claude model. It is safe for concurrent use.
type Client struct {
	msgs   sdk.MessageService
	model  string
	apiKey string
}

// New returns a Client. It does no network I/O.
func New(cfg Config) *Client {
	model := cfg.Model
	if model == "" {
		model = DefaultModel
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	c := sdk.NewClient(opts...)
	return &Client{msgs: c.Messages, model: model, apiKey: cfg.APIKey}
}

// Generate sends req to the Messages API. With req.OnDelta set, or with a
// MaxTokens too large for a non-streaming call, it streams over SSE. Every
// failure is an *llm.Error.
func (c *Client) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, tool, err := c.build(req)
	if err != nil {
		return nil, err
	}
	w := llm.WireOf(req)
	if tool != nil {
		// Structured output is the forced tool: that is what was sent.
		w.ResponseFormat, _ = json.Marshal(map[string]any{"tools": params.Tools, "tool_choice": params.ToolChoice})
	}
	llm.SendingWire(ctx, w)
	if req.OnDelta != nil || params.MaxTokens > maxNonStreamingTokens {
		return c.stream(ctx, params, tool, req.OnDelta)
	}
	msg, err := c.msgs.New(ctx, params)
	if err != nil {
		return nil, c.toError(ctx, err, false)
	}
	return finish(msg, tool)
}

// build translates req into the SDK's parameters. tool is the structured
// output tool when req has a schema, or nil.
func (c *Client) build(req *llm.Request) (sdk.MessageNewParams, *outputTool, error) {
	if err := llm.CheckTools(req.Tools, req.ToolChoice); err != nil {
		return sdk.MessageNewParams{}, nil, &llm.Error{Provider: Name, Message: err.Error(), Param: "tools"}
	}
	if req.Schema != nil && len(req.Tools) > 0 {
		// Structured output is a forced tool here: the two cannot share
		// the tool choice.
		return sdk.MessageNewParams{}, nil, &llm.Error{Provider: Name, Param: "tools",
			Message: "Anthropic's structured output is a forced tool call, so a request cannot ask for JSON of a schema and offer tools at once"}
	}
	model := req.Model
	if model == "" {
		model = c.model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := sdk.MessageNewParams{
		Model:       sdk.Model(model),
		MaxTokens:   int64(maxTokens),
		Temperature: sdk.Float(req.Temperature),
		Messages:    make([]sdk.MessageParam, 0, len(req.Messages)),
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	if req.TopP != nil {
		params.TopP = sdk.Float(*req.TopP)
	}
	params.StopSequences = req.Stop
	if req.Seed != nil {
		// Sent nowhere, it would be a setting silently dropped.
		return params, nil, &llm.Error{Provider: Name, Message: "Anthropic's API takes no seed; leave seed unset"}
	}
	msgs, err := messagesOf(req.Messages)
	if err != nil {
		return params, nil, err
	}
	params.Messages = msgs
	if err := tools(&params, req); err != nil {
		return params, nil, err
	}
	if req.Schema == nil {
		return params, nil, nil
	}
	tool, err := newOutputTool(req.Schema)
	if err != nil {
		return params, nil, err
	}
	// Structured output is a single tool whose input schema is the schema,
	// and tool_choice forcing the model to call it: the reply is the tool
	// call's input. Forced tool use is Anthropic's most widely supported
	// structured-output mechanism (every Claude model, on every platform the
	// Messages API is served from), unlike the newer output_config.format.
	params.Tools = []sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{
		Name:        tool.name,
		Description: sdk.String("Give your reply by calling this tool; its input is the reply, as JSON conforming to the input schema."),
		InputSchema: tool.inputSchema,
	}}}
	params.ToolChoice = sdk.ToolChoiceParamOfTool(tool.name)
	return params, tool, nil
}

// messagesOf translates a conversation: a user or assistant message's
// text is a text block, an assistant's tool calls tool_use blocks after
// it, and the results of calls, which follow them, tool_result blocks of
// one user message.
func messagesOf(in []llm.Message) ([]sdk.MessageParam, error) {
	out := make([]sdk.MessageParam, 0, len(in))
	for i, m := range in {
		switch m.Role {
		case llm.RoleUser:
			out = append(out, sdk.NewUserMessage(sdk.NewTextBlock(m.Content)))
		case llm.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" || len(m.ToolCalls) == 0 {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				var input map[string]json.RawMessage
				if err := json.Unmarshal([]byte(cmp.Or(tc.Arguments, "{}")), &input); err != nil {
					return nil, &llm.Error{Provider: Name, Param: "tools",
						Message: fmt.Sprintf("message %d: the arguments of tool call %s are not a JSON object", i, tc.ID)}
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, json.RawMessage(cmp.Or(tc.Arguments, "{}")), tc.Name))
			}
			out = append(out, sdk.NewAssistantMessage(blocks...))
		case llm.RoleTool:
			result := sdk.NewToolResultBlock(m.ToolCallID, m.Content, false)
			if n := len(out); n > 0 && i > 0 && in[i-1].Role == llm.RoleTool {
				out[n-1].Content = append(out[n-1].Content, result)
			} else {
				out = append(out, sdk.NewUserMessage(result))
			}
		default:
			return nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
	}
	return out, nil
}

// tools puts req's tools and tool choice on p: "required" is Anthropic's
// "any", a function named its "tool", and parallel_tool_calls false its
// disable_parallel_tool_use.
func tools(p *sdk.MessageNewParams, req *llm.Request) error {
	for _, tool := range req.Tools {
		params := tool.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		schema, err := inputSchema(params)
		if err != nil {
			return &llm.Error{Provider: Name, Param: "tools", Message: fmt.Sprintf("tool %s: %v", tool.Name, err)}
		}
		tp := &sdk.ToolParam{Name: tool.Name, InputSchema: schema}
		if tool.Description != "" {
			tp.Description = sdk.String(tool.Description)
		}
		if tool.Strict {
			tp.Strict = sdk.Bool(true)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	serial := req.ParallelToolCalls != nil && !*req.ParallelToolCalls && len(req.Tools) > 0
	switch c := req.ToolChoice; {
	case c == nil && serial:
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: sdk.Bool(true)}}
	case c == nil:
	case c.Mode == llm.ToolNone:
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case c.Mode == llm.ToolRequired && c.Name != "":
		p.ToolChoice = sdk.ToolChoiceParamOfTool(c.Name)
		if serial {
			p.ToolChoice.OfTool.DisableParallelToolUse = sdk.Bool(true)
		}
	case c.Mode == llm.ToolRequired:
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
		if serial {
			p.ToolChoice.OfAny.DisableParallelToolUse = sdk.Bool(true)
		}
	default:
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
		if serial {
			p.ToolChoice.OfAuto.DisableParallelToolUse = sdk.Bool(true)
		}
	}
	return nil
}

// outputTool is the tool that carries a structured reply.
type outputTool struct {
	name        string
	inputSchema sdk.ToolInputSchemaParam
	// wrapped reports that the schema is not an object schema, so it was
	// wrapped as the "value" property of one (a tool input is an object).
	wrapped bool
}

// wrapKey is the property that holds a non-object reply.
const wrapKey = "value"

func newOutputTool(s *llm.Schema) (*outputTool, error) {
	name := s.Name
	if name == "" {
		name = "structured_output"
	}
	var doc map[string]any
	if err := json.Unmarshal(s.JSON, &doc); err != nil {
		return nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("schema %q: %v (it must be a JSON object)", name, err), Err: err}
	}
	t := &outputTool{name: name}
	if typ, _ := doc["type"].(string); typ != "object" {
		t.wrapped = true
		inner := make(map[string]any, len(doc))
		extra := map[string]any{"additionalProperties": false}
		for k, v := range doc {
			switch k {
			case "$defs", "definitions", "$schema":
				// Local $refs point at the root, which is now the wrapper.
				extra[k] = v
			default:
				inner[k] = v
			}
		}
		t.inputSchema = sdk.ToolInputSchemaParam{
			Properties:  map[string]any{wrapKey: inner},
			Required:    []string{wrapKey},
			ExtraFields: extra,
		}
		return t, nil
	}
	t.inputSchema = objectSchema(doc)
	return t, nil
}

// inputSchema is a tool's input schema from the JSON Schema of an object.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("the parameters are not a JSON Schema object: %w", err)
	}
	if typ, _ := doc["type"].(string); typ != "object" {
		return sdk.ToolInputSchemaParam{}, errors.New(`the parameters' schema must be of type "object"`)
	}
	return objectSchema(doc), nil
}

// objectSchema is the input schema of doc, an object's JSON Schema: the
// SDK models one as properties + required + extra fields; everything but
// "type" goes through unchanged.
func objectSchema(doc map[string]any) sdk.ToolInputSchemaParam {
	var s sdk.ToolInputSchemaParam
	s.Properties = doc["properties"]
	if req, ok := doc["required"].([]any); ok {
		for _, r := range req {
			if str, ok := r.(string); ok {
				s.Required = append(s.Required, str)
			}
		}
	}
	extra := make(map[string]any)
	for k, v := range doc {
		switch k {
		case "type", "properties", "required":
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		s.ExtraFields = extra
	}
	return s
}

// replyText returns the structured reply in a tool call's input.
func (t *outputTool) replyText(input json.RawMessage) (string, error) {
	if !t.wrapped {
		return string(input), nil
	}
	var w map[string]json.RawMessage
	if err := json.Unmarshal(input, &w); err != nil {
		return "", err
	}
	v, ok := w[wrapKey]
	if !ok {
		return "", fmt.Errorf("tool input has no %q", wrapKey)
	}
	return string(v), nil
}

// stream runs a streaming call. Text deltas go to onDelta (when not nil);
// for a structured request the tool input's partial JSON goes there instead,
// so that the deltas add up to Response.Text. (A wrapped non-object reply
// cannot be unwrapped piecemeal; it is delivered as one delta at the end.)
func (c *Client) stream(ctx context.Context, params sdk.MessageNewParams, tool *outputTool, onDelta func(string)) (*llm.Response, error) {
	s := c.msgs.NewStreaming(ctx, params)
	defer s.Close()
	var msg sdk.Message
	stopped := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, &llm.Error{Provider: Name, Message: "stream broken: " + err.Error(), Retryable: true, Err: err}
		}
		switch ev.Type {
		case "content_block_delta":
			if onDelta == nil {
				break
			}
			switch {
			case tool == nil && ev.Delta.Type == "text_delta" && ev.Delta.Text != "":
				onDelta(ev.Delta.Text)
			case tool != nil && !tool.wrapped && ev.Delta.Type == "input_json_delta" && ev.Delta.PartialJSON != "":
				onDelta(ev.Delta.PartialJSON)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, c.toError(ctx, err, true)
	}
	if !stopped {
		if err := ctx.Err(); err != nil {
			return nil, c.toError(ctx, err, true)
		}
		// The body ended cleanly but without message_stop.
		return nil, &llm.Error{
			Provider:  Name,
			Message:   "stream ended before message_stop",
			Retryable: true,
			Err:       io.ErrUnexpectedEOF,
		}
	}
	resp, err := finish(&msg, tool)
	if err == nil && onDelta != nil && tool != nil && tool.wrapped {
		onDelta(resp.Text)
	}
	return resp, err
}

// finish turns a complete message into a Response.
func finish(msg *sdk.Message, tool *outputTool) (*llm.Response, error) {
	stop := strings.ToLower(string(msg.StopReason))
	if stop == "" {
		stop = "none"
	}
	var text strings.Builder
	var calls []llm.ToolCall
	found := false
	for _, b := range msg.Content {
		switch {
		case tool == nil && b.Type == "text":
			text.WriteString(b.Text)
		case tool == nil && b.Type == "tool_use":
			calls = append(calls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		case tool != nil && b.Type == "tool_use" && b.Name == tool.name && !found:
			found = true
			t, err := tool.replyText(b.Input)
			if err != nil {
				return nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("structured reply (stop reason %s): %v", stop, err), Err: err}
			}
			text.WriteString(t)
		}
	}
	switch {
	case tool != nil && !found:
		return nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("no %s tool call in the reply: stop reason %s", tool.name, stop)}
	case msg.StopReason == sdk.StopReasonRefusal:
		return nil, &llm.Error{Provider: Name, Message: "reply refused: stop reason refusal"}
	case text.Len() == 0 && len(calls) == 0:
		return nil, &llm.Error{Provider: Name, Message: "empty reply: stop reason " + stop}
	}
	finishReason := strings.ToLower(string(msg.StopReason))
	if len(calls) > 0 {
		finishReason = llm.FinishToolCalls
	}
	return &llm.Response{
		Text:         text.String(),
		ToolCalls:    calls,
		Provider:     Name,
		Model:        string(msg.Model),
		FinishReason: finishReason,
		Usage: llm.Usage{
			LLMCalls:     1,
			InputTokens:  int(msg.Usage.InputTokens),
			OutputTokens: int(msg.Usage.OutputTokens),
		},
	}, nil
}

// toError translates an error from the SDK into an *llm.Error. inStream
// reports a streaming call, where a failure that is not an API error is a
// broken stream.
func (c *Client) toError(ctx context.Context, err error, inStream bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// A cancelled call is never retried; a deadline may be a per-call
		// timeout (middleware.Timeout), which is.
		return &llm.Error{
			Provider:  Name,
			Message:   ctxErr.Error(),
			Retryable: errors.Is(ctxErr, context.DeadlineExceeded),
			Err:       ctxErr,
		}
	}
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		msg := llm.Redact(err.Error(), c.apiKey)
		if inStream {
			msg = "stream broken: " + msg
		}
		return &llm.Error{
			Provider: Name,
			Message:  msg,
			// Anything that is not an answer from the API is a transport
			// failure: refused or reset connection, timeout, truncated body,
			// an event that is not JSON.
			Retryable: true,
			Err:       &redactedError{msg: msg, err: err},
		}
	}

	typ, msg := errorBody(apiErr.RawJSON())
	status := apiErr.StatusCode
	if status < 400 {
		// An error event inside a 200 stream: take the status its type
		// stands for.
		status = statusOfType(typ)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if typ != "" {
		msg = typ + ": " + msg
	}
	if inStream && apiErr.StatusCode < 400 {
		msg = "error in stream: " + msg
	}
	msg = llm.Redact(msg, c.apiKey)
	e := &llm.Error{
		Provider:  Name,
		Status:    status,
		Message:   msg,
		Retryable: llm.RetryableStatus(status),
		// The SDK's error text (method, URL, status, request ID, raw body)
		// is kept for debugging, scrubbed; the *sdk.Error itself is not
		// wrapped, since it prints the body as the server sent it.
		Err: errors.New(llm.Redact(err.Error(), c.apiKey)),
	}
	if apiErr.Response != nil {
		e.RetryAfter = llm.RetryAfterHeader(apiErr.Response.Header)
	}
	return e
}

// errorBody extracts the error type and message from an API error body:
// {"type":"error","error":{"type":"rate_limit_error","message":"..."}}.
func errorBody(raw string) (typ, msg string) {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) != nil {
		return "", strings.TrimSpace(raw)
	}
	return body.Error.Type, body.Error.Message
}

// statusOfType maps an Anthropic error type to its HTTP status.
func statusOfType(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	default: // "api_error" and anything new
		return http.StatusInternalServerError
	}
}

// redactedError carries an SDK error under a message with credentials
// removed, so that printing any error in the chain's head is safe.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string    { return e.msg }
func (e *redactedError) GoString() string { return fmt.Sprintf("%q", e.msg) }
func (e *redactedError) Unwrap() error    { return e.err }
