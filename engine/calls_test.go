package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/structured"
)

// flaky fails its first call with a retryable error, then answers every
// request with its last message, upper-cased, as openai/m1.
type flaky struct{ n atomic.Int32 }

func (f *flaky) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	if f.n.Add(1) == 1 {
		return nil, &llm.Error{Provider: "openai", Status: 503, Message: "overloaded", Retryable: true}
	}
	return &llm.Response{Text: strings.ToUpper(req.Prompt()), Provider: "openai", Model: "m1", FinishReason: "stop",
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 10, OutputTokens: 4, CostUSD: 0.001}}, nil
}

// reask asks once, then sends the reply back to be fixed, as a structured
// reply that failed validation is.
func reask(ctx context.Context, c llm.Client) (string, error) {
	first := []llm.Message{{Role: llm.RoleUser, Content: "idea"}}
	resp, err := c.Generate(ctx, &llm.Request{Agent: "t.gen", System: "be brief", Messages: first, Temperature: 0.5, MaxTokens: 64})
	if err != nil {
		return "", err
	}
	again := append(first, llm.Message{Role: llm.RoleAssistant, Content: resp.Text}, llm.Message{Role: llm.RoleUser, Content: "fix it"})
	resp, err = c.Generate(ctx, &llm.Request{Agent: "t.gen", System: "be brief", Messages: again, Temperature: 0.5, MaxTokens: 64})
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}

func newTracedEngine(t *testing.T, client llm.Client) (*Engine, *tracetest.SpanRecorder) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &Engine{Store: db, Client: client, Tracer: tp.Tracer("test"), CaptureContent: true}, sr
}

// stack is the client stack's shape around client: retry (without
// waiting) above the meter, which sits next to the provider.
func stack(client llm.Client) llm.Client {
	return llm.Chain(client,
		middleware.Retry(middleware.RetryConfig{Sleep: func(context.Context, time.Duration) error { return nil }}),
		middleware.Meter(middleware.PriceTable{"m1": {InputPerMTok: 100, OutputPerMTok: 1000}}))
}

func TestStepRecordsCalls(t *testing.T) {
	ctx := t.Context()
	e, _ := newTracedEngine(t, stack(&flaky{}))
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Provider: "openai", Model: "m1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := Step(ctx, r, "gen", "in", reask); err != nil || out != "FIX IT" {
		t.Fatalf("step = %q, %v", out, err)
	}
	failing := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) {
		return nil, errors.New("no model")
	})
	e.Client = failing
	if _, err := Step(ctx, r, "broken", "in", ask("x")); err == nil {
		t.Fatal("step broken succeeded")
	}
	steps, err := e.Store.Steps(ctx, r.ID())
	if err != nil || len(steps) != 2 {
		t.Fatalf("steps = %v, %v", steps, err)
	}
	calls := steps[0].Calls
	if len(calls) != 3 {
		t.Fatalf("step gen has %d calls, want 3 (a failed attempt, its retry, the re-ask): %+v", len(calls), calls)
	}
	// The client sends the agent's prompt as it is: it is journaled once.
	failed, c0, c1 := calls[0], calls[1], calls[2]
	if failed.Error != "openai: HTTP 503: overloaded" || failed.Retries != 0 || failed.Attempt != 1 || failed.Usage.LLMCalls != 1 ||
		failed.Sent != nil || failed.Response != "" {
		t.Errorf("failed attempt = %+v", failed)
	}
	if c0.Agent != "t.gen" || c0.System != "be brief" || len(c0.Messages) != 1 || c0.Messages[0].Content != "idea" || c0.Sent != nil ||
		c0.Response != "IDEA" || c0.Provider != "openai" || c0.Model != "m1" || c0.FinishReason != "stop" ||
		c0.Attempt != 1 || c0.Retries != 1 || c0.Temperature != 0.5 || c0.MaxTokens != 64 || c0.Usage.InputTokens != 10 ||
		c0.Usage.CostUSD != 0.005 {
		t.Errorf("first call = %+v", c0)
	}
	if c1.Attempt != 2 || c1.Retries != 0 || len(c1.Messages) != 3 || c1.Response != "FIX IT" || c1.StartedAt.Before(c0.StartedAt) {
		t.Errorf("second call = %+v", c1)
	}
	if c0.StartedAt.IsZero() || c0.Latency <= 0 {
		t.Errorf("first call start %v latency %v", c0.StartedAt, c0.Latency)
	}
	if u := steps[0].Usage; u.LLMCalls != 3 || u.InputTokens != 20 || u.OutputTokens != 8 || u.CostUSD != 0.01 {
		t.Errorf("step usage = %+v", u)
	}
	b := steps[1].Calls
	if len(b) != 1 || b[0].Error != "no model" || b[0].Response != "" || b[0].Provider != "" || b[0].Sent != nil || b[0].Usage.LLMCalls != 0 {
		t.Errorf("failed step's calls = %+v", b)
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestStepSpans(t *testing.T) {
	ctx := t.Context()
	e, sr := newTracedEngine(t, stack(&flaky{}))
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Provider: "openai", Model: "m1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Step(ctx, r, "gen", "in", reask); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(ctx, "ok", nil); err != nil {
		t.Fatal(err)
	}
	spans := sr.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	run, step, chat := byName["run test"], byName["invoke_agent t.gen"], byName["chat m1"]
	if len(run) != 1 || len(step) != 1 || len(chat) != 3 || len(spans) != 5 {
		t.Fatalf("spans = %v", byName)
	}
	if run[0].Parent().IsValid() {
		t.Errorf("run span has a parent")
	}
	if step[0].Parent().SpanID() != run[0].SpanContext().SpanID() || step[0].SpanKind() != trace.SpanKindInternal {
		t.Errorf("agent span's parent is not the run, or its kind is %v", step[0].SpanKind())
	}
	if a := attrs(step[0]); a["gen_ai.operation.name"].AsString() != "invoke_agent" || a["gen_ai.agent.name"].AsString() != "t.gen" {
		t.Errorf("agent span attributes = %v", a)
	}
	for _, c := range chat {
		if c.Parent().SpanID() != step[0].SpanContext().SpanID() || c.SpanContext().TraceID() != run[0].SpanContext().TraceID() ||
			c.SpanKind() != trace.SpanKindClient {
			t.Errorf("call span %v is not a client child of the agent span in the run's trace", c.SpanContext())
		}
	}
	slices.SortFunc(chat, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	if f := attrs(chat[0]); f["error.type"].AsString() != "503" || chat[0].Status().Code != codes.Error {
		t.Errorf("failed attempt's span = %v, %v", f, chat[0].Status())
	}
	a := attrs(chat[1])
	for k, want := range map[attribute.Key]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m1",
		"gen_ai.response.model": "m1", "gen_ai.agent.name": "t.gen",
	} {
		if got := a[k].AsString(); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if a["gen_ai.usage.input_tokens"].AsInt64() != 10 || a["gen_ai.usage.output_tokens"].AsInt64() != 4 ||
		a["gen_ai.request.max_tokens"].AsInt64() != 64 || a["gen_ai.request.temperature"].AsFloat64() != 0.5 ||
		strings.Join(a["gen_ai.response.finish_reasons"].AsStringSlice(), ",") != "stop" || a["madspark.retry"].AsInt64() != 1 {
		t.Errorf("call attributes = %v", a)
	}
	if _, ok := a["error.type"]; ok {
		t.Errorf("a call that succeeded has error.type")
	}
	if !strings.Contains(a["gen_ai.input.messages"].AsString(), `"content":"idea"`) ||
		!strings.Contains(a["gen_ai.output.messages"].AsString(), `"content":"IDEA"`) ||
		!strings.Contains(a["gen_ai.system_instructions"].AsString(), "be brief") {
		t.Errorf("content attributes = %v", a)
	}
	if a := attrs(chat[2]); a["madspark.attempt"].AsInt64() != 2 {
		t.Errorf("the re-ask's attempt = %v", a["madspark.attempt"])
	}
}

func TestNoContentWithoutCapture(t *testing.T) {
	e, sr := newTracedEngine(t, &countingClient{})
	e.CaptureContent = false
	r, err := e.Start(t.Context(), RunInfo{Pipeline: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Step(t.Context(), r, "a", "in", ask("secret prompt")); err != nil {
		t.Fatal(err)
	}
	for _, s := range sr.Ended() {
		for k, v := range attrs(s) {
			if strings.Contains(v.String(), "secret prompt") {
				t.Errorf("span %s attribute %s carries the prompt", s.Name(), k)
			}
		}
	}
}

// TestFailedSpansHaveErrorType: a request that timed out, the agent's
// step whose reply could not be used and the run it failed each carry a
// short error.type.
func TestFailedSpansHaveErrorType(t *testing.T) {
	ctx := t.Context()
	var n atomic.Int32
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if n.Add(1) == 1 {
			return nil, &llm.Error{Provider: "openai", Status: 504, Message: "gateway timeout", Retryable: true}
		}
		return &llm.Response{Text: "not json", Provider: "openai", Model: "m1", FinishReason: "stop", Usage: llm.Usage{LLMCalls: 1, InputTokens: 5}}, nil
	})
	e, sr := newTracedEngine(t, stack(client))
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Provider: "openai", Model: "m1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Step(ctx, r, "judge", "in", func(ctx context.Context, c llm.Client) (string, error) {
		resp, err := c.Generate(ctx, &llm.Request{Agent: "t.judge", Messages: []llm.Message{{Role: llm.RoleUser, Content: "judge"}}})
		if err != nil {
			return "", err
		}
		return "", &structured.ReplyError{Agent: "t.judge", Problem: errors.New("no JSON value"), Raw: resp.Text}
	})
	if err == nil {
		t.Fatal("the step succeeded")
	}
	if err := r.Finish(ctx, nil, err); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, s := range sr.Ended() {
		if v, ok := attrs(s)["error.type"]; ok {
			types[s.Name()] += v.AsString() + ";"
		}
	}
	want := map[string]string{"chat m1": "504;", "invoke_agent t.judge": "invalid_reply;", "run test": "invalid_reply;"}
	if len(types) != len(want) {
		t.Fatalf("error types %v, want %v", types, want)
	}
	for k, v := range want {
		if types[k] != v {
			t.Errorf("%s: error.type %q, want %q", k, types[k], v)
		}
	}
	steps, _ := e.Store.Steps(ctx, r.ID())
	if len(steps) != 1 || len(steps[0].Calls) != 2 || steps[0].Usage.LLMCalls != 2 || steps[0].Usage.InputTokens != 5 {
		t.Errorf("failed step journaled as %+v", steps)
	}
}

// TestPaidCallsSurviveFailureAndResume: a step journals the requests it
// sent before it sends another, so a process that dies keeps them; a
// failed step's calls are counted in the run when it resumes, and the step
// that runs again keeps them before its new ones.
func TestPaidCallsSurviveFailureAndResume(t *testing.T) {
	ctx := t.Context()
	var e *Engine
	var runID string
	var seenRunning atomic.Bool
	var fail atomic.Bool
	fail.Store(true)
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if attemptOf(req) == 2 {
			// The first reply is journaled before the re-ask goes out.
			steps, _ := e.Store.Steps(ctx, runID)
			seenRunning.Store(len(steps) == 1 && steps[0].Status == madspark.StepRunning && len(steps[0].Calls) == 1)
		}
		return &llm.Response{Text: "r", Provider: "openai", Model: "m1", Usage: llm.Usage{LLMCalls: 1, InputTokens: 10, OutputTokens: 1}}, nil
	})
	e, _ = newTracedEngine(t, stack(client))
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Provider: "openai", Model: "m1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runID = r.ID()
	step := func(ctx context.Context, c llm.Client) (string, error) {
		out, err := reask(ctx, c)
		if fail.Load() {
			return "", errors.New("unusable")
		}
		return out, err
	}
	if _, err := Step(ctx, r, "gen", "in", step); err == nil {
		t.Fatal("the step succeeded")
	}
	if !seenRunning.Load() {
		t.Error("the step's first call was not journaled before its second request")
	}
	if err := r.Finish(ctx, nil, errors.New("unusable")); err != nil {
		t.Fatal(err)
	}
	if rec, _ := e.Store.Run(ctx, runID); rec.Usage.LLMCalls != 2 || rec.Usage.InputTokens != 20 {
		t.Errorf("failed run's usage = %+v", rec.Usage)
	}
	fail.Store(false)
	r, err = e.Resume(ctx, runID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u := r.Usage(); u.LLMCalls != 2 {
		t.Errorf("resumed run starts with usage %+v, want the failed step's 2 calls", u)
	}
	if _, err := Step(ctx, r, "gen", "in", step); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(ctx, "ok", nil); err != nil {
		t.Fatal(err)
	}
	steps, _ := e.Store.Steps(ctx, runID)
	rec, _ := e.Store.Run(ctx, runID)
	if len(steps) != 1 || len(steps[0].Calls) != 4 || steps[0].Usage.LLMCalls != 4 || rec.Usage.LLMCalls != 4 || rec.Usage.InputTokens != 40 {
		t.Errorf("after resume: step %+v, run usage %+v", steps, rec.Usage)
	}
}

// toolCaller calls the first tool offered, then answers the tool's
// result.
type toolCaller struct{}

func (toolCaller) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	resp := &llm.Response{Provider: "openai", Model: "m1", FinishReason: "stop", Usage: llm.Usage{LLMCalls: 1, InputTokens: 10, OutputTokens: 4}}
	if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
		resp.Text = "it is " + last.Content
		return resp, nil
	}
	resp.FinishReason, resp.ToolCalls = llm.FinishToolCalls, []llm.ToolCall{{ID: "call_1", Name: req.Tools[0].Name, Arguments: `{"city":"Oslo"}`}}
	return resp, nil
}

// TestStepRecordsToolCalls: a call's tools, tool choice and the reply's
// tool calls are journaled and traced (names and call IDs always, the
// arguments and definitions with the content); a conversation passed on
// (History) is not counted as re-asks.
func TestStepRecordsToolCalls(t *testing.T) {
	ctx := t.Context()
	e, sr := newTracedEngine(t, stack(toolCaller{}))
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Provider: "openai", Model: "m1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "weather", Parameters: []byte(`{"type":"object"}`)}}
	choice := &llm.ToolChoice{Mode: llm.ToolAuto}
	_, err = Step(ctx, r, "answer", "q", func(ctx context.Context, c llm.Client) (string, error) {
		first := []llm.Message{{Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleAssistant, Content: "hello"}, {Role: llm.RoleUser, Content: "weather?"}}
		resp, err := c.Generate(ctx, &llm.Request{Agent: "t.answer", Messages: first, History: 2, Tools: tools, ToolChoice: choice})
		if err != nil {
			return "", err
		}
		then := append(first, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls}, llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "sunny"})
		resp, err = c.Generate(ctx, &llm.Request{Agent: "t.answer", Messages: then, History: len(then), Tools: tools})
		if err != nil {
			return "", err
		}
		return resp.Text, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := e.Store.Steps(ctx, r.ID())
	if err != nil || len(steps) != 1 || len(steps[0].Calls) != 2 {
		t.Fatalf("steps %+v, %v", steps, err)
	}
	first, second := steps[0].Calls[0], steps[0].Calls[1]
	if len(first.Tools) != 1 || first.Tools[0].Name != "weather" || first.ToolChoice == nil || first.ToolChoice.Mode != "auto" ||
		len(first.ToolCalls) != 1 || first.ToolCalls[0].Arguments != `{"city":"Oslo"}` || first.FinishReason != llm.FinishToolCalls || first.Attempt != 1 {
		t.Errorf("first call %+v", first)
	}
	if second.Response != "it is sunny" || second.ToolCalls != nil || second.Attempt != 1 || second.Messages[4].ToolCallID != "call_1" ||
		second.Messages[3].ToolCalls[0].Name != "weather" {
		t.Errorf("second call %+v", second)
	}
	var chat sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if strings.HasPrefix(s.Name(), "chat ") {
			chat = s
			break
		}
	}
	if chat == nil {
		t.Fatal("no chat span")
	}
	a := attrs(chat)
	if !strings.Contains(a["gen_ai.tool.definitions"].AsString(), `"name":"weather"`) ||
		!strings.Contains(a["gen_ai.output.messages"].AsString(), `{"type":"tool_call","id":"call_1","name":"weather","arguments":{"city":"Oslo"}}`) {
		t.Errorf("chat span attributes %v", a)
	}
	var event bool
	for _, ev := range chat.Events() {
		if ev.Name == "gen_ai.tool.call" {
			event = slices.ContainsFunc(ev.Attributes, func(kv attribute.KeyValue) bool {
				return kv.Key == "gen_ai.tool.call.id" && kv.Value.AsString() == "call_1"
			})
		}
	}
	if !event {
		t.Errorf("no tool call event: %+v", chat.Events())
	}
}
