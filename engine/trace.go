package engine

import (
	"context"
	"encoding/json"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
	"github.com/madspark/madspark/telemetry"
)

// Spans, by the OpenTelemetry GenAI semantic conventions: a run is one
// span ("run PIPELINE"), the parent of a span per step. A step whose
// agent calls a model is an invoke_agent span ("invoke_agent AGENT",
// gen_ai.operation.name invoke_agent, gen_ai.agent.name), the parent of a
// client span per request sent to the provider ("chat MODEL"); a reply
// from the response cache is an event and a count on the agent's span,
// not a span. A step that calls no model stays "step KEY". Every failed
// span has error.type (ErrorType).

// noopTracer stands in when Engine.Tracer is nil: it records nothing.
var noopTracer trace.Tracer = noop.NewTracerProvider().Tracer("")

func (e *Engine) tracer() trace.Tracer {
	if e.Tracer != nil {
		return e.Tracer
	}
	return noopTracer
}

// ErrorType classifies err for the error.type attribute of spans and
// metrics: "invalid_reply" for a reply that could not be used, else
// llm.ErrorType's class (an HTTP status code, "timeout", "rate_limited",
// "_OTHER").
func ErrorType(err error) string {
	var re *structured.ReplyError
	if errors.As(err, &re) {
		return llm.ErrorInvalidReply
	}
	return llm.ErrorType(err)
}

// failed marks span as failed with err.
func failed(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(err)))
}

// startRun starts the span of run rec, a child of the span in ctx if any
// (such as the request that queued the run).
func (e *Engine) startRun(ctx context.Context, rec *madspark.Run) trace.Span {
	_, span := e.tracer().Start(ctx, "run "+rec.Pipeline, trace.WithAttributes(
		attribute.String("madspark.run.id", rec.ID),
		attribute.String("madspark.pipeline", rec.Pipeline),
		attribute.String("madspark.mode", rec.Mode),
	))
	return span
}

// endRun ends the span of a finished run; err is why it did not succeed.
func endRun(span trace.Span, rec *madspark.Run, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("madspark.run.status", string(rec.Status)),
		attribute.Int("madspark.usage.llm_calls", rec.Usage.LLMCalls),
		attribute.Int("madspark.usage.cached_calls", rec.Usage.CachedCalls),
		attribute.Int("madspark.usage.input_tokens", rec.Usage.InputTokens),
		attribute.Int("madspark.usage.output_tokens", rec.Usage.OutputTokens))
	if rec.Usage.Priced() {
		span.SetAttributes(attribute.Float64("madspark.usage.cost_usd", rec.Usage.CostUSD))
	}
	if rec.Status == madspark.RunFailed && err != nil {
		failed(span, err)
	}
	span.End()
}

// startStep starts the span of step key of r, a child of r's span. It is
// named "step KEY" until an agent of the step calls a model.
func (r *Run) startStep(ctx context.Context, key string) (context.Context, *agentSpan) {
	if r.span != nil {
		ctx = trace.ContextWithSpan(ctx, r.span)
	}
	ctx, span := r.e.tracer().Start(ctx, "step "+key, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("madspark.run.id", r.rec.ID),
		attribute.String("madspark.step.key", key),
	))
	return ctx, &agentSpan{span: span}
}

// named makes s the invoke_agent span of req's agent, if it is not an
// agent's span yet, and returns it.
func (s *agentSpan) named(r *Run, req *llm.Request) *agentSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent != "" || req.Agent == "" {
		return s
	}
	s.agent = req.Agent
	s.span.SetName("invoke_agent " + req.Agent)
	s.span.SetAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(req.Agent),
		semconv.GenAIProviderNameKey.String(telemetry.ProviderName(or(req.Provider, r.rec.Provider))),
		semconv.GenAIRequestModel(or(req.Model, r.rec.Model)))
	return s
}

// cacheHit records on s that the response cache answered req.
func (s *agentSpan) cacheHit(req *llm.Request, resp *llm.Response) {
	s.span.AddEvent("cache_hit", trace.WithAttributes(
		semconv.GenAIAgentName(req.Agent),
		semconv.GenAIResponseModel(resp.Model),
		attribute.Int("madspark.cached.input_tokens", resp.Usage.CachedInputTokens),
		attribute.Int("madspark.cached.output_tokens", resp.Usage.CachedOutputTokens)))
}

// endStep ends the span of step.
func endStep(s *agentSpan, step *madspark.Step, err error) {
	s.span.SetAttributes(attribute.String("madspark.step.status", string(step.Status)),
		attribute.Int("madspark.step.llm_calls", step.Usage.LLMCalls),
		attribute.Int("madspark.step.cached_calls", step.Usage.CachedCalls),
		attribute.Bool("madspark.cache_hit", step.Usage.CachedCalls > 0 && step.Usage.LLMCalls == 0))
	if err != nil {
		failed(s.span, err)
	}
	s.span.End()
}

// chatSpan traces attempt a of a call of step key of r: a client span
// "chat MODEL" under the step's span in ctx, from when the request went out
// to when its answer or error came back.
func (e *Engine) chatSpan(ctx context.Context, r *Run, key string, req *llm.Request, a *llm.Attempt, attempt, retries int) {
	model := or(a.RequestModel, r.rec.Model)
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(telemetry.ProviderName(or(a.Provider, r.rec.Provider))),
		semconv.GenAIRequestModel(model),
		semconv.GenAIRequestTemperature(req.Temperature),
		semconv.GenAIAgentName(req.Agent),
		attribute.String("madspark.step.key", key),
		attribute.Int("madspark.attempt", attempt),
	}
	if retries > 0 {
		attrs = append(attrs, attribute.Int("madspark.retry", retries))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if e.CaptureContent {
		attrs = append(attrs, inputContent(a.Wire)...)
		if len(req.Tools) > 0 {
			attrs = append(attrs, toolDefinitions(req.Tools))
		}
	}
	name := "chat"
	if model != "" {
		name += " " + model
	}
	_, span := e.tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(a.Start), trace.WithAttributes(attrs...))
	span.SetAttributes(
		semconv.GenAIUsageInputTokens(a.Usage.InputTokens),
		semconv.GenAIUsageOutputTokens(a.Usage.OutputTokens))
	if a.Usage.Priced() {
		span.SetAttributes(attribute.Float64("madspark.cost_usd", a.Usage.CostUSD))
	}
	if a.Err != nil {
		failed(span, a.Err)
	} else {
		span.SetAttributes(semconv.GenAIResponseModel(a.Response.Model))
		if a.Response.FinishReason != "" {
			span.SetAttributes(semconv.GenAIResponseFinishReasons(a.Response.FinishReason))
		}
		if e.CaptureContent {
			span.SetAttributes(outputContent(a.Response)...)
		}
		// Each tool the reply called is an event: its name and call ID
		// always, its arguments with the content.
		for _, tc := range a.Response.ToolCalls {
			attrs := []attribute.KeyValue{semconv.GenAIToolName(tc.Name), semconv.GenAIToolCallID(tc.ID)}
			if e.CaptureContent {
				attrs = append(attrs, attribute.String("gen_ai.tool.call.arguments", tc.Arguments))
			}
			span.AddEvent("gen_ai.tool.call", trace.WithAttributes(attrs...))
		}
	}
	span.End(trace.WithTimestamp(a.Start.Add(a.Duration)))
}

// part and message are the JSON shapes of the GenAI conventions' message
// content attributes.
type (
	part struct {
		Type    string `json:"type"`
		Content string `json:"content,omitempty"`
		// A tool_call part's, and a tool_call_response part's ID.
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  string          `json:"response,omitempty"`
	}
	message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
)

func jsonAttr(k attribute.Key, v any) attribute.KeyValue {
	b, _ := json.Marshal(v)
	return k.String(string(b))
}

// inputContent are the attributes that carry the prompt sent: its system
// messages as gen_ai.system_instructions, the others as
// gen_ai.input.messages.
func inputContent(w llm.Wire) []attribute.KeyValue {
	msgs := make([]message, 0, len(w.Messages))
	var system []part
	for _, m := range w.Messages {
		if m.Role == llm.RoleSystem {
			system = append(system, part{Type: "text", Content: m.Content})
			continue
		}
		msgs = append(msgs, message{Role: string(m.Role), Parts: partsOf(m.Content, m.ToolCalls, m.ToolCallID)})
	}
	attrs := []attribute.KeyValue{jsonAttr(semconv.GenAIInputMessagesKey, msgs)}
	if system != nil {
		attrs = append(attrs, jsonAttr(semconv.GenAISystemInstructionsKey, system))
	}
	return attrs
}

// outputContent is the attribute that carries a reply.
func outputContent(resp *llm.Response) []attribute.KeyValue {
	return []attribute.KeyValue{jsonAttr(semconv.GenAIOutputMessagesKey, []message{{
		Role: string(llm.RoleAssistant), Parts: partsOf(resp.Text, resp.ToolCalls, ""), FinishReason: resp.FinishReason,
	}})}
}

// partsOf are the parts of a message: its text, the tools it calls, or
// (callID set) the result of a tool call.
func partsOf(text string, calls []llm.ToolCall, callID string) []part {
	if callID != "" {
		return []part{{Type: "tool_call_response", ID: callID, Response: text}}
	}
	var parts []part
	if text != "" || len(calls) == 0 {
		parts = append(parts, part{Type: "text", Content: text})
	}
	for _, c := range calls {
		p := part{Type: "tool_call", ID: c.ID, Name: c.Name}
		if json.Valid([]byte(c.Arguments)) {
			p.Arguments = json.RawMessage(c.Arguments)
		} else {
			p.Arguments, _ = json.Marshal(c.Arguments)
		}
		parts = append(parts, p)
	}
	return parts
}

// toolDefinitions is the attribute that lists the tools a request offered.
func toolDefinitions(tools []llm.Tool) attribute.KeyValue {
	type function struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	defs := make([]function, len(tools))
	for i, t := range tools {
		defs[i] = function{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return jsonAttr(semconv.GenAIToolDefinitionsKey, defs)
}

// repairAttrs describe a repair event.
func repairAttrs(r llm.Repair) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("gen_ai.agent.name", r.Agent),
		attribute.String("madspark.repair.rule", r.Rule),
		attribute.String("madspark.repair.path", r.Path),
		attribute.String("madspark.repair.action", r.Action),
	}
}
