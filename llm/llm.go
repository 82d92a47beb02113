// Package llm defines the one contract every language-model provider and every
// cross-cutting decorator (retry, circuit breaker, cache, meter, timeout)
// implements: a Client turns a Request into a Response.
//
// The package has no dependencies outside the standard library. Pipelines and
// agents only ever see a Client; which provider, cache or store is behind it is
// decided once, at start-up.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Role is the author of a Message.
type Role string

// The roles a conversation message can have.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of a conversation. The system prompt is not a Message;
// it is Request.System.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the tools an assistant message called, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call whose result a RoleTool message carries.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Equal reports whether m and o are the same turn.
func (m Message) Equal(o Message) bool {
	return m.Role == o.Role && m.Content == o.Content && m.ToolCallID == o.ToolCallID && slices.Equal(m.ToolCalls, o.ToolCalls)
}

// Schema asks the provider for structured output: a JSON value that conforms
// to the JSON Schema in JSON. Providers send it in their native form
// (OpenAI response_format json_schema, Gemini response schema, Anthropic tool
// input schema).
type Schema struct {
	// Name identifies the schema to the provider; letters, digits, _ and -.
	Name string
	// JSON is the JSON Schema document, self-contained (no external $ref).
	JSON []byte
	// Hint is a compact description of the expected JSON, for providers
	// that do not enforce the schema (servers without constrained
	// decoding): they put it in the prompt instead.
	Hint string
	// Strict asks a provider that can hold the reply to the schema exactly
	// (OpenAI's strict structured outputs) to do so; the schema must then
	// be in the subset such providers accept.
	Strict bool
}

// Request is one call to a language model.
type Request struct {
	// Agent names the logical agent making the call, such as
	// "spark.evaluate". It appears in logs, errors and usage records and lets
	// the mock provider choose a responder. It is never sent to a provider.
	Agent string
	// Provider names the provider that should answer, when a run uses more
	// than one (see provider.Router); empty means the default provider.
	Provider string
	// Model overrides the provider's default model when not empty.
	Model string
	// System is the system instruction.
	System string
	// Messages is the conversation, oldest first; the last one is normally
	// from the user.
	Messages []Message
	// History counts the leading Messages that are an earlier
	// conversation the request passes on (a chat's turns, its tool calls
	// and results) rather than the request's own prompt and re-asks. They
	// are sent like the others; a journal numbers re-asks from the
	// assistant messages after them that call no tools.
	History int
	// Temperature is the sampling temperature.
	Temperature float64
	// MaxTokens caps the reply length; 0 means the provider's default.
	MaxTokens int
	// TopP, when not nil, is the nucleus sampling probability mass.
	TopP *float64
	// Stop are sequences that end the reply where the model writes them;
	// they are not part of it.
	Stop []string
	// Seed, when not nil, asks for the same reply to the same request, as
	// far as the provider can tell.
	Seed *int64
	// Schema, when not nil, asks for a JSON reply conforming to it.
	Schema *Schema
	// Tools are the functions the model may call (see Tool); the reply's
	// ToolCalls are its calls. ToolChoice, when not nil, says whether it
	// may, must or must not; nil leaves it to the provider (auto, when
	// there are tools). ParallelToolCalls, when not nil, allows or
	// forbids more than one call in a reply. A provider that cannot send
	// them as asked fails with an *Error whose Param names the field
	// ("tools", "parallel_tool_calls").
	Tools             []Tool
	ToolChoice        *ToolChoice
	ParallelToolCalls *bool
	// OnDelta, when not nil, asks the provider to stream: it is called with
	// each chunk of text as it arrives, in order, from one goroutine. The
	// Response still carries the whole text.
	OnDelta func(delta string)
	// Timeout bounds this call when positive (see middleware.Timeout).
	Timeout time.Duration
	// Deferred asks a response cache to keep the reply only once the
	// caller calls Response.Accept, after it has decoded and validated it,
	// so that a reply that proved unusable is never replayed.
	Deferred bool
	// Input is the agent's typed input that the prompt was rendered from.
	// Providers ignore it; the mock provider uses it to give answers that
	// fit the request. It is never sent over the network.
	Input any
}

// Prompt returns the text of the last message, or "" when there is none.
func (r *Request) Prompt() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// Response is a model's reply to a Request.
type Response struct {
	// Text is the whole reply; for structured requests, the JSON text.
	Text string
	// ToolCalls are the tools the model called, in order (FinishReason
	// FinishToolCalls); Text may be empty then.
	ToolCalls []ToolCall
	// Provider and Model name what actually answered.
	Provider string
	Model    string
	// FinishReason is the provider's reason for stopping ("stop",
	// "length", ...), normalised to lower case.
	FinishReason string
	// Cached reports that the reply came from the response cache and no
	// model was called.
	Cached bool
	// Usage is what this one call cost.
	Usage Usage
	// OnAccept, set by a response cache for a Deferred request, stores the
	// reply; call it through Accept.
	OnAccept func()
}

// Accept tells the response cache, if any, that the reply of a Deferred
// request was usable and may be kept.
func (r *Response) Accept() {
	if r != nil && r.OnAccept != nil {
		r.OnAccept()
	}
}

// Truncated reports whether the reply was cut off at the token limit:
// finish reason "length" (OpenAI-compatible) or "max_tokens" (Gemini,
// Anthropic).
func (r *Response) Truncated() bool {
	return r.FinishReason == "length" || r.FinishReason == "max_tokens"
}

// Usage counts calls, tokens and money. It is additive: the usage of a step or
// a run is the sum of the usage of its calls.
type Usage struct {
	// LLMCalls counts calls that reached a model.
	LLMCalls int `json:"llm_calls"`
	// CachedCalls counts calls answered by the response cache.
	CachedCalls int `json:"cached_calls"`
	// InputTokens and OutputTokens are as the provider reported them.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CostUSD is estimated from the price table; 0 for local and mock
	// models. It is unknown, and null in JSON, when UnpricedCalls is not
	// zero.
	CostUSD float64 `json:"cost_usd" jsonschema:"nullable"`
	// UnpricedCalls counts the calls to a model that has no known price,
	// served by a server that is not local: what they cost is unknown, so
	// the total is too (see Priced).
	UnpricedCalls int `json:"unpriced_calls,omitempty"`
	// CachedInputTokens and CachedOutputTokens are the tokens that the
	// replies the cache answered with took when they were made: the real
	// size of the work, not paid again.
	CachedInputTokens  int `json:"cached_input_tokens,omitempty"`
	CachedOutputTokens int `json:"cached_output_tokens,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.LLMCalls += o.LLMCalls
	u.CachedCalls += o.CachedCalls
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CostUSD += o.CostUSD
	u.CachedInputTokens += o.CachedInputTokens
	u.CachedOutputTokens += o.CachedOutputTokens
	u.UnpricedCalls += o.UnpricedCalls
}

// Priced reports whether CostUSD is the whole cost: no call was to a model
// without a known price.
func (u Usage) Priced() bool { return u.UnpricedCalls == 0 }

// Cost is CostUSD for people: "$0.0123", or "unpriced" when it is not
// known (see Priced).
func (u Usage) Cost() string {
	if !u.Priced() {
		return "unpriced"
	}
	return fmt.Sprintf("$%.4f", u.CostUSD)
}

// usageFields is Usage without its methods, for its JSON encoding.
type usageFields Usage

// MarshalJSON encodes u with "priced" (Priced) beside its fields, and
// cost_usd null when it is not known.
func (u Usage) MarshalJSON() ([]byte, error) {
	out := struct {
		usageFields
		CostUSD *float64 `json:"cost_usd"`
		Priced  bool     `json:"priced"`
	}{usageFields: usageFields(u), Priced: u.Priced()}
	if out.Priced {
		out.CostUSD = &u.CostUSD
	}
	return json.Marshal(out)
}

// MarshalUsageWith encodes u as MarshalJSON does, with the fields of extra
// (a struct) added to its object: the encoding of a type that embeds Usage
// beside fields of its own, since Usage's MarshalJSON would otherwise
// encode it alone.
func MarshalUsageWith(u Usage, extra any) ([]byte, error) {
	b, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	e, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	if len(e) <= 2 { // {}
		return b, nil
	}
	return append(append(b[:len(b)-1], ','), e[1:]...), nil
}

// UnmarshalUsageWith decodes what MarshalUsageWith encodes into u and
// extra (a pointer to a struct).
func UnmarshalUsageWith(b []byte, u *Usage, extra any) error {
	if err := json.Unmarshal(b, extra); err != nil {
		return err
	}
	return json.Unmarshal(b, u)
}

// UnmarshalJSON decodes what MarshalJSON encodes; a null cost_usd is 0.
func (u *Usage) UnmarshalJSON(b []byte) error {
	var in struct {
		usageFields
		CostUSD *float64 `json:"cost_usd"`
		Priced  *bool    `json:"priced"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*u = Usage(in.usageFields)
	if in.CostUSD != nil {
		u.CostUSD = *in.CostUSD
	}
	return nil
}

// String summarises u on one line: "6 LLM calls, 0 cached; 1200 input +
// 800 output tokens; $0.0000" ("unpriced" in place of the cost when it is
// not known).
func (u Usage) String() string {
	calls := "LLM calls"
	if u.LLMCalls == 1 {
		calls = "LLM call"
	}
	return fmt.Sprintf("%d %s, %d cached; %d input + %d output tokens; %s",
		u.LLMCalls, calls, u.CachedCalls, u.InputTokens, u.OutputTokens, u.Cost())
}

// Client is a language model, or a decorator around one.
//
// Generate must not modify *req; a decorator that needs a different request
// makes a copy. It returns a non-nil Response exactly when err is nil.
type Client interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// ClientFunc adapts a function to the Client interface.
type ClientFunc func(ctx context.Context, req *Request) (*Response, error)

// Generate calls f(ctx, req).
func (f ClientFunc) Generate(ctx context.Context, req *Request) (*Response, error) {
	return f(ctx, req)
}

// Middleware decorates a Client.
type Middleware func(Client) Client

// Chain wraps c in mws so that mws[0] is the outermost decorator: a call goes
// through mws[0], then mws[1], ..., then c.
func Chain(c Client, mws ...Middleware) Client {
	for i := len(mws) - 1; i >= 0; i-- {
		c = mws[i](c)
	}
	return c
}
