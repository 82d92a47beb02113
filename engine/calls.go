package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// callLog keeps the calls of one step as its client makes them.
type callLog struct {
	mu   sync.Mutex
	step *madspark.Step
}

// generate sends req through the engine's client for step key of r, records
// the call in the step (prompt, raw reply, usage, latency, retries), adds
// its usage to the step and the run, and traces it as a span under ctx.
func (r *Run) generate(ctx context.Context, rec *callLog, key string, req *llm.Request) (*llm.Response, error) {
	call := madspark.Call{
		Agent:       req.Agent,
		Provider:    req.Provider,
		Model:       req.Model,
		System:      req.System,
		Messages:    slices.Clone(req.Messages),
		Temperature: req.Temperature,
		MaxTokens:   req.MaxTokens,
		Attempt:     attemptOf(req),
		StartedAt:   r.e.now(),
	}
	rec.mu.Lock()
	i := len(rec.step.Calls)
	rec.step.Calls = append(rec.step.Calls, call)
	rec.mu.Unlock()

	ctx, span := r.e.startCall(ctx, r, key, req, call.Attempt)
	retries := 0
	ctx = middleware.WithRetryObserver(ctx, func(attempt int, delay time.Duration, err error) {
		retries++
		span.AddEvent("retry", trace.WithAttributes(retryAttrs(attempt, delay, err)...))
	})
	start := time.Now()
	resp, err := r.e.Client.Generate(ctx, req)
	latency := time.Since(start)
	r.e.endCall(span, resp, err, retries)

	rec.mu.Lock()
	c := &rec.step.Calls[i]
	c.Latency, c.Retries = latency, retries
	if err != nil {
		c.Error = err.Error()
	} else {
		c.Response, c.FinishReason, c.Cached, c.Usage = resp.Text, resp.FinishReason, resp.Cached, resp.Usage
		if resp.Provider != "" {
			c.Provider = resp.Provider
		}
		if resp.Model != "" {
			c.Model = resp.Model
		}
		rec.step.Usage.Add(resp.Usage)
	}
	rec.mu.Unlock()
	if err == nil {
		r.mu.Lock()
		r.rec.Usage.Add(resp.Usage)
		r.mu.Unlock()
	}
	return resp, err
}

// attemptOf numbers req within its conversation: a request that sends
// earlier replies back (to have them fixed) is attempt 1 + the number of
// replies it carries.
func attemptOf(req *llm.Request) int {
	n := 1
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}
