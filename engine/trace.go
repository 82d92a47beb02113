package engine

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// Spans: a run is one span ("run PIPELINE"), the parent of a span per step
// ("step KEY"), the parent of a span per LLM call ("chat MODEL") with the
// attributes of the OpenTelemetry GenAI semantic conventions.

// noopTracer stands in when Engine.Tracer is nil: it records nothing.
var noopTracer trace.Tracer = noop.NewTracerProvider().Tracer("")

func (e *Engine) tracer() trace.Tracer {
	if e.Tracer != nil {
		return e.Tracer
	}
	return noopTracer
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

// endRun ends the span of a finished run.
func endRun(span trace.Span, rec *madspark.Run) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("madspark.run.status", string(rec.Status)),
		attribute.Int("madspark.usage.llm_calls", rec.Usage.LLMCalls),
		attribute.Int("madspark.usage.cached_calls", rec.Usage.CachedCalls),
		attribute.Float64("madspark.usage.cost_usd", rec.Usage.CostUSD))
	if rec.Status == madspark.RunFailed {
		span.SetStatus(codes.Error, rec.Error)
	}
	span.End()
}

// startStep starts the span of step key of r, a child of r's span.
func (r *Run) startStep(ctx context.Context, key string) (context.Context, trace.Span) {
	if r.span != nil {
		ctx = trace.ContextWithSpan(ctx, r.span)
	}
	return r.e.tracer().Start(ctx, "step "+key, trace.WithAttributes(
		attribute.String("madspark.run.id", r.rec.ID),
		attribute.String("madspark.step.key", key),
	))
}

// endStep ends the span of step.
func endStep(span trace.Span, step *madspark.Step, err error) {
	span.SetAttributes(attribute.String("madspark.step.status", string(step.Status)),
		attribute.Int("madspark.step.llm_calls", step.Usage.LLMCalls),
		attribute.Int("madspark.step.cached_calls", step.Usage.CachedCalls))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// providerName maps madspark's provider names to the GenAI convention's.
func providerName(p string) string {
	switch p {
	case "gemini":
		return "gcp.gemini"
	case "":
		return "unknown"
	}
	return p
}

// startCall starts the span of an LLM call, a child of the step's span in
// ctx.
func (e *Engine) startCall(ctx context.Context, r *Run, key string, req *llm.Request, attempt int) (context.Context, trace.Span) {
	model := req.Model
	if model == "" {
		model = r.rec.Model
	}
	provider := req.Provider
	if provider == "" {
		provider = r.rec.Provider
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(providerName(provider)),
		semconv.GenAIRequestModel(model),
		semconv.GenAIRequestTemperature(req.Temperature),
		attribute.String("gen_ai.agent.name", req.Agent),
		attribute.String("madspark.step.key", key),
		attribute.Int("madspark.attempt", attempt),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if e.CaptureContent {
		attrs = append(attrs, inputContent(req)...)
	}
	name := "chat"
	if model != "" {
		name += " " + model
	}
	ctx, span := e.tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if attempt > 1 {
		span.AddEvent("reask", trace.WithAttributes(attribute.Int("madspark.attempt", attempt)))
	}
	return ctx, span
}

// endCall ends the span of an LLM call with its outcome.
func (e *Engine) endCall(span trace.Span, resp *llm.Response, err error, retries int) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if retries > 0 {
		span.SetAttributes(attribute.Int("madspark.retries", retries))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorType(err))
		span.End()
		return
	}
	span.SetAttributes(
		semconv.GenAIResponseModel(resp.Model),
		semconv.GenAIUsageInputTokens(resp.Usage.InputTokens),
		semconv.GenAIUsageOutputTokens(resp.Usage.OutputTokens),
		attribute.Bool("madspark.cache_hit", resp.Cached),
		attribute.Float64("madspark.cost_usd", resp.Usage.CostUSD),
	)
	if resp.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(resp.FinishReason))
	}
	if resp.Cached {
		span.AddEvent("cache_hit")
	}
	if e.CaptureContent {
		span.SetAttributes(outputContent(resp)...)
	}
	span.End()
}

// retryAttrs describe a retry event.
func retryAttrs(attempt int, delay time.Duration, err error) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int("madspark.attempt", attempt),
		attribute.Int64("madspark.retry.delay_ms", delay.Milliseconds()),
		attribute.String("exception.message", err.Error()),
	}
}

// part and message are the JSON shapes of the GenAI conventions' message
// content attributes.
type (
	part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
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

// inputContent are the attributes that carry a request's prompt.
func inputContent(req *llm.Request) []attribute.KeyValue {
	msgs := make([]message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = message{Role: string(m.Role), Parts: []part{{Type: "text", Content: m.Content}}}
	}
	attrs := []attribute.KeyValue{jsonAttr(semconv.GenAIInputMessagesKey, msgs)}
	if req.System != "" {
		attrs = append(attrs, jsonAttr(semconv.GenAISystemInstructionsKey, []part{{Type: "text", Content: req.System}}))
	}
	return attrs
}

// outputContent is the attribute that carries a reply.
func outputContent(resp *llm.Response) []attribute.KeyValue {
	return []attribute.KeyValue{jsonAttr(semconv.GenAIOutputMessagesKey, []message{{
		Role: string(llm.RoleAssistant), Parts: []part{{Type: "text", Content: resp.Text}}, FinishReason: resp.FinishReason,
	}})}
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
