// Package telemetry exports traces with the OpenTelemetry SDK over OTLP/HTTP
// when the environment asks for it: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set (and OTEL_SDK_DISABLED not true).
// The SDK honours the other standard OTEL_* variables itself: headers,
// timeout, compression, service name and resource attributes, sampler.
// Without them no exporter is started and tracing costs nothing.
//
// The spans themselves are made where the work is: package engine traces
// runs, steps and LLM calls, package jobs carries the trace context of the
// request that queued a run to the worker that runs it, and the HTTP server
// is wrapped by Tracing.Handler.
package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of madspark's own spans, and the
// service name unless OTEL_SERVICE_NAME says otherwise.
const Name = "madspark"

// CaptureContentVar is the standard setting that puts the prompts and
// replies of LLM calls on their spans when "true".
const CaptureContentVar = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Tracing is the process's tracing: on, with a tracer provider that
// exports over OTLP/HTTP, or off (the zero value), when every method is a
// no-op.
type Tracing struct {
	provider *sdktrace.TracerProvider
	capture  bool
}

// Enabled reports whether getenv asks for traces to be exported.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup starts tracing when getenv asks for it (see Enabled), and returns
// the zero, disabled Tracing otherwise. The exporter's settings come from
// the process environment through the SDK. Shutdown flushes and stops it.
func Setup(ctx context.Context, getenv func(string) string) (*Tracing, error) {
	if !Enabled(getenv) {
		return &Tracing{}, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(Name)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{provider: tp, capture: strings.EqualFold(strings.TrimSpace(getenv(CaptureContentVar)), "true")}, nil
}

// NewForTest returns a Tracing over tp, for tests that collect spans in
// process.
func NewForTest(tp *sdktrace.TracerProvider, captureContent bool) *Tracing {
	return &Tracing{provider: tp, capture: captureContent}
}

// Tracer returns madspark's tracer, or nil when tracing is off.
func (t *Tracing) Tracer() trace.Tracer {
	if t == nil || t.provider == nil {
		return nil
	}
	return t.provider.Tracer(Name)
}

// CaptureContent reports whether spans carry the prompts and replies of
// LLM calls.
func (t *Tracing) CaptureContent() bool { return t != nil && t.capture }

// Handler wraps h so that every request is a server span, continuing the
// trace of a traceparent header; when tracing is off it returns h.
func (t *Tracing) Handler(h http.Handler) http.Handler {
	if t == nil || t.provider == nil {
		return h
	}
	return otelhttp.NewHandler(h, "http",
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
}

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}
