package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// callLog keeps the calls of one step as its client makes them.
type callLog struct {
	mu   sync.Mutex
	step *madspark.Step
	// unsaved reports calls not journaled yet.
	unsaved bool
	// agent is the step's span, named after the first agent that calls
	// a model in it (calls it does not own leave it as it is: ownerKey).
	agent *agentSpan
}

// ownerKey marks a context whose calls a step records as their owner: the
// step that made the call traces it. A step of another run that the call
// passes through (an eval's step running a pipeline run with the step's
// client) records it in its journal too, but traces nothing.
type ownerKey struct{}

// generate sends req through the engine's client for step key of r. Every
// request the provider is sent for it (an attempt: each retry is one) is
// recorded in the step as a madspark.Call with what was sent, the raw
// reply or the error, its usage and latency, added to the step's and the
// run's usage, and traced as a chat span under the step's; a reply from the
// response cache is one Call at no cost, an event of the step's span; a
// failure before anything was sent is one Call with its error.
func (r *Run) generate(ctx context.Context, rec *callLog, key string, req *llm.Request) (*llm.Response, error) {
	base := madspark.Call{
		Agent:       req.Agent,
		Provider:    req.Provider,
		Model:       req.Model,
		System:      req.System,
		Messages:    slices.Clone(req.Messages),
		Temperature: req.Temperature,
		MaxTokens:   req.MaxTokens,
		Tools:       req.Tools,
		ToolChoice:  req.ToolChoice,
		Attempt:     attemptOf(req),
	}
	base.ReasoningEffort, base.Verbosity = req.ReasoningEffort, req.Verbosity
	owner := ctx.Value(ownerKey{}) == nil
	o := &attempts{r: r, rec: rec, key: key, req: req, base: base, spanCtx: ctx}
	var retried *retries
	if owner {
		o.span = rec.agent.named(r, req)
		ctx = context.WithValue(ctx, ownerKey{}, true)
		// Each retry of the call is a retry event of the run, as it
		// happens.
		retried = r.retriesOf(key, req)
		ctx = llm.WithRetryObserver(ctx, retried.retry)
	}
	ctx = llm.WithAttemptObserver(ctx, o)
	start := r.e.now()
	mono := time.Now()
	resp, err := r.e.Client.Generate(ctx, req)
	latency := time.Since(mono)
	if retried != nil {
		retried.end(err)
	}

	switch {
	case err == nil && resp.Cached:
		c := base
		c.Cached, c.Response, c.FinishReason, c.ToolCalls, c.Usage = true, resp.Text, resp.FinishReason, resp.ToolCalls, resp.Usage
		c.Provider, c.Model = or(resp.Provider, c.Provider), or(resp.Model, c.Model)
		c.StartedAt, c.Latency = start, latency
		r.add(rec, c)
		if o.span != nil {
			o.span.cacheHit(req, resp)
		}
	case err != nil && o.sent() == 0:
		c := base
		c.Error, c.StartedAt, c.Latency = err.Error(), start, latency
		r.add(rec, c)
	case err == nil && o.sent() == 0:
		// A client without middleware.Meter at its bottom: the reply is
		// the one attempt, its messages the request's.
		o.Attempted(ctx, &llm.Attempt{Agent: req.Agent, Provider: resp.Provider, Model: resp.Model, RequestModel: req.Model,
			Wire: llm.WireOf(req), Response: resp, Usage: resp.Usage, Start: start, Duration: latency})
	}
	return resp, err
}

// add records c in the step of rec, and its usage in the step and the run.
func (r *Run) add(rec *callLog, c madspark.Call) {
	rec.mu.Lock()
	rec.step.Calls = append(rec.step.Calls, c)
	rec.step.Usage.Add(c.Usage)
	rec.unsaved = true
	rec.mu.Unlock()
	r.mu.Lock()
	r.rec.Usage.Add(c.Usage)
	r.mu.Unlock()
}

// persist journals the step of rec as it stands, unfinished, if it has
// calls not journaled yet: before a step sends another request, the
// requests it sent already are kept, whatever happens to its process.
func (r *Run) persist(ctx context.Context, rec *callLog) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.unsaved || rec.step.Status != "" {
		return
	}
	s := *rec.step
	s.Status, s.FinishedAt = madspark.StepRunning, time.Time{}
	s.Calls = slices.Clone(s.Calls)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.e.Store.SaveStep(sctx, &s); err != nil {
		r.e.logger().Warn("could not journal the calls of an unfinished step", "run", r.rec.ID, "step", s.Key, "err", err)
		return
	}
	rec.unsaved = false
}

// attempts observes the requests sent for one call of a step (see
// llm.WithAttemptObserver).
type attempts struct {
	r       *Run
	rec     *callLog
	key     string
	req     *llm.Request
	base    madspark.Call
	spanCtx context.Context
	// span is the step's span when this step owns the call.
	span *agentSpan

	mu sync.Mutex
	n  int
}

func (o *attempts) sent() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// Sending journals the step's calls so far before another request goes
// out.
func (o *attempts) Sending(ctx context.Context) { o.r.persist(ctx, o.rec) }

// Attempted records a.
func (o *attempts) Attempted(_ context.Context, a *llm.Attempt) {
	o.mu.Lock()
	retries := o.n
	o.n++
	o.mu.Unlock()
	c := o.base
	c.Provider, c.Model = or(a.Provider, c.Provider), or(a.Model, c.Model)
	if !slices.EqualFunc(a.Wire.Messages, llm.WireOf(o.req).Messages, llm.Message.Equal) {
		// Kept only when the provider changed the prompt: else it is the
		// agent's, and the journal holds it once.
		c.Sent = slices.Clone(a.Wire.Messages)
	}
	c.ResponseFormat = a.Wire.ResponseFormat
	c.Retries, c.Usage = retries, a.Usage
	c.StartedAt, c.Latency = a.Start.UTC(), a.Duration
	if a.Err != nil {
		c.Error = a.Err.Error()
	} else {
		c.Response, c.FinishReason, c.ToolCalls = a.Response.Text, a.Response.FinishReason, a.Response.ToolCalls
	}
	o.r.add(o.rec, c)
	if o.span != nil {
		o.r.e.chatSpan(o.spanCtx, o.r, o.key, o.req, a, c.Attempt, retries)
	}
}

// attemptOf numbers req within its conversation: a request that sends
// earlier replies back (to have them fixed) is attempt 1 + the number of
// replies it carries after the conversation it passes on (req.History),
// the tool calls it passes on after its prompt aside.
func attemptOf(req *llm.Request) int {
	n := 1
	for _, m := range req.Messages[min(req.History, len(req.Messages)):] {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 {
			n++
		}
	}
	return n
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// agentSpan is a step's span, which becomes an invoke_agent span when the
// step's first call is made.
type agentSpan struct {
	span trace.Span

	mu    sync.Mutex
	agent string
}
