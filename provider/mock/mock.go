// Package mock is a deterministic, offline language model. It answers each
// agent through a Responder that the agent's pipeline supplies, so replies are
// schema-valid and fit the request, and it never touches the network.
//
// With WithLatency and WithTokenRate it doubles as the simulated provider that
// benchmarks measure the engine against.
package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/llm"
)

// Name is the provider name the mock reports.
const Name = "mock"

// Model is the model name the mock reports.
const Model = "mock-1"

// Responder answers one agent's request. It returns either a string, which is
// the reply text verbatim, or any other value, which is sent as its JSON
// encoding. It must be deterministic: the same request gives the same reply.
type Responder = func(req *llm.Request) (any, error)

// Client is the mock model. It is safe for concurrent use.
type Client struct {
	responders map[string]Responder
	latency    time.Duration
	rate       float64
}

// Option configures a Client.
type Option func(*Client)

// WithLatency makes every call take at least d, as a network round trip would.
func WithLatency(d time.Duration) Option { return func(c *Client) { c.latency = d } }

// WithTokenRate adds generation time: output tokens ÷ tokensPerSecond.
func WithTokenRate(tokensPerSecond float64) Option {
	return func(c *Client) { c.rate = tokensPerSecond }
}

// New returns a mock answering with responders, keyed by llm.Request.Agent.
func New(responders map[string]Responder, opts ...Option) *Client {
	c := &Client{responders: responders}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Generate answers req with its agent's responder. A request for an agent
// without a responder is answered from its schema (FromSchema) when it asks
// for JSON, and is an error otherwise. A request with tools may get a tool
// call instead (see toolCalls).
func (c *Client) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r, ok := c.responders[req.Agent]
	if !ok && req.Schema != nil && len(req.Schema.JSON) > 0 {
		schema := req.Schema.JSON
		r, ok = func(req *llm.Request) (any, error) { return FromSchema(req.Agent, schema) }, true
	}
	if !ok {
		return nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("no mock responder for agent %q", req.Agent)}
	}
	// The mock "sends" the request as it is.
	llm.SendingWire(ctx, llm.WireOf(req))
	if err := llm.CheckTools(req.Tools, req.ToolChoice); err != nil {
		return nil, &llm.Error{Provider: Name, Message: err.Error(), Param: "tools"}
	}
	var v any = ""
	calls := toolCalls(req)
	if calls == nil {
		var err error
		if v, err = r(req); err != nil {
			return nil, &llm.Error{Provider: Name, Message: req.Agent + ": " + err.Error(), Err: err}
		}
	}
	text, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &llm.Error{Provider: Name, Message: "encode reply: " + err.Error(), Err: err}
		}
		text = string(b)
	}
	in := EstimateTokens(req.System)
	for _, m := range req.Messages {
		in += EstimateTokens(m.Content)
	}
	out := EstimateTokens(text)
	for _, c := range calls {
		out += EstimateTokens(c.Name + c.Arguments)
	}
	finish := "stop"
	if calls != nil {
		finish = llm.FinishToolCalls
	}
	wait := c.latency
	if c.rate > 0 {
		wait += time.Duration(float64(out) / c.rate * float64(time.Second))
	}
	if req.OnDelta == nil {
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	} else {
		// A streamed reply arrives piece by piece over the wait, as a
		// model's tokens do: the last piece when an unstreamed reply
		// would have come whole.
		parts := chunks(text, 64)
		gap := wait / time.Duration(len(parts))
		for _, chunk := range parts {
			if err := sleep(ctx, gap); err != nil {
				return nil, err
			}
			req.OnDelta(chunk)
		}
	}
	return &llm.Response{
		Text:         text,
		ToolCalls:    calls,
		Provider:     Name,
		Model:        Model,
		FinishReason: finish,
		Usage:        llm.Usage{LLMCalls: 1, InputTokens: in, OutputTokens: out},
	}, nil
}

// toolCalls are the mock's calls for req: with tools it may call (its tool
// choice is not "none") and no result of a call since the last user
// message, it calls the tool the choice names, or else the first, with
// arguments made from its parameters' schema (FromSchema); otherwise nil,
// and the request is answered in text.
func toolCalls(req *llm.Request) []llm.ToolCall {
	if len(req.Tools) == 0 || (req.ToolChoice != nil && req.ToolChoice.Mode == llm.ToolNone) {
		return nil
	}
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != llm.RoleUser; i-- {
		if req.Messages[i].Role == llm.RoleTool {
			return nil
		}
	}
	tool := req.Tools[0]
	if c := req.ToolChoice; c != nil && c.Name != "" {
		for _, t := range req.Tools {
			if t.Name == c.Name {
				tool = t
			}
		}
	}
	args := "{}"
	if len(tool.Parameters) > 0 {
		if v, err := FromSchema(tool.Name, tool.Parameters); err == nil {
			if b, err := json.Marshal(v); err == nil {
				args = string(b)
			}
		}
	}
	id := fmt.Sprintf("call_%08x", Hash(req.Agent, req.Prompt(), tool.Name, args))
	return []llm.ToolCall{{ID: id, Name: tool.Name, Arguments: args}}
}

// EstimateTokens approximates a token count as a quarter of the characters,
// the usual rule of thumb for English text.
func EstimateTokens(s string) int {
	n := utf8.RuneCountInString(s)
	return (n + 3) / 4
}

// chunks splits s into pieces of at most n bytes, on rune boundaries.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

// Pick returns one of options, chosen deterministically by key, so that mock
// text varies with the topic but not between runs.
func Pick(key string, salt int, options ...string) string {
	var h uint32 = 2166136261
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	h = (h ^ uint32(salt)) * 16777619
	return options[int(h%uint32(len(options)))]
}

// Hash is a stable 32-bit hash (FNV-1a) of parts, each ended by a zero
// byte, for choosing mock content deterministically from a request.
func Hash(parts ...string) uint32 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

// Short returns s cut to at most n runes at a word boundary, for weaving a
// topic into mock text.
func Short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

// sleep waits for d, or returns ctx's error when it is done first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
