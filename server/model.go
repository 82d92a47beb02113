// Package server is madspark's HTTP API. It serves every pipeline that is
// registered as a Model through an OpenAI-compatible chat completions
// endpoint, so any OpenAI client can talk to madspark.
package server

import (
	"context"

	"github.com/madspark/madspark/llm"
)

// Prompt is a chat as a client sent it, decoded and validated.
type Prompt struct {
	// Messages is the conversation; the system prompt, if any, is in System.
	Messages []llm.Message
	System   string
	// Temperature is nil when the client did not set one.
	Temperature *float64
	// MaxTokens is 0 when the client did not set one.
	MaxTokens int
}

// Query returns the content of the last user message: what a pipeline
// answers.
func (p Prompt) Query() string {
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == llm.RoleUser {
			return p.Messages[i].Content
		}
	}
	return ""
}

// Completion is a model's answer.
type Completion struct {
	Text string
	// FinishReason is "stop" or "length".
	FinishReason string
	Usage        llm.Usage
	// RunID names the run that produced the answer, when one was recorded.
	RunID string
}

// Model is a pipeline exposed as a model, such as "madspark-debate".
type Model interface {
	// ID is the model name clients ask for.
	ID() string
	// Complete answers p. When onDelta is not nil the answer is streamed:
	// onDelta receives the text as it is produced, in order, from one
	// goroutine, and the Completion still carries the whole text. Complete
	// must stop promptly when ctx is done (the client went away).
	Complete(ctx context.Context, p Prompt, onDelta func(string)) (*Completion, error)
}

// InvalidRequest marks err, returned by Model.Complete, as the client's
// fault: it is reported as a 400 invalid_request_error.
func InvalidRequest(err error) error {
	return &requestError{status: 400, msg: err.Error()}
}
