package telemetry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/telemetry"
)

// receiver is an in-process OTLP/HTTP trace and metric receiver: it
// decodes each ExportTraceServiceRequest and ExportMetricsServiceRequest
// (protobuf) and keeps their spans and metrics.
type receiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []*metricpb.Metric
	headers []http.Header
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	var traces coltrace.ExportTraceServiceRequest
	var metrics colmetric.ExportMetricsServiceRequest
	var req, resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		req, resp = &traces, &coltrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		req, resp = &metrics, &colmetric.ExportMetricsServiceResponse{}
	default:
		http.Error(w, "unexpected path", http.StatusBadRequest)
		return
	}
	if err := proto.Unmarshal(body, req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.headers = append(rc.headers, r.Header.Clone())
	for _, rs := range traces.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	for _, rm := range metrics.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			rc.metrics = append(rc.metrics, sm.Metrics...)
		}
	}
	rc.mu.Unlock()
	b, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func TestDisabledWithoutEndpoint(t *testing.T) {
	tr, err := telemetry.Setup(t.Context(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	h := http.NotFoundHandler()
	if tr.Tracer() != nil || tr.CaptureContent() || tr.Shutdown(t.Context()) != nil {
		t.Error("tracing is on without an endpoint")
	}
	if got := tr.Handler(h); got == nil || telemetry.Enabled(func(string) string { return "" }) {
		t.Error("handler is wrapped without an endpoint")
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}
	if telemetry.Enabled(func(k string) string { return env[k] }) {
		t.Error("OTEL_SDK_DISABLED=true is not honoured")
	}
}

// TestRunTrace starts a spark run over the REST API, traced and exported
// to an in-process OTLP receiver: the run, worked by the queue's worker,
// is one trace with the HTTP request that queued it; each step's span is
// an invoke_agent span, a child of the run's, each LLM call's span a child
// of its agent's, with the GenAI attributes; the prompt is there only when
// content capture is on. The exporter's headers come from
// OTEL_EXPORTER_OTLP_HEADERS. The GenAI client metrics go to the same
// receiver and count the run's tokens and calls.
func TestRunTrace(t *testing.T) {
	rc := &receiver{}
	collector := httptest.NewServer(rc)
	defer collector.Close()
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-team=ideas",
		"OTEL_SERVICE_NAME":           "madspark-test",
		telemetry.CaptureContentVar:   "true",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	tr, err := telemetry.Setup(ctx, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if tr.Tracer() == nil || !tr.CaptureContent() {
		t.Fatal("tracing is off with an endpoint")
	}
	metrics, err := telemetry.SetupMetrics(ctx, func(k string) string { return env[k] })
	if err != nil || !telemetry.MetricsEnabled(func(k string) string { return env[k] }) {
		t.Fatal("metrics are off with an endpoint", err)
	}

	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hub := events.New(db, events.Options{PollInterval: 20 * time.Millisecond})
	defer hub.Close()
	client := llm.Chain(mock.New(spark.MockResponders()), middleware.Meter(middleware.DefaultPrices(), middleware.MeterObserver(metrics.Record)))
	eng := &engine.Engine{Store: db, Client: client, Events: hub, Tracer: tr.Tracer(), CaptureContent: tr.CaptureContent()}
	reg := pipeline.NewRegistry()
	def, err := spark.Definition()
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(def); err != nil {
		t.Fatal(err)
	}
	q, err := jobs.Open(ctx, jobs.Config{Mode: "mock", Provider: mock.Name, Model: mock.Model, Concurrency: 1,
		SQLite: db.WritePool(), Store: db, Registry: reg, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = q.Stop(sctx)
	}()
	h, err := api.New(api.Config{Registry: reg, Queue: q, Store: db, Events: hub, Engine: eng, RateLimit: -1,
		Logger: slog.New(slog.DiscardHandler), Info: api.Info{Version: "test", Mode: "mock", Provider: mock.Name, Model: mock.Model}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv, err := server.New(server.Config{Version: "test", Wrap: tr.Handler})
	if err != nil {
		t.Fatal(err)
	}
	h.Register(srv.Mux())
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	body := `{"pipeline":"spark","params":{"topic":"urban farming","num_candidates":3,"num_top_candidates":2}}`
	res, err := http.Post(ts.URL+"/api/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	err = json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %v", res.StatusCode, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var usage llm.Usage
	for {
		r, err := db.Run(ctx, started.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Final() {
			if r.Status != madspark.RunSucceeded {
				t.Fatalf("run %s: %s", r.Status, r.Error)
			}
			usage = r.Usage
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := metrics.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.headers) == 0 || rc.headers[0].Get("X-Team") != "ideas" {
		t.Errorf("exports: %d, headers %v", len(rc.headers), rc.headers)
	}
	byID := map[string]*tracepb.Span{}
	var post, run *tracepb.Span
	var steps, calls []*tracepb.Span
	for _, s := range rc.spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		switch {
		case s.Name == "POST /api/runs":
			post = s
		case s.Name == "run spark":
			run = s
		case strings.HasPrefix(s.Name, "invoke_agent "):
			steps = append(steps, s)
		case strings.HasPrefix(s.Name, "chat "):
			calls = append(calls, s)
		}
	}
	if post == nil || run == nil || len(steps) < 4 || len(calls) < 4 {
		names := []string{}
		for _, s := range rc.spans {
			names = append(names, s.Name)
		}
		t.Fatalf("spans: %v", names)
	}
	if post.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span kind %v", post.Kind)
	}
	// One trace: the request that queued the run, and the run's spans.
	if !bytes.Equal(run.TraceId, post.TraceId) || !bytes.Equal(run.ParentSpanId, post.SpanId) {
		t.Errorf("the run's span is not a child of the request that queued it")
	}
	for _, s := range steps {
		if !bytes.Equal(s.TraceId, run.TraceId) || !bytes.Equal(s.ParentSpanId, run.SpanId) {
			t.Errorf("step span %s is not a child of the run's", s.Name)
		}
	}
	for _, c := range calls {
		parent := byID[hex.EncodeToString(c.ParentSpanId)]
		if parent == nil || !strings.HasPrefix(parent.Name, "invoke_agent ") || !bytes.Equal(c.TraceId, run.TraceId) ||
			attr(parent, "gen_ai.agent.name").GetStringValue() != attr(c, "gen_ai.agent.name").GetStringValue() {
			t.Errorf("call span %s has no step parent in the run's trace", c.Name)
			continue
		}
		if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || c.Name != "chat "+mock.Model {
			t.Errorf("call span %q kind %v", c.Name, c.Kind)
		}
		for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": mock.Name,
			"gen_ai.request.model": mock.Model, "gen_ai.response.model": mock.Model} {
			if v := attr(c, k); v == nil || v.GetStringValue() != want {
				t.Errorf("%s: %s = %v, want %q", parent.Name, k, v, want)
			}
		}
		for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
			if v := attr(c, k); v == nil || v.GetIntValue() <= 0 {
				t.Errorf("%s: %s = %v", parent.Name, k, v)
			}
		}
		if v := attr(c, "gen_ai.request.temperature"); v == nil {
			t.Errorf("%s: no temperature", parent.Name)
		}
		if v := attr(c, "gen_ai.response.finish_reasons"); v == nil || len(v.GetArrayValue().GetValues()) != 1 {
			t.Errorf("%s: finish reasons %v", parent.Name, v)
		}
		if v := attr(c, "gen_ai.input.messages"); v == nil || !strings.Contains(v.GetStringValue(), `"role":"user"`) {
			t.Errorf("%s: input messages %v", parent.Name, v)
		}
	}
	// One trace per run: every span of the run is in the run's trace.
	traces := map[string]bool{}
	for _, s := range append(append([]*tracepb.Span{run}, steps...), calls...) {
		traces[hex.EncodeToString(s.TraceId)] = true
	}
	if len(traces) != 1 {
		t.Errorf("the run's spans are in %d traces", len(traces))
	}

	// The metrics count the run's tokens and calls.
	tokens := map[string]int64{}
	var durations uint64
	for _, m := range rc.metrics {
		switch m.Name {
		case "gen_ai.client.token.usage":
			for _, dp := range m.GetHistogram().GetDataPoints() {
				for _, kv := range dp.Attributes {
					if kv.Key == "gen_ai.token.type" {
						tokens[kv.Value.GetStringValue()] += int64(dp.GetSum())
					}
				}
			}
		case "gen_ai.client.operation.duration":
			for _, dp := range m.GetHistogram().GetDataPoints() {
				durations += dp.Count
			}
		}
	}
	if tokens["input"] != int64(usage.InputTokens) || tokens["output"] != int64(usage.OutputTokens) || durations != uint64(usage.LLMCalls) {
		t.Errorf("exported metrics: tokens %v, %d durations; the run: %+v", tokens, durations, usage)
	}
}
