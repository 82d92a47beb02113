package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/madspark/madspark/llm"
)

// metrics are the server's Prometheus metrics.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	calls    *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	streams  prometheus.Gauge
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "madspark_http_requests_total", Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "madspark_http_request_duration_seconds", Help: "HTTP request duration by route.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10)}, []string{"route"}),
		calls:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "madspark_llm_calls_total", Help: "LLM calls made for API requests, by model and kind (llm or cached)."}, []string{"model", "kind"}),
		tokens:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "madspark_tokens_total", Help: "Tokens used for API requests, by model and direction."}, []string{"model", "direction"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "madspark_streams_in_flight", Help: "Streaming responses in progress."}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.calls, m.tokens, m.streams} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) request(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) usage(model string, u llm.Usage) {
	m.calls.WithLabelValues(model, "llm").Add(float64(u.LLMCalls))
	m.calls.WithLabelValues(model, "cached").Add(float64(u.CachedCalls))
	m.tokens.WithLabelValues(model, "input").Add(float64(u.InputTokens))
	m.tokens.WithLabelValues(model, "output").Add(float64(u.OutputTokens))
}

// RepairMetric registers madspark_repairs_total{pipeline,agent,rule} on reg
// and returns the function that counts a repair, for engine.Engine.OnRepair.
func RepairMetric(reg *prometheus.Registry) (func(pipeline string, r llm.Repair), error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "madspark_repairs_total",
		Help: "Repairs made to usable model replies that broke a soft rule, by pipeline, agent and rule."},
		[]string{"pipeline", "agent", "rule"})
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return func(pipeline string, r llm.Repair) { c.WithLabelValues(pipeline, r.Agent, r.Rule).Inc() }, nil
}
