// Package openai is the OpenAI-compatible provider: an llm.Client that talks
// the Chat Completions API through the official SDK,
// github.com/openai/openai-go/v3. The same client serves OpenAI itself and
// the OpenAI-compatible endpoints of llama-server, vLLM and Ollama.
//
// The client makes exactly one HTTP request per Generate call: the SDK's own
// retries are switched off, because retrying is the job of the retry
// middleware and every request is billed. It does not read the environment
// (the SDK would otherwise pick up OPENAI_BASE_URL, OPENAI_API_KEY,
// OPENAI_ORG_ID and friends); everything comes from Config.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/madspark/madspark/llm"
)

// DefaultName is the provider name used when Config.Name is empty.
const DefaultName = "openai"

// DefaultModel is the model used when neither Config.Model nor
// llm.Request.Model names one.
const DefaultModel = "gpt-4o-mini"

// DefaultBaseURL is OpenAI's API endpoint, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// placeholderKey is sent when Config.APIKey is empty. Local servers ignore
// the Authorization header, and the SDK needs something to put in it.
const placeholderKey = "none"

// Config configures a Client.
type Config struct {
	// Name is the provider name reported in Response.Provider and in
	// errors, such as "openai" or "ollama"; DefaultName when empty.
	Name string
	// BaseURL is the API base URL, including the version path, such as
	// "https://api.openai.com/v1" or "http://127.0.0.1:11434/v1";
	// DefaultBaseURL when empty.
	BaseURL string
	// APIKey is sent as a bearer token. It may be empty for local servers.
	APIKey string
	// Model is the default model; DefaultModel when empty.
	Model string
	// HTTPClient is the HTTP client to use; a new one when nil.
	HTTPClient *http.Client
	// Structured says how a request's schema reaches the server:
	// StructuredNative sends it as response_format json_schema, which
	// OpenAI enforces and llama-server, Ollama, vLLM and LM Studio turn
	// into a grammar that constrains decoding; StructuredPrompt puts its
	// compact description (llm.Schema.Hint) in the system prompt instead;
	// StructuredBoth does both, for servers that accept the schema but may
	// not enforce it. Empty means native on OpenAI's own API and both
	// elsewhere. A server that refuses response_format (a 4xx naming it)
	// gets the request again with the schema in the prompt, and every
	// later one that way (Client.StructuredMode says so).
	Structured string
	// OnFallback, optional, is told once when the server refused
	// response_format and the schema went into the prompt instead.
	OnFallback func(reason string)
}

// The ways a schema reaches the server; see Config.Structured.
const (
	StructuredNative = "native"
	StructuredPrompt = "prompt"
	StructuredBoth   = "both"
)

// Client is a model behind an OpenAI-compatible Chat Completions endpoint.
// It is safe for concurrent use.
type Client struct {
	chat   sdk.ChatCompletionService
	name   string
	model  string
	apiKey string
	// official reports that the endpoint is OpenAI's own API.
	official bool
	// structured is Config.Structured, resolved.
	structured string
	// refused is set once the server refused response_format: from then
	// on every schema goes in the prompt.
	refused    atomic.Bool
	onFallback func(string)
}

var _ llm.Client = (*Client)(nil)

// New returns a Client for cfg. It does no network I/O.
func New(cfg Config) *Client {
	name := cfg.Name
	if name == "" {
		name = DefaultName
	}
	model := cfg.Model
	if model == "" {
		model = DefaultModel
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	key := cfg.APIKey
	if key == "" {
		key = placeholderKey
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	// NewChatCompletionService, unlike sdk.NewClient, starts from no
	// options at all, so nothing is taken from the environment.
	chat := sdk.NewChatCompletionService(
		option.WithBaseURL(base),
		option.WithAPIKey(key),
		option.WithHTTPClient(hc),
		// One attempt: the retry middleware retries, with its own budget
		// and backoff; stacking the SDK's two retries under it would
		// multiply the attempts (and the bill).
		option.WithMaxRetries(0),
	)
	official := isOfficial(base)
	structured := StructuredMode(cfg.Structured, base)
	return &Client{chat: chat, name: name, model: model, apiKey: cfg.APIKey, official: official, structured: structured, onFallback: cfg.OnFallback}
}

// StructuredMode says how schemas reach the server now: native, prompt or
// both (see Config.Structured); prompt once the server refused
// response_format.
func (c *Client) StructuredMode() string {
	if c.refused.Load() {
		return StructuredPrompt
	}
	return c.structured
}

// StructuredMode is how a schema reaches the server at base (a base URL,
// DefaultBaseURL when empty) given Config.Structured: structured itself
// when set, else StructuredNative for OpenAI's own API and StructuredBoth
// for any other server, which may accept a schema without enforcing it.
func StructuredMode(structured, base string) string {
	switch {
	case structured != "":
		return structured
	case base == "" || isOfficial(base):
		return StructuredNative
	}
	return StructuredBoth
}

// isOfficial reports whether base is OpenAI's own API.
func isOfficial(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// Generate sends req as one Chat Completions request. With req.OnDelta set
// it streams over SSE. Every failure is an *llm.Error.
func (c *Client) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	mode := c.StructuredMode()
	resp, err := c.generate(ctx, req, mode)
	if err != nil && req.Schema != nil && mode != StructuredPrompt && refusesSchema(err) {
		// The server does not take response_format: the schema goes in
		// the prompt, for this request and every later one.
		if c.refused.CompareAndSwap(false, true) && c.onFallback != nil {
			c.onFallback(err.Error())
		}
		return c.generate(ctx, req, StructuredPrompt)
	}
	if le, ok := errors.AsType[*llm.Error](err); ok && len(req.Tools) > 0 && le.Param == "" && refuses(err, "tool", "function") {
		// The server does not take tools (llama-server without --jinja,
		// a model without function calling): the request is at fault.
		le.Param = "tools"
	}
	return resp, err
}

// refusesSchema reports whether err is a server refusing the request
// because of its response_format.
func refusesSchema(err error) bool {
	return refuses(err, "response_format", "response format", "json_schema", "json schema", "grammar", "structured output")
}

// refuses reports whether err is a server refusing a request for
// something its message names: a 4xx other than 401, 403, 404, 408 and
// 429 whose message has one of words.
func refuses(err error, words ...string) bool {
	var le *llm.Error
	if !errors.As(err, &le) || le.Status < 400 || le.Status >= 500 {
		return false
	}
	switch le.Status {
	case 401, 403, 404, 408, 429:
		return false
	}
	msg := strings.ToLower(le.Message)
	for _, w := range words {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// generate is Generate with the schema sent as mode says.
func (c *Client) generate(ctx context.Context, req *llm.Request, mode string) (*llm.Response, error) {
	params, err := c.build(req, mode)
	if err != nil {
		return nil, err
	}
	llm.SendingWire(ctx, wireOf(&params))
	// The raw HTTP response, kept even when the SDK fails, for the status
	// and Retry-After headers of errors whose body the SDK cannot decode.
	var httpResp *http.Response
	into := option.WithResponseInto(&httpResp)
	if req.OnDelta != nil {
		return c.stream(ctx, params, req.OnDelta, into, &httpResp)
	}
	resp, err := c.chat.New(ctx, params, into)
	if err != nil {
		return nil, c.toError(ctx, err, httpResp, false)
	}
	if len(resp.Choices) == 0 {
		return nil, &llm.Error{Provider: c.name, Message: "reply has no choices"}
	}
	choice := resp.Choices[0]
	r := result{model: resp.Model, finishReason: choice.FinishReason, refusal: choice.Message.Refusal}
	r.text.WriteString(choice.Message.Content)
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, &llm.Error{Provider: c.name, Message: fmt.Sprintf("reply calls a tool of type %q; only functions were offered", tc.Type), Invalid: true,
				Usage: llm.Usage{InputTokens: int(resp.Usage.PromptTokens), OutputTokens: int(resp.Usage.CompletionTokens)}}
		}
		r.calls = append(r.calls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	r.inTokens, r.outTokens = int(resp.Usage.PromptTokens), int(resp.Usage.CompletionTokens)
	return c.finish(&r, &params)
}

// build translates req into the SDK's request parameters, its schema sent
// as mode says.
func (c *Client) build(req *llm.Request, mode string) (sdk.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = c.model
	}
	msgs := make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	system := req.System
	if req.Schema != nil && req.Schema.Hint != "" && mode != StructuredNative {
		// The server may not hold the reply to the schema: say it in words.
		system = strings.TrimSpace(system + "\n\nReply with only a JSON value of this shape: " + req.Schema.Hint)
	}
	if system != "" {
		msgs = append(msgs, sdk.SystemMessage(system))
	}
	for i, m := range req.Messages {
		switch {
		case m.Role == llm.RoleUser:
			msgs = append(msgs, sdk.UserMessage(m.Content))
		case m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0:
			a := &sdk.ChatCompletionAssistantMessageParam{}
			if m.Content != "" {
				a.Content.OfString = sdk.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments}}})
			}
			msgs = append(msgs, sdk.ChatCompletionMessageParamUnion{OfAssistant: a})
		case m.Role == llm.RoleAssistant:
			msgs = append(msgs, sdk.AssistantMessage(m.Content))
		case m.Role == llm.RoleTool:
			msgs = append(msgs, sdk.ToolMessage(m.Content, m.ToolCallID))
		default:
			return sdk.ChatCompletionNewParams{}, &llm.Error{Provider: c.name, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
	}
	p := sdk.ChatCompletionNewParams{
		Model:       shared.ChatModel(model),
		Messages:    msgs,
		Temperature: sdk.Float(req.Temperature),
	}
	if req.MaxTokens > 0 {
		// OpenAI deprecated max_tokens in favour of max_completion_tokens,
		// and its reasoning models (o-series, gpt-5) reject max_tokens. But
		// Ollama's compatible endpoint silently ignores
		// max_completion_tokens, and older llama-server and vLLM builds only
		// know max_tokens. So OpenAI's own API gets max_completion_tokens
		// and every other server gets max_tokens, which all of them honour.
		if c.official {
			p.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	if req.TopP != nil {
		p.TopP = sdk.Float(*req.TopP)
	}
	if len(req.Stop) > 0 {
		p.Stop = sdk.ChatCompletionNewParamsStopUnion{OfStringArray: req.Stop}
	}
	if req.Seed != nil {
		p.Seed = sdk.Int(*req.Seed)
	}
	// Both are OpenAI's own fields, sent as they are: a server that does
	// not take them says so.
	if req.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
	}
	if req.Verbosity != "" {
		p.Verbosity = sdk.ChatCompletionNewParamsVerbosity(req.Verbosity)
	}
	if err := c.tools(&p, req); err != nil {
		return p, err
	}
	if req.Schema != nil && mode != StructuredPrompt {
		if !json.Valid(req.Schema.JSON) {
			return p, &llm.Error{Provider: c.name, Message: fmt.Sprintf("schema %q is not valid JSON", req.Schema.Name)}
		}
		name := req.Schema.Name
		if name == "" {
			name = "response"
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name: name,
					// The schema goes as is, key order kept.
					Schema: json.RawMessage(req.Schema.JSON),
					// Strict mode accepts only a subset of JSON Schema
					// (no minimum, maximum, pattern, ...; every property
					// required); our own schemas use more than that, so
					// only a schema marked strict is sent as one.
					Strict: sdk.Bool(req.Schema.Strict),
				},
			},
		}
	}
	return p, nil
}

// tools puts req's tools, tool choice and parallel_tool_calls on p. A
// function's JSON goes as the request gives it, its parameters' key order
// kept.
func (c *Client) tools(p *sdk.ChatCompletionNewParams, req *llm.Request) error {
	if err := llm.CheckTools(req.Tools, req.ToolChoice); err != nil {
		return &llm.Error{Provider: c.name, Message: err.Error(), Param: "tools"}
	}
	for _, tool := range req.Tools {
		b, err := json.Marshal(functionJSON{Name: tool.Name, Description: tool.Description, Parameters: tool.Parameters, Strict: tool.Strict})
		if err != nil {
			return &llm.Error{Provider: c.name, Message: fmt.Sprintf("tool %s: %v", tool.Name, err), Param: "tools"}
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](json.RawMessage(b))))
	}
	if ch := req.ToolChoice; ch != nil {
		if ch.Mode == llm.ToolRequired && ch.Name != "" {
			p.ToolChoice.OfFunctionToolChoice = &sdk.ChatCompletionNamedToolChoiceParam{Function: sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: ch.Name}}
		} else {
			p.ToolChoice.OfAuto = sdk.String(ch.Mode)
		}
	}
	if req.ParallelToolCalls != nil && len(req.Tools) > 0 {
		p.ParallelToolCalls = sdk.Bool(*req.ParallelToolCalls)
	}
	return nil
}

// functionJSON is a function tool's definition as it is sent.
type functionJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// wireOf is what p sends, for the caller's record (llm.SendingWire): its
// messages, the system prompt first, and its response_format.
func wireOf(p *sdk.ChatCompletionNewParams) llm.Wire {
	w := llm.Wire{Messages: make([]llm.Message, 0, len(p.Messages))}
	for _, m := range p.Messages {
		role, content := "", ""
		switch {
		case m.OfSystem != nil:
			role, content = string(llm.RoleSystem), m.OfSystem.Content.OfString.Value
		case m.OfUser != nil:
			role, content = string(llm.RoleUser), m.OfUser.Content.OfString.Value
		case m.OfAssistant != nil:
			role, content = string(llm.RoleAssistant), m.OfAssistant.Content.OfString.Value
		case m.OfTool != nil:
			role, content = string(llm.RoleTool), m.OfTool.Content.OfString.Value
		}
		msg := llm.Message{Role: llm.Role(role), Content: content}
		if m.OfTool != nil {
			msg.ToolCallID = m.OfTool.ToolCallID
		}
		if m.OfAssistant != nil {
			for _, tc := range m.OfAssistant.ToolCalls {
				if f := tc.OfFunction; f != nil {
					msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: f.ID, Name: f.Function.Name, Arguments: f.Function.Arguments})
				}
			}
		}
		w.Messages = append(w.Messages, msg)
	}
	if p.ResponseFormat.OfJSONSchema != nil {
		w.ResponseFormat, _ = json.Marshal(p.ResponseFormat)
	}
	return w
}

// stream runs a streaming call, passing content deltas to onDelta. The
// SDK makes the request (its options, authentication and errors); the
// events are read with the SDK's SSE decoder and decoded here into the few
// fields a reply needs, which costs a fraction of decoding each into the
// SDK's full chunk type (a model streams a chunk per token).
func (c *Client) stream(ctx context.Context, p sdk.ChatCompletionNewParams, onDelta func(string), into option.RequestOption, httpResp **http.Response) (*llm.Response, error) {
	p.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	var raw *http.Response
	_, err := c.chat.New(ctx, p, into, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&raw))
	if err != nil {
		return nil, c.toError(ctx, err, *httpResp, false)
	}
	defer raw.Body.Close()
	dec := ssestream.NewDecoder(raw)
	var r result
	chunks := 0
	for dec.Next() {
		ev := dec.Event()
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		var ch streamChunk
		if err := decodeChunk(ev.Data, &ch); err != nil {
			return nil, c.toError(ctx, fmt.Errorf("decode a stream event: %w", err), nil, true)
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return nil, c.toError(ctx, &ssestream.StreamError{Message: "received error while streaming: " + string(ch.Error), Event: ev}, nil, true)
		}
		chunks++
		if ch.Model != "" {
			r.model = ch.Model
		}
		if u := ch.Usage; u != nil && (u.PromptTokens != 0 || u.CompletionTokens != 0) {
			r.inTokens, r.outTokens = u.PromptTokens, u.CompletionTokens
		}
		for _, choice := range ch.Choices {
			if choice.Index != 0 {
				continue
			}
			if d := choice.Delta.Content; d != "" {
				r.text.WriteString(d)
				onDelta(d)
			}
			if err := r.addCallDeltas(choice.Delta.ToolCalls); err != nil {
				return nil, &llm.Error{Provider: c.name, Message: err.Error(), Invalid: true}
			}
			r.refusal += choice.Delta.Refusal
			if choice.FinishReason != "" {
				r.finishReason = choice.FinishReason
			}
		}
	}
	if err := dec.Err(); err != nil {
		return nil, c.toError(ctx, err, *httpResp, true)
	}
	if r.finishReason == "" {
		if ctx.Err() != nil {
			return nil, c.toError(ctx, ctx.Err(), nil, true)
		}
		// The body ended without a finish_reason (and so without a
		// complete reply): the connection was cut or the server gave up.
		return nil, &llm.Error{
			Provider:  c.name,
			Message:   fmt.Sprintf("stream ended early, before the model finished (%d chunks received)", chunks),
			Retryable: true,
			Err:       io.ErrUnexpectedEOF,
		}
	}
	return c.finish(&r, &p)
}

// streamChunk is what a reply needs of a chat.completion.chunk event (or
// of an error event).
type streamChunk struct {
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"`
	Usage   *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamChoice is a choice of a chat.completion.chunk: its delta.
type streamChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content   string          `json:"content"`
		Refusal   string          `json:"refusal"`
		ToolCalls []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

// toolCallDelta is a piece of a streamed tool call: the first piece of a
// call has its index, ID and name, the others more of its arguments.
type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// result accumulates one reply.
type result struct {
	text                strings.Builder
	calls               []llm.ToolCall
	model               string
	finishReason        string
	refusal             string
	inTokens, outTokens int
}

// addCallDeltas adds the pieces of streamed tool calls to r's calls: a
// piece with a new index starts a call, the others add to theirs.
func (r *result) addCallDeltas(deltas []toolCallDelta) error {
	for _, d := range deltas {
		switch {
		case d.Type != "" && d.Type != "function":
			return fmt.Errorf("reply calls a tool of type %q; only functions were offered", d.Type)
		case d.Index == len(r.calls):
			r.calls = append(r.calls, llm.ToolCall{ID: d.ID, Name: d.Function.Name, Arguments: d.Function.Arguments})
		case d.Index >= 0 && d.Index < len(r.calls):
			tc := &r.calls[d.Index]
			tc.ID += d.ID
			tc.Name += d.Function.Name
			tc.Arguments += d.Function.Arguments
		default:
			return fmt.Errorf("a streamed tool call has index %d after %d calls", d.Index, len(r.calls))
		}
	}
	return nil
}

// finish turns r, the reply to p, into a Response, or an error when the
// reply is unusable.
func (c *Client) finish(r *result, p *sdk.ChatCompletionNewParams) (*llm.Response, error) {
	text := r.text.String()
	if text == "" && len(r.calls) == 0 {
		fr := strings.ToLower(r.finishReason)
		if fr == "" {
			fr = "none"
		}
		// The server counted the request's tokens all the same.
		usage := llm.Usage{InputTokens: r.inTokens, OutputTokens: r.outTokens}
		switch {
		case r.refusal != "":
			return nil, &llm.Error{Provider: c.name, Message: "model refused: " + oneLine(r.refusal), Invalid: true, Usage: usage}
		case p.ResponseFormat.OfJSONSchema != nil:
			return nil, &llm.Error{Provider: c.name, Message: "empty reply to a structured request: finish reason " + fr, Invalid: true, Usage: usage}
		}
	}
	model := r.model
	if model == "" {
		model = string(p.Model)
	}
	for i, tc := range r.calls {
		if tc.ID == "" || tc.Name == "" {
			return nil, &llm.Error{Provider: c.name, Message: fmt.Sprintf("tool call %d has no ID or name", i), Invalid: true,
				Usage: llm.Usage{InputTokens: r.inTokens, OutputTokens: r.outTokens}}
		}
	}
	return &llm.Response{
		Text:         text,
		ToolCalls:    r.calls,
		Provider:     c.name,
		Model:        model,
		FinishReason: strings.ToLower(r.finishReason),
		Usage: llm.Usage{
			LLMCalls:     1,
			InputTokens:  r.inTokens,
			OutputTokens: r.outTokens,
		},
	}, nil
}
