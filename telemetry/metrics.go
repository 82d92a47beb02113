package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/semconv/v1.40.0/genaiconv"

	"github.com/madspark/madspark/llm"
)

// Metrics records the GenAI client metrics of the OpenTelemetry semantic
// conventions for every request sent to a provider (one llm.Attempt):
//
//	gen_ai.client.token.usage          histogram of tokens, by gen_ai.token.type (input, output)
//	gen_ai.client.operation.duration   histogram of seconds, with error.type when the request failed
//
// both with gen_ai.operation.name (chat), gen_ai.provider.name,
// gen_ai.request.model and gen_ai.response.model. They are exported over
// OTLP/HTTP when the environment asks (MetricsEnabled) and are always in
// Registry, which the server serves at /metrics, so both show the same
// figures.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
	tokens   genaiconv.ClientTokenUsage
	duration genaiconv.ClientOperationDuration
}

// The bucket boundaries the conventions advise for the two histograms.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// MetricsEnabled reports whether getenv asks for metrics to be exported
// over OTLP: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT set, and neither OTEL_SDK_DISABLED
// true nor OTEL_METRICS_EXPORTER none.
func MetricsEnabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// SetupMetrics starts the metrics: a Prometheus registry always, an
// OTLP/HTTP exporter (its settings read by the SDK from the process
// environment) when getenv asks for it (MetricsEnabled), and readers.
// Shutdown flushes and stops them.
func SetupMetrics(ctx context.Context, getenv func(string) string, readers ...sdkmetric.Reader) (*Metrics, error) {
	if MetricsEnabled(getenv) {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
		}
		readers = append(readers, sdkmetric.NewPeriodicReader(exp))
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(Name)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return NewMetrics(res, readers...)
}

// NewMetrics returns Metrics that report to readers (tests give a
// sdkmetric.ManualReader) and to a new Prometheus registry.
func NewMetrics(res *resource.Resource, readers ...sdkmetric.Reader) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	prom, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutTargetInfo(), otelprom.WithoutScopeInfo(),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		return nil, fmt.Errorf("telemetry: Prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(prom)}
	if res != nil {
		opts = append(opts, sdkmetric.WithResource(res))
	}
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	meter := mp.Meter(Name)
	tokens, err := genaiconv.NewClientTokenUsage(meter, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	duration, err := genaiconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return &Metrics{provider: mp, registry: reg, tokens: tokens, duration: duration}, nil
}

// Registry holds the metrics for the server's /metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// ProviderName maps madspark's provider names to the GenAI conventions'
// gen_ai.provider.name.
func ProviderName(p string) string {
	switch p {
	case "gemini":
		return "gcp.gemini"
	case "":
		return "unknown"
	}
	return p
}

// Record records one request sent to a provider. It is safe for concurrent
// use; it is what middleware.MeterObserver is given.
func (m *Metrics) Record(ctx context.Context, a *llm.Attempt) {
	if m == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	provider := genaiconv.ProviderNameAttr(ProviderName(a.Provider))
	requested := a.RequestModel
	if requested == "" {
		requested = a.Model // the provider's default model
	}
	attrs := []attribute.KeyValue{m.duration.AttrRequestModel(requested)}
	if a.Err == nil {
		attrs = append(attrs, m.duration.AttrResponseModel(a.Model))
	}
	if a.Err == nil || a.Usage.InputTokens+a.Usage.OutputTokens > 0 {
		m.tokens.Record(ctx, int64(a.Usage.InputTokens), genaiconv.OperationNameChat, provider, genaiconv.TokenTypeInput, attrs...)
		m.tokens.Record(ctx, int64(a.Usage.OutputTokens), genaiconv.OperationNameChat, provider, genaiconv.TokenTypeOutput, attrs...)
	}
	if a.Err != nil {
		attrs = append(attrs, m.duration.AttrErrorType(genaiconv.ErrorTypeAttr(llm.ErrorType(a.Err))))
	}
	m.duration.Record(ctx, a.Duration.Seconds(), genaiconv.OperationNameChat, provider, attrs...)
}

// Shutdown exports what is left and stops the exporters.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	if err := m.provider.Shutdown(ctx); err != nil && !errors.Is(err, sdkmetric.ErrReaderShutdown) {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}
