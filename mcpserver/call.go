package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline"
)

// call returns the handler of pipeline d's tool: the arguments decoded
// and checked as every other path checks parameters (a problem is the
// call's error, before any model is called), then a run recorded like any
// other, made in this request.
func (s *Server) call(d pipeline.Definition) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		params, err := s.cfg.Registry.Decode(d.Name, req.Params.Arguments)
		if pe, ok := errors.AsType[*pipeline.ParamsError](err); ok {
			// The tool names the pipeline; the message is the command
			// line's.
			return errResult(oneLine(strings.TrimPrefix(pe.Error(), pe.Pipeline+" parameters: "))), nil
		}
		if err != nil {
			return errResult(oneLine(err.Error())), nil
		}
		// The call stops when its client cancels it, ends its session or
		// drops its connection, or when the server stops.
		ctx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		entry, ok := s.calls.start(sessionID(req), stop)
		if !ok {
			return errResult("the server is stopping: no run was started; call the tool again once it is back"), nil
		}
		defer s.calls.end(entry)
		if hctx := s.requests.of(req); hctx != nil {
			defer context.AfterFunc(hctx, func() {
				// The HTTP server stopping ends the request too.
				if cause := context.Cause(hctx); errors.Is(cause, madspark.ErrInterrupted) {
					stop(cause)
					return
				}
				stop(errClientGone)
			})()
		}
		ctx, release, err := s.admit(ctx)
		if err != nil {
			return errResult(err.Error()), nil
		}
		defer release()
		var rep *reporter
		if token := req.Params.GetProgressToken(); token != nil {
			rep = newReporter(req.Session, token, s.cfg.Heartbeat)
		}
		var sink func(madspark.Event)
		if rep != nil {
			sink = rep.add
		}
		run, err := s.cfg.Engine.Start(ctx, engine.RunInfo{Pipeline: d.Name, Mode: s.cfg.Mode, Provider: s.cfg.Provider, Model: s.cfg.Model, Params: params}, sink)
		if err != nil {
			return nil, fmt.Errorf("start a run of %s: %w", d.Name, err)
		}
		if rep != nil {
			rep.add(madspark.Event{Stage: "start", Message: fmt.Sprintf("run %s of %s started", run.ID(), d.Name)})
			go rep.run(ctx)
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		res, runErr := d.Run(rctx, run, params)
		cancel()
		if rep != nil {
			rep.stop()
		}
		switch cause := context.Cause(ctx); {
		case runErr != nil && errors.Is(cause, madspark.ErrInterrupted):
			runErr = fmt.Errorf("%w: %w", cause, runErr)
		case runErr != nil && (errors.Is(cause, errSessionEnded) || errors.Is(cause, errClientGone)):
			// Nobody reads the result. What was finished stays in the
			// journal.
			runErr = fmt.Errorf("%w: %w: %w", madspark.ErrCancelled, cause, runErr)
		case runErr != nil && ctx.Err() != nil:
			// The client cancelled the call.
			runErr = fmt.Errorf("%w by the MCP client: %w", madspark.ErrCancelled, runErr)
		case runErr != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
			runErr = fmt.Errorf("run timed out after %s: %w", s.cfg.Timeout, runErr)
		}
		if err := run.Finish(ctx, res, runErr); err != nil {
			s.log.Warn("could not record the run's outcome", "run", run.ID(), "err", err)
			if runErr == nil {
				return nil, fmt.Errorf("run %s: %w", run.ID(), err)
			}
		}
		links := s.links(d, run.ID(), runErr == nil)
		if runErr != nil {
			return errResult(s.toolError(run.ID(), runErr), links...), nil
		}
		rec := run.Record()
		structured, err := structuredResult(rec.Result, run.ID())
		if err != nil {
			return nil, err
		}
		text, err := s.report(d, &rec)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{StructuredContent: structured, Content: append([]mcp.Content{&mcp.TextContent{Text: text}}, links...)}, nil
	}
}

// sessionID is the ID of the session a call came in, "" over standard
// input and output.
func sessionID(req *mcp.CallToolRequest) string {
	if req.Session == nil {
		return ""
	}
	return req.Session.ID()
}

// admit asks Config.Admit whether a call may start its run: a refusal for
// capacity is an error that says when to call again.
func (s *Server) admit(ctx context.Context) (context.Context, func(), error) {
	if s.cfg.Admit == nil {
		return ctx, func() {}, nil
	}
	actx, release, err := s.cfg.Admit(middleware.RefuseWhenBusy(ctx))
	if err == nil {
		return actx, release, nil
	}
	if errors.Is(err, middleware.ErrBusy) {
		wait := max(time.Second, llm.RetryAfterOf(err)).Round(time.Second)
		return nil, nil, fmt.Errorf("the model provider is busy (%s, model %s): %s; no run was started, call the tool again in %s",
			s.cfg.Provider, s.cfg.Model, oneLine(busyMessage(err)), wait)
	}
	return nil, nil, err
}

// busyMessage is what a capacity refusal says.
func busyMessage(err error) string {
	if le, ok := errors.AsType[*llm.Error](err); ok && le.Message != "" {
		return le.Message
	}
	return err.Error()
}

// structuredResult is a result's JSON object with the run's ID.
func structuredResult(result json.RawMessage, runID string) (map[string]any, error) {
	out := map[string]any{}
	if err := json.Unmarshal(result, &out); err != nil {
		var v any
		if json.Unmarshal(result, &v) != nil {
			return nil, fmt.Errorf("run %s: result: %w", runID, err)
		}
		out = map[string]any{"result": v}
	}
	out["run_id"] = runID
	return out, nil
}

// report is a succeeded run's report in Markdown (its pipeline's
// Document, or its result as JSON when the pipeline lays out no
// document), with a last line that names the run and what it cost.
func (s *Server) report(d pipeline.Definition, rec *madspark.Run) (string, error) {
	var body string
	if d.Document != nil {
		doc, err := d.Document(rec)
		if err != nil {
			return "", fmt.Errorf("run %s: %w", rec.ID, err)
		}
		body = string(document.Markdown(doc))
	} else {
		var b strings.Builder
		b.WriteString("```json\n")
		var v any
		_ = json.Unmarshal(rec.Result, &v)
		j, _ := json.MarshalIndent(v, "", "  ")
		b.Write(j)
		b.WriteString("\n```\n")
		body = b.String()
	}
	foot := fmt.Sprintf("run %s · %s/%s · %s", rec.ID, rec.Provider, rec.Model, rec.Usage)
	if n := repairCount(rec.Result); n > 0 {
		foot += "; " + llm.RepairCount(n)
	}
	return strings.TrimRight(body, "\n") + "\n\n---\n" + foot + "\n", nil
}

// repairCount is the length of a result's repairs list.
func repairCount(result json.RawMessage) int {
	var r struct {
		Repairs []json.RawMessage `json:"repairs"`
	}
	_ = json.Unmarshal(result, &r)
	return len(r.Repairs)
}

// links are the resources of run id: the run, and the exports of a
// succeeded run whose pipeline lays it out as a document.
func (s *Server) links(d pipeline.Definition, id string, succeeded bool) []mcp.Content {
	out := []mcp.Content{&mcp.ResourceLink{URI: runURI(id), Name: "run " + id, MIMEType: "application/json",
		Description: "The run: status, parameters, result, usage and repairs."}}
	if succeeded && d.Document != nil {
		for _, x := range exports {
			out = append(out, &mcp.ResourceLink{URI: runURI(id) + "/export." + x.ext, Name: fileName(d.Name, id, x), MIMEType: x.mime, Description: x.desc})
		}
	}
	return out
}

// reporter sends a run's events as progress notifications of the call that
// started it, and tells the current stage again when none began for a
// while. The progress values increase strictly, as the protocol asks: the
// run's percentage, or a hundredth more than the last value.
type reporter struct {
	ss    *mcp.ServerSession
	token any
	every time.Duration

	mu      sync.Mutex
	pending []madspark.Event
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

func newReporter(ss *mcp.ServerSession, token any, every time.Duration) *reporter {
	return &reporter{ss: ss, token: token, every: every, wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
}

// add queues e; it never blocks the run.
func (p *reporter) add(e madspark.Event) {
	p.mu.Lock()
	p.pending = append(p.pending, e)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// stop sends what is queued and ends run.
func (p *reporter) stop() {
	close(p.done)
	<-p.stopped
}

// run sends the notifications until stop, on ctx: the call's, so that
// they go where its answer goes.
func (p *reporter) run(ctx context.Context) {
	defer close(p.stopped)
	value := -1.0 // the first notification is at 0 at least
	var message string
	since := time.Now()
	notify := func(progress float64, msg string) {
		value = min(max(progress, value+0.01), 100)
		// A notification that cannot be sent is lost: the session is
		// gone, which ends the call too.
		_ = p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: value, Total: 100, Message: msg})
	}
	flush := func() {
		p.mu.Lock()
		evs := p.pending
		p.pending = nil
		p.mu.Unlock()
		for _, e := range evs {
			message, since = describe(e), time.Now()
			notify(float64(e.Progress), message)
		}
	}
	beat := time.NewTicker(p.every)
	defer beat.Stop()
	for {
		select {
		case <-p.done:
			flush()
			return
		case <-ctx.Done():
			return
		case <-p.wake:
			flush()
			beat.Reset(p.every)
		case <-beat.C:
			notify(value, fmt.Sprintf("%s (still working, %s)", message, time.Since(since).Round(time.Second)))
		}
	}
}

// describe is an event's line for people: "evaluate: evaluating 5 ideas".
func describe(e madspark.Event) string {
	switch {
	case e.Message == "" || e.Message == e.Stage:
		return e.Stage
	case e.Stage == "" || e.Stage == "start" || e.Stage == "done" || strings.HasPrefix(e.Message, e.Stage):
		return e.Message
	}
	return e.Stage + ": " + e.Message
}
