// Package server is madspark's HTTP API. It serves every pipeline that is
// registered as a Model through OpenAI-compatible chat completions and
// Responses endpoints, so any OpenAI client can talk to madspark.
package server

import (
	"context"
	"encoding/json"

	"github.com/madspark/madspark/llm"
)

// Prompt is a chat as a client sent it, decoded and validated.
type Prompt struct {
	// Messages is the conversation: user and assistant messages, an
	// assistant's tool calls and the tool messages that carry their
	// results (each answering a call made before it); the system prompt,
	// if any, is in System.
	Messages []llm.Message
	// System is the client's own instructions: its system and developer
	// messages (Chat Completions) or its instructions (Responses), in
	// order, joined by blank lines.
	System string
	// Temperature is nil when the client did not set one.
	Temperature *float64
	// MaxTokens is 0 when the client did not set one.
	MaxTokens int
	// TopP and Seed are nil, and Stop empty, when the client did not set
	// them.
	TopP *float64
	Stop []string
	Seed *int64
	// Format, when not nil, asks for the answer as a JSON value.
	Format *Format
	// Tools are the functions the model may call: the answer's
	// ToolCalls, which the client runs. ToolChoice, nil when the client
	// did not set it, says whether the model may, must or must not call
	// them; ParallelToolCalls, nil when not set, whether it may call more
	// than one at once.
	Tools             []llm.Tool
	ToolChoice        *llm.ToolChoice
	ParallelToolCalls *bool
	// ReasoningEffort and Verbosity are the client's reasoning_effort
	// (Responses: reasoning.effort) and verbosity (text.verbosity), one of
	// llm.ReasoningEfforts and llm.Verbosities; empty when not set.
	ReasoningEffort string
	Verbosity       string
	// MaxToolCalls, when not nil, bounds the calls of built-in tools (a
	// web search) the answer may make: Responses' max_tool_calls.
	MaxToolCalls *int
	// Tags label the run that answers: "user=…" and
	// "safety_identifier=…" for the client's identifiers of its end user,
	// then "key=value" for each pair of its metadata, by key; nil for
	// none. Each is at most MaxTagLen characters.
	Tags []string
}

// MaxTagLen is the length of a tag of Prompt.Tags at most: room for
// OpenAI's longest metadata pair (a key of 64 characters, a value of 512),
// so that nothing a client may send OpenAI is refused here. A bookmark of
// the run takes only the tags that are bookmark tags (bookmark.MaxTagLen).
const MaxTagLen = 64 + 1 + 512

// Format is a client's request for a JSON answer: response_format in Chat
// Completions, text.format in Responses.
type Format struct {
	// Name is the schema's name; empty for any JSON object (json_object).
	Name string
	// Schema is the JSON Schema the answer must conform to; nil for any
	// JSON object.
	Schema json.RawMessage
	// Strict is the client's strict flag.
	Strict bool
	// param is where the schema is in the request, for its errors.
	param string
}

// Setting is a kind of request field beside the messages that a Model may
// or may not apply; Settings are a set of them.
type Setting uint

// The settings.
const (
	// SettingSystem: system and developer messages, or instructions.
	SettingSystem Setting = 1 << iota
	SettingTemperature
	SettingTopP
	SettingMaxTokens
	SettingStop
	SettingSeed
	// SettingFormat: a JSON answer (json_object or json_schema).
	SettingFormat
	// SettingTools: tools the model may call (not tools with tool_choice
	// "none", which ask for no call).
	SettingTools
	// SettingReasoningEffort and SettingVerbosity: Prompt.ReasoningEffort
	// and Prompt.Verbosity.
	SettingReasoningEffort
	SettingVerbosity
	// SettingMaxToolCalls: a bound on the answer's calls of built-in
	// tools (Prompt.MaxToolCalls).
	SettingMaxToolCalls
	// SettingTags: the client's user, safety_identifier and metadata,
	// which the model records as its run's tags (Prompt.Tags).
	SettingTags
	// SettingTurns: messages after the last user message — the answer's
	// tool calls so far and their results, or an answer begun — which the
	// model must continue from.
	SettingTurns

	// AllSettings are every setting.
	AllSettings = SettingSystem | SettingTemperature | SettingTopP | SettingMaxTokens | SettingStop | SettingSeed | SettingFormat | SettingTools |
		SettingReasoningEffort | SettingVerbosity | SettingMaxToolCalls | SettingTags | SettingTurns
)

// Configurable is implemented by a Model that applies only some settings,
// such as a pipeline of several calls with settings of their own. A request
// that sets one it does not apply is refused with 400 naming the field,
// before Complete is called: no setting is accepted and then ignored. A
// Model that does not implement Configurable applies them all.
type Configurable interface {
	// Settings returns the settings the Model applies.
	Settings() Setting
}

// Query returns the content of the last user message: what a pipeline
// answers.
func (p Prompt) Query() string {
	_, q, _ := p.Split()
	return q
}

// Split returns the conversation around its last user message: the
// messages before it (history), its content (the query) and the messages
// after it (turns: the answer's tool calls so far and their results).
func (p Prompt) Split() (history []llm.Message, query string, turns []llm.Message) {
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == llm.RoleUser {
			return p.Messages[:i], p.Messages[i].Content, p.Messages[i+1:]
		}
	}
	return p.Messages, "", nil
}

// Completion is a model's answer.
type Completion struct {
	Text string
	// Reasoning is the model's account of its work, such as a pipeline's
	// stages one a line, which a stream sends before the answer's text;
	// empty for a model that gives none.
	Reasoning string
	// ToolCalls are the client's tools the answer calls.
	ToolCalls []llm.ToolCall
	// FinishReason is why the model that wrote the answer stopped, as its
	// provider said: "stop", "length" (cut off at the token limit),
	// "tool_calls" or another; empty means "stop", or "tool_calls" when
	// there are ToolCalls.
	FinishReason string
	Usage        llm.Usage
	// RunID names the run that produced the answer, when one was recorded.
	RunID string
}

// Stream receives an answer as a model makes it.
type Stream struct {
	// Text receives the answer's text, in order, from one goroutine.
	Text func(string)
	// Reasoning receives the model's account of its work as it goes (a
	// pipeline's stages), before the answer's text; it may be called from
	// any goroutine, and what comes once the text has begun is not
	// streamed.
	Reasoning func(string)
}

// Model is a pipeline exposed as a model, such as "madspark-debate".
type Model interface {
	// ID is the model name clients ask for.
	ID() string
	// Complete answers p. When s is not nil the answer is streamed: s
	// receives the text and the reasoning as they are produced, and the
	// Completion still carries them whole; the stream starts with the
	// first of them, so an error returned before it is answered with its
	// own HTTP status. Complete must stop promptly when ctx is done (the
	// client went away).
	Complete(ctx context.Context, p Prompt, s *Stream) (*Completion, error)
}
