package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/structured"
)

// Checker is implemented by a Model that has checks of its own to make
// before a request is admitted, such as compiling the schema of a JSON
// answer: an error it returns is answered as Complete's would be (a 400
// when marked with InvalidRequest), before the request takes a place in
// the provider's queue. Complete is called afterwards with the same
// Prompt.
type Checker interface {
	Check(ctx context.Context, p Prompt) error
}

// prepare checks what a request asks of m that costs work before any model
// call, before the request is admitted (so a client cannot hold a place
// in the provider's queue with it): the size of its prompt
// (Config.MaxPromptBytes), the schema of its JSON answer
// (structured.CheckSchema: bounded, every reference inside it, stopped
// when the client leaves), then m's own checks (Checker).
func (s *Server) prepare(r *http.Request, m Model, p Prompt) error {
	ctx := r.Context()
	if err := checkPromptSize(p, s.cfg.MaxPromptBytes, promptParam(r)); err != nil {
		return err
	}
	if f := p.Format; f != nil && len(f.Schema) > 0 {
		if err := structured.CheckSchema(ctx, f.Schema); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return badRequest(f.param, "%s: %v", f.param, err)
		}
	}
	if c, ok := m.(Checker); ok {
		if err := c.Check(ctx, p); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Bytes is the size of p's text: its instructions, every message with
// its tool calls' arguments, and the tools offered.
func (p Prompt) Bytes() int {
	n := len(p.System)
	for _, m := range p.Messages {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range p.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// promptParam names the field of r that holds its prompt.
func promptParam(r *http.Request) string {
	if strings.HasSuffix(r.URL.Path, "/responses") {
		return "input"
	}
	return "messages"
}

// checkPromptSize refuses a prompt whose text (instructions and every
// message) is more than limit bytes (0: input.DefaultMaxPromptBytes), with
// a 400 that OpenAI clients know as a prompt too long for the model
// (context_length_exceeded).
func checkPromptSize(p Prompt, limit int, param string) error {
	err := input.CheckPrompt(p.Bytes(), limit)
	if pe, ok := errors.AsType[*input.PromptError](err); ok {
		return &requestError{status: http.StatusBadRequest, code: "context_length_exceeded", param: param, msg: pe.Error()}
	}
	return err
}
