// Package inspect builds the steps view of a run from its journal: one item
// per step, in the order the steps started, with what each step's LLM calls
// were sent and answered, what they cost and how long they took. The CLI
// (madspark inspect, runs show --steps), the REST API (GET
// /api/runs/{id}/steps) and the web UI's timeline all show this one view.
package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// View is the steps view of a run.
type View struct {
	RunID    string             `json:"run_id"`
	Pipeline string             `json:"pipeline"`
	Status   madspark.RunStatus `json:"status"`
	// CreatedAt is when the run was created; the timeline starts there.
	CreatedAt time.Time `json:"created_at"`
	// Steps are the run's journaled steps in the order they started; a
	// step appears once it has finished, or once it has sent a second
	// request (status "running"). Empty, not nil, for none.
	Steps []Step `json:"steps"`
	// Usage sums the steps' usage: every request sent to a provider, once.
	Usage llm.Usage `json:"usage"`
}

// Step is one step of a run and its LLM calls. Its top-level fields sum up
// the calls; Prompt and Response are those of its last call, the one whose
// reply the step kept (after any re-asks).
type Step struct {
	Key string `json:"key"`
	// Agent and Model name the agents and models the step's calls used,
	// comma-separated when there were several; empty for a step that
	// called no model (such as a web search).
	Agent    string              `json:"agent"`
	Model    string              `json:"model"`
	Provider string              `json:"provider"`
	Status   madspark.StepStatus `json:"status"`
	Error    string              `json:"error,omitempty"`
	// Attempts is the number of times the step's most-tried request was
	// sent: 1, plus the re-asks of a reply that failed validation, plus
	// the retries after transient errors. 0 for a step that called no
	// model.
	Attempts int `json:"attempts"`
	// Cached reports that the response cache answered every call of the
	// step (and that it made at least one).
	Cached       bool `json:"cached"`
	LLMCalls     int  `json:"llm_calls"`
	CachedCalls  int  `json:"cached_calls"`
	InputTokens  int  `json:"input_tokens"`
	OutputTokens int  `json:"output_tokens"`
	// CostUSD is the price of the tokens; null when a model has no known
	// price (Priced false).
	CostUSD *float64 `json:"cost_usd" jsonschema:"nullable"`
	Priced  bool     `json:"priced"`
	// LatencyMS is how long the step took, in milliseconds.
	LatencyMS int64 `json:"latency_ms"`
	// Repairs are the fixes made to the step's replies; empty, not nil,
	// for none.
	Repairs    []Repair  `json:"repairs"`
	Prompt     []Message `json:"prompt"`
	Response   string    `json:"response"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Calls are the step's LLM calls in the order they started; empty,
	// not nil, for none.
	Calls []Call `json:"calls"`
}

// Repair is a fix made to a reply so that it could be used: which agent's
// reply, under which rule, and what was done.
type Repair struct {
	Agent string `json:"agent"`
	Rule  string `json:"rule"`
	// Path is where in the reply's value, as a JSON pointer; empty for
	// the whole reply.
	Path   string `json:"path,omitempty"`
	Action string `json:"action"`
}

// Message is one message of a prompt: role "system", "user" or
// "assistant".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the tools an assistant message called; ToolCallID
	// the call whose result a tool message carries.
	ToolCalls  []llm.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// Call is one LLM request of a step: one request sent to a provider (a
// request retried after a transient error is one Call per attempt, the
// failed ones with their error), a reply from the response cache, or a
// request that failed before it was sent.
type Call struct {
	Agent    string `json:"agent"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Attempt is 1 for a first request, 2 and more for a re-ask that
	// sent a bad reply back to be fixed.
	Attempt int `json:"attempt"`
	// Retries counts the sends of this request before this one that
	// failed with a transient error: 0 for its first send.
	Retries int `json:"retries"`
	// Sent reports that the request reached the provider: it was paid
	// for, and LLMCalls counts it.
	Sent         bool `json:"sent"`
	Cached       bool `json:"cached"`
	InputTokens  int  `json:"input_tokens"`
	OutputTokens int  `json:"output_tokens"`
	// CostUSD is the price of the tokens; null when the model has no
	// known price (Priced false).
	CostUSD     *float64 `json:"cost_usd" jsonschema:"nullable"`
	Priced      bool     `json:"priced"`
	LatencyMS   int64    `json:"latency_ms"`
	Temperature float64  `json:"temperature"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	// ReasoningEffort and Verbosity are the request's, when it set them.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	Verbosity       string `json:"verbosity,omitempty"`
	FinishReason    string `json:"finish_reason,omitempty"`
	Error           string `json:"error,omitempty"`
	// Prompt is what the agent asked, the system prompt first.
	Prompt []Message `json:"prompt"`
	// Messages are the messages exactly as the provider sent them, the
	// system prompt first (with what the provider added to it, such as
	// a schema's description); empty for a request that was not sent.
	Messages []Message `json:"messages"`
	// ResponseFormat is the structured-output setting sent with the
	// messages (OpenAI's response_format), if any.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Tools are the functions the request offered the model, and
	// ToolChoice whether it might call them.
	Tools      []llm.Tool      `json:"tools,omitempty"`
	ToolChoice *llm.ToolChoice `json:"tool_choice,omitempty"`
	// Response is the raw reply text; ToolCalls the tools it called.
	Response  string         `json:"response"`
	ToolCalls []llm.ToolCall `json:"tool_calls,omitempty"`
	StartedAt time.Time      `json:"started_at"`
}

// Load reads run id and its journal from s and builds its view. An unknown
// run gives an error wrapping madspark.ErrNotFound.
func Load(ctx context.Context, s madspark.RunStore, id string) (*View, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	steps, err := s.Steps(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	return Build(run, steps), nil
}

// Build returns the view of run and its journaled steps.
func Build(run *madspark.Run, steps []*madspark.Step) *View {
	v := &View{RunID: run.ID, Pipeline: run.Pipeline, Status: run.Status, CreatedAt: run.CreatedAt, Steps: make([]Step, 0, len(steps))}
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b *madspark.Step) int { return a.StartedAt.Compare(b.StartedAt) })
	for _, s := range sorted {
		v.Steps = append(v.Steps, buildStep(s))
		v.Usage.Add(s.Usage)
	}
	return v
}

// Step returns the step with the given key, or nil.
func (v *View) Step(key string) *Step {
	for i := range v.Steps {
		if v.Steps[i].Key == key {
			return &v.Steps[i]
		}
	}
	return nil
}

func buildStep(s *madspark.Step) Step {
	st := Step{
		Key: s.Key, Status: s.Status, Error: s.Error,
		LLMCalls: s.Usage.LLMCalls, CachedCalls: s.Usage.CachedCalls,
		InputTokens: s.Usage.InputTokens, OutputTokens: s.Usage.OutputTokens,
		CostUSD: cost(s.Usage), Priced: s.Usage.Priced(),
		LatencyMS: s.FinishedAt.Sub(s.StartedAt).Milliseconds(),
		Repairs:   repairsOf(s),
		Prompt:    []Message{},
		StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
		Calls: make([]Call, 0, len(s.Calls)),
	}
	if st.LatencyMS < 0 || s.FinishedAt.IsZero() {
		st.LatencyMS = 0
	}
	var agents, models, providers []string
	st.Cached = len(s.Calls) > 0
	for _, c := range s.Calls {
		call := buildCall(c)
		st.Calls = append(st.Calls, call)
		st.Attempts = max(st.Attempts, c.Attempt+c.Retries)
		st.Cached = st.Cached && c.Cached
		agents = appendNew(agents, c.Agent)
		models = appendNew(models, c.Model)
		providers = appendNew(providers, c.Provider)
	}
	st.Agent, st.Model, st.Provider = strings.Join(agents, ","), strings.Join(models, ","), strings.Join(providers, ",")
	if n := len(st.Calls); n > 0 {
		st.Prompt, st.Response = st.Calls[n-1].Prompt, st.Calls[n-1].Response
	}
	return st
}

// repairsOf returns the repairs recorded with step s; empty, not nil, for
// none.
func repairsOf(s *madspark.Step) []Repair {
	out := make([]Repair, 0, len(s.Repairs))
	for _, r := range s.Repairs {
		out = append(out, Repair{Agent: r.Agent, Rule: r.Rule, Path: r.Path, Action: r.Action})
	}
	return out
}

// cost is u's cost, or nil when it is not known.
func cost(u llm.Usage) *float64 {
	if !u.Priced() {
		return nil
	}
	c := u.CostUSD
	return &c
}

func buildCall(c madspark.Call) Call {
	prompt := make([]Message, 0, len(c.Messages)+1)
	if c.System != "" {
		prompt = append(prompt, Message{Role: string(llm.RoleSystem), Content: c.System})
	}
	prompt = appendMessages(prompt, c.Messages)
	// A call was sent when it counts as an LLM call; one journaled
	// before attempts were, when it was not cached and did not fail.
	sent := c.Sent != nil || (!c.Cached && (c.Usage.LLMCalls > 0 || c.Error == ""))
	messages := []Message{}
	switch {
	case c.Sent != nil:
		messages = appendMessages(messages, c.Sent)
	case sent:
		// The provider sent the agent's prompt as it is.
		messages = prompt
	}
	return Call{
		Agent: c.Agent, Provider: c.Provider, Model: c.Model, Attempt: c.Attempt, Retries: c.Retries, Sent: sent, Cached: c.Cached,
		InputTokens: c.Usage.InputTokens, OutputTokens: c.Usage.OutputTokens, CostUSD: cost(c.Usage), Priced: c.Usage.Priced(),
		LatencyMS: c.Latency.Milliseconds(), Temperature: c.Temperature, MaxTokens: c.MaxTokens,
		ReasoningEffort: c.ReasoningEffort, Verbosity: c.Verbosity,
		FinishReason: c.FinishReason, Error: c.Error, Prompt: prompt, Messages: messages, ResponseFormat: c.ResponseFormat,
		Tools: c.Tools, ToolChoice: c.ToolChoice, Response: c.Response, ToolCalls: c.ToolCalls, StartedAt: c.StartedAt,
	}
}

func appendMessages(out []Message, msgs []llm.Message) []Message {
	for _, m := range msgs {
		out = append(out, Message{Role: string(m.Role), Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
	}
	return out
}

func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
