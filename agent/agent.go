// Package agent turns a prompt template and a typed input into a call to a
// language model: one LLM role, as the seeds describe them.
//
// A prompt file defines two templates, "system" and "user", rendered from
// the agent's input with missing keys as errors; FromText builds the same
// from the two texts, as package prompt loads them. An agent answers in
// plain text (Agent.Text, or Agent.CheckedText with a rule the reply must
// meet) or as a validated Go value (JSON).
package agent

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"text/template"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// Agent is one LLM role. It is safe for concurrent use.
type Agent struct {
	name   string
	prompt *template.Template
}

// Funcs are available in every prompt template: dec (n-1), join (strings
// joined by a separator).
var funcs = template.FuncMap{
	"dec":  func(n int) int { return n - 1 },
	"join": strings.Join,
}

// New parses the prompt file in fsys for the agent called name, such as
// "spark.evaluate".
func New(fsys fs.FS, name, file string) (*Agent, error) {
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").ParseFS(fsys, file)
	if err != nil {
		return nil, fmt.Errorf("prompt %s: %w", file, err)
	}
	for _, section := range []string{"system", "user"} {
		if t.Lookup(section) == nil {
			return nil, fmt.Errorf("prompt %s: no %q template", file, section)
		}
	}
	return &Agent{name: name, prompt: t}, nil
}

// FromText builds the agent called name from the text of its "system" and
// "user" templates.
func FromText(name, system, user string) (*Agent, error) {
	t := template.New(name).Funcs(funcs).Option("missingkey=error")
	for _, part := range []struct{ section, text string }{{"system", system}, {"user", user}} {
		if _, err := t.New(part.section).Parse(part.text); err != nil {
			return nil, fmt.Errorf("%s: %s prompt: %w", name, part.section, err)
		}
	}
	return &Agent{name: name, prompt: t}, nil
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.name }

// Options tune one call.
type Options struct {
	Temperature float64
	// Model overrides the provider's default model when not empty.
	Model string
	// Timeout bounds the call when positive.
	Timeout time.Duration
	// MaxTokens caps the reply when positive.
	MaxTokens int
}

// Request renders the prompt from input into a request.
func (a *Agent) Request(input any, o Options) (llm.Request, error) {
	var sys, user strings.Builder
	if err := a.prompt.ExecuteTemplate(&sys, "system", input); err != nil {
		return llm.Request{}, fmt.Errorf("%s: prompt: %w", a.name, err)
	}
	if err := a.prompt.ExecuteTemplate(&user, "user", input); err != nil {
		return llm.Request{}, fmt.Errorf("%s: prompt: %w", a.name, err)
	}
	return llm.Request{
		Agent:       a.name,
		Model:       o.Model,
		System:      strings.TrimSpace(sys.String()),
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: strings.TrimSpace(user.String())}},
		Temperature: o.Temperature,
		MaxTokens:   o.MaxTokens,
		Timeout:     o.Timeout,
		Input:       input,
	}, nil
}

// Text asks for a plain-text reply. An empty reply is an error.
func (a *Agent) Text(ctx context.Context, c llm.Client, input any, o Options) (string, error) {
	req, err := a.Request(input, o)
	if err != nil {
		return "", err
	}
	resp, err := c.Generate(ctx, &req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a.name, err)
	}
	text := strings.TrimSpace(resp.Text)
	if text == "" {
		return "", fmt.Errorf("%s: empty reply", a.name)
	}
	return text, nil
}

// CheckedText asks for a plain-text reply and reads it with check, which
// reports problems to p and may repair the text through its pointer (see
// structured.Text): an empty reply, or one with a hard problem, is sent back
// once; soft problems are repaired and recorded. A second unusable reply is
// a *structured.ReplyError naming the agent and keeping the reply.
func (a *Agent) CheckedText(ctx context.Context, c llm.Client, input any, o Options, check func(text *string, p *structured.Problems)) (string, error) {
	req, err := a.Request(input, o)
	if err != nil {
		return "", err
	}
	text, _, err := structured.Text(ctx, c, req, check)
	return text, err
}

// JSON asks agent a for a reply of spec's type; see structured.Spec.Generate.
func JSON[W any](ctx context.Context, c llm.Client, a *Agent, spec *structured.Spec[W], input any, o Options, check func(*W, *structured.Problems)) (W, error) {
	req, err := a.Request(input, o)
	if err != nil {
		var zero W
		return zero, err
	}
	out, _, err := spec.Generate(ctx, c, req, check)
	return out, err
}
