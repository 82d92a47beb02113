package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/pipeline/spark/sparktest"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// observed is an app against an in-process OpenAI-compatible server, with
// its spans in a tracetest recorder and its metrics in a manual reader.
type observed struct {
	*App
	srv    *openaitest.Server
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func openObserved(t *testing.T, respond func(*openaitest.ChatRequest) openaitest.Reply, vars map[string]string) *observed {
	t.Helper()
	srv := openaitest.NewServer(t, respond)
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_MODEL": "gpt-4o-mini",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	for k, v := range vars {
		env[k] = v
	}
	reader := sdkmetric.NewManualReader()
	a, err := Open(context.Background(), Config{Getenv: func(k string) string { return env[k] }, MetricReaders: []sdkmetric.Reader{reader}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a.Engine.Tracer = tp.Tracer("test")
	return &observed{App: a, srv: srv, spans: sr, reader: reader}
}

// firsts answers with sparktest.Reply, but for the first request for each
// schema in faults, which gets that reply instead.
func firsts(faults map[string]openaitest.Reply) func(*openaitest.ChatRequest) openaitest.Reply {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		schema := sparktest.Schema(req)
		mu.Lock()
		first := !seen[schema]
		seen[schema] = true
		mu.Unlock()
		if r, ok := faults[schema]; ok && first {
			return r
		}
		return sparktest.Reply(req)
	}
}

func sparkParams() spark.Params {
	p := spark.DefaultParams()
	p.Topic, p.NumCandidates, p.NumTopCandidates = "urban farming", 3, 2
	return p
}

// checkCounted checks that the steps view of run id counts exactly what the
// provider served between from and to.
func checkCounted(t *testing.T, a *App, id string, from, to openaitest.Count) *inspect.View {
	t.Helper()
	v, err := inspect.Load(context.Background(), a.Store, id)
	if err != nil {
		t.Fatal(err)
	}
	u := v.Usage
	if u.LLMCalls != to.Answered-from.Answered || u.InputTokens != to.PromptTokens-from.PromptTokens || u.OutputTokens != to.CompletionTokens-from.CompletionTokens {
		t.Errorf("run %s counts %d calls, %d + %d tokens; the provider served %d requests, %d + %d tokens",
			id, u.LLMCalls, u.InputTokens, u.OutputTokens, to.Answered-from.Answered, to.PromptTokens-from.PromptTokens, to.CompletionTokens-from.CompletionTokens)
	}
	var sum llm.Usage
	for _, s := range v.Steps {
		for _, c := range s.Calls {
			sum.Add(llm.Usage{LLMCalls: map[bool]int{true: 1}[c.Sent], InputTokens: c.InputTokens, OutputTokens: c.OutputTokens})
		}
	}
	if sum.LLMCalls != u.LLMCalls || sum.InputTokens != u.InputTokens || sum.OutputTokens != u.OutputTokens {
		t.Errorf("run %s: its calls sum to %+v, its steps to %+v", id, sum, u)
	}
	rec, err := a.Store.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if cost := rec.Usage.CostUSD - u.CostUSD; cost > 1e-12 || cost < -1e-12 {
		t.Errorf("run %s: record costs $%v, steps $%v", id, rec.Usage.CostUSD, u.CostUSD)
	}
	rec.Usage.CostUSD = u.CostUSD
	if rec.Usage != u {
		t.Errorf("run %s: record usage %+v, steps %+v", id, rec.Usage, u)
	}
	return v
}

func str(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.String()
		}
	}
	return ""
}

// TestRetriesAndReasksCountedOnceAndTraced: a spark run whose first
// request gets a 500, whose evaluation is first refused with a 429 and
// whose first improvement is unusable (asked again) records every request
// the provider answered, once, with its tokens; traces each as a chat span
// under the invoke_agent span of its agent, the failed ones with their
// error.type; and the GenAI metrics, read by the SDK's manual reader and on
// /metrics, count the same. The same run again is answered by the cache:
// no chat span, a cache_hit event on each agent's span.
func TestRetriesAndReasksCountedOnceAndTraced(t *testing.T) {
	o := openObserved(t, firsts(map[string]openaitest.Reply{
		"spark_ideas":        {Fault: &openaitest.Fault{Status: 500}},
		"spark_evaluations":  {Fault: &openaitest.Fault{Status: 429, RetryAfter: "0"}},
		"spark_improvements": {Content: "I would rather not answer in JSON.", PromptTokens: 30, CompletionTokens: 9},
	}), nil)
	ctx := context.Background()
	_, run, err := o.Spark(ctx, sparkParams(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	served := o.srv.Served()
	if served.Answered != 9 { // 6 steps, a 500, a 429, a re-ask
		t.Fatalf("the provider answered %d requests, want 9", served.Answered)
	}
	v := checkCounted(t, o.App, run.ID(), openaitest.Count{}, served)
	var failed []string
	for _, s := range v.Steps {
		for _, c := range s.Calls {
			if c.Error != "" {
				failed = append(failed, s.Key+": "+c.Error)
				if !c.Sent || c.InputTokens != 0 || c.CostUSD == nil || *c.CostUSD != 0 || len(c.Messages) == 0 {
					t.Errorf("failed attempt %+v", c)
				}
			}
		}
	}
	if len(failed) != 2 || !strings.Contains(failed[0], "generate: ") || !strings.Contains(failed[0], "500") ||
		!strings.Contains(failed[1], "evaluate: ") || !strings.Contains(failed[1], "429") {
		t.Errorf("failed attempts listed: %q", failed)
	}
	if imp := v.Step("improve"); len(imp.Calls) != 2 || imp.Calls[0].Response != "I would rather not answer in JSON." ||
		imp.Calls[0].InputTokens != 30 || imp.Calls[1].Attempt != 2 {
		t.Errorf("improve's calls = %+v", imp.Calls)
	}

	// Traces: one invoke_agent span per step, one chat span per request
	// answered, under its agent's span.
	spans := o.spans.Ended()
	agents := map[[8]byte]sdktrace.ReadOnlySpan{}
	var chats []sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch {
		case strings.HasPrefix(s.Name(), "invoke_agent "):
			agents[s.SpanContext().SpanID()] = s
			if str(s, "gen_ai.operation.name") != "invoke_agent" || "invoke_agent "+str(s, "gen_ai.agent.name") != s.Name() {
				t.Errorf("agent span %s: %v", s.Name(), s.Attributes())
			}
		case strings.HasPrefix(s.Name(), "chat "):
			chats = append(chats, s)
		}
	}
	if len(agents) != 6 || len(chats) != served.Answered {
		t.Fatalf("%d agent spans, %d chat spans for %d requests", len(agents), len(chats), served.Answered)
	}
	errTypes := map[string]int{}
	for _, c := range chats {
		parent, ok := agents[c.Parent().SpanID()]
		if !ok || str(parent, "gen_ai.agent.name") != str(c, "gen_ai.agent.name") || c.Name() != "chat gpt-4o-mini" {
			t.Errorf("chat span %s is not under its agent's span", c.Name())
		}
		if e := str(c, "error.type"); e != "" {
			errTypes[e]++
		}
	}
	if len(errTypes) != 2 || errTypes["500"] != 1 || errTypes["rate_limited"] != 1 {
		t.Errorf("error types of the chat spans = %v", errTypes)
	}

	// Metrics: the SDK's reader and /metrics count what was served.
	tokens, durations, errs := readGenAI(t, o.reader)
	if tokens["input"] != int64(served.PromptTokens) || tokens["output"] != int64(served.CompletionTokens) ||
		durations != uint64(served.Answered) || errs["500"] != 1 || errs["rate_limited"] != 1 {
		t.Errorf("metrics: tokens %v, %d durations, errors %v; served %+v", tokens, durations, errs, served)
	}
	prom := promSums(t, o.App)
	if prom["gen_ai_client_token_usage/input"] != float64(served.PromptTokens) || prom["gen_ai_client_token_usage/output"] != float64(served.CompletionTokens) ||
		prom["gen_ai_client_operation_duration_seconds/count"] != float64(served.Answered) {
		t.Errorf("/metrics: %v; served %+v", prom, served)
	}

	// The same run again: the cache answers what was kept; only the
	// improvement, whose first reply was unusable, is asked again.
	before := len(spans)
	_, again, err := o.Spark(ctx, sparkParams(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := o.srv.Served()
	v2 := checkCounted(t, o.App, again.ID(), served, now)
	if v2.Usage.CachedCalls != 5 || now.Answered-served.Answered != 1 {
		t.Errorf("second run: %+v, %d requests", v2.Usage, now.Answered-served.Answered)
	}
	hits, chats2 := 0, 0
	for _, s := range o.spans.Ended()[before:] {
		if strings.HasPrefix(s.Name(), "chat ") {
			chats2++
		}
		for _, e := range s.Events() {
			if e.Name == "cache_hit" && strings.HasPrefix(s.Name(), "invoke_agent ") {
				hits++
			}
		}
	}
	if hits != 5 || chats2 != 1 {
		t.Errorf("second run: %d cache_hit events, %d chat spans; want 5 and 1", hits, chats2)
	}
}

// readGenAI sums the GenAI client metrics of r: tokens by type, the number
// of durations recorded, and of those with each error.type.
func readGenAI(t *testing.T, r *sdkmetric.ManualReader) (map[string]int64, uint64, map[string]uint64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	tokens, errs := map[string]int64{}, map[string]uint64{}
	var durations uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "gen_ai.client.token.usage":
				if m.Unit != "{token}" {
					t.Errorf("token usage unit %q", m.Unit)
				}
				for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					typ, _ := dp.Attributes.Value("gen_ai.token.type")
					op, _ := dp.Attributes.Value("gen_ai.operation.name")
					prov, _ := dp.Attributes.Value("gen_ai.provider.name")
					model, _ := dp.Attributes.Value("gen_ai.request.model")
					if op.AsString() != "chat" || prov.AsString() != "openai" || model.AsString() != "gpt-4o-mini" {
						t.Errorf("token usage attributes %v", dp.Attributes.ToSlice())
					}
					tokens[typ.AsString()] += dp.Sum
				}
			case "gen_ai.client.operation.duration":
				if m.Unit != "s" {
					t.Errorf("duration unit %q", m.Unit)
				}
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					durations += dp.Count
					if e, ok := dp.Attributes.Value("error.type"); ok {
						errs[e.AsString()] += dp.Count
					}
				}
			}
		}
	}
	return tokens, durations, errs
}

// promSums reads the GenAI metrics from the registry /metrics serves:
// the token sums by type and the count of durations.
func promSums(t *testing.T, a *App) map[string]float64 {
	t.Helper()
	mfs, err := a.Metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			switch mf.GetName() {
			case "gen_ai_client_token_usage":
				out[mf.GetName()+"/"+label(m, "gen_ai_token_type")] += h.GetSampleSum()
			case "gen_ai_client_operation_duration_seconds":
				out[mf.GetName()+"/count"] += float64(h.GetSampleCount())
			}
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestEvalTwiceCountsEachRequestOnce: an eval counts every request of its
// pipeline runs, baselines and judges once, and traces each once; the same
// eval again reuses the runs and the cache, says so, and counts (and
// traces) no request the provider did not serve.
func TestEvalTwiceCountsEachRequestOnce(t *testing.T) {
	o := openObserved(t, sparktest.EvalReply, nil)
	topics := filepath.Join(t.TempDir(), "topics.txt")
	if err := os.WriteFile(topics, []byte("urban farming\nquiet streets\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := EvalRequest{Pipeline: "spark", Topics: topics, Concurrency: 2, Timeout: time.Minute}
	first, err := o.Eval(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	served := o.srv.Served()
	if want := 2 * (6 + 1 + 2); served.Answered != want {
		t.Fatalf("the provider answered %d requests, want %d", served.Answered, want)
	}
	checkCounted(t, o.App, first.RunID, openaitest.Count{}, served)
	if first.Usage.Total.LLMCalls != served.Answered || first.ReusedRuns != 0 {
		t.Errorf("first report: usage %+v, %d reused", first.Usage.Total, first.ReusedRuns)
	}
	chats := 0
	for _, s := range o.spans.Ended() {
		if strings.HasPrefix(s.Name(), "chat ") {
			chats++
		}
	}
	if chats != served.Answered {
		t.Errorf("%d chat spans for %d requests", chats, served.Answered)
	}

	second, err := o.Eval(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	now := o.srv.Served()
	checkCounted(t, o.App, second.RunID, served, now)
	if now != served || second.ReusedRuns != 2 || second.Usage.Total.LLMCalls != 0 || second.Usage.Pipeline.LLMCalls != 0 {
		t.Errorf("second eval: served %+v → %+v, %d reused, usage %+v", served, now, second.ReusedRuns, second.Usage)
	}
	var text bytes.Buffer
	if err := second.Write(&text, "text"); err != nil || !strings.Contains(text.String(), "2 pipeline runs reused") {
		t.Errorf("the report does not say the runs were reused: %v\n%s", err, text.String())
	}
	for _, s := range o.spans.Ended() {
		if strings.HasPrefix(s.Name(), "chat ") {
			chats--
		}
	}
	if chats != 0 {
		t.Errorf("the second eval made %d chat spans with no request", -chats)
	}
}

// TestMessagesRecordedAsSent: in each structured-output mode, every call
// of a run records the messages exactly as the server received them (the
// schema's description in the system prompt included), and the
// response_format sent.
func TestMessagesRecordedAsSent(t *testing.T) {
	for _, mode := range []string{"native", "prompt", "both"} {
		t.Run(mode, func(t *testing.T) {
			o := openObserved(t, sparktest.Reply, map[string]string{"MADSPARK_STRUCTURED_OUTPUT": mode})
			_, run, err := o.Spark(context.Background(), sparkParams(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			v := checkCounted(t, o.App, run.ID(), openaitest.Count{}, o.srv.Served())
			type sent struct{ messages, format string }
			received := map[sent]int{}
			for _, q := range o.srv.Requests() {
				var body struct {
					ResponseFormat json.RawMessage `json:"response_format"`
				}
				if err := json.Unmarshal(q.Body, &body); err != nil {
					t.Fatal(err)
				}
				m, _ := json.Marshal(q.Messages)
				received[sent{string(m), compact(body.ResponseFormat)}]++
			}
			n := 0
			for _, s := range v.Steps {
				for _, c := range s.Calls {
					n++
					m, _ := json.Marshal(c.Messages)
					k := sent{string(m), compact(c.ResponseFormat)}
					if received[k] == 0 {
						t.Errorf("step %s: recorded messages %s with format %s were not received", s.Key, k.messages, k.format)
					}
					received[k]--
					hint := strings.Contains(c.Messages[0].Content, "Reply with only a JSON value of this shape")
					if c.Messages[0].Role != "system" || hint != (mode != "native") || (len(c.ResponseFormat) > 0) != (mode != "prompt") {
						t.Errorf("step %s (%s): system %q, response_format %s", s.Key, mode, c.Messages[0].Content, c.ResponseFormat)
					}
				}
			}
			if n != len(o.srv.Requests()) {
				t.Errorf("%d calls recorded, %d requests received", n, len(o.srv.Requests()))
			}
		})
	}
}

func compact(b json.RawMessage) string {
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// TestPricesApplyOnAnyServer: a price in MADSPARK_PRICES applies to its
// model on a server at a local address; without one, a local server's
// model costs nothing.
func TestPricesApplyOnAnyServer(t *testing.T) {
	prices := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(prices, []byte(`{"house-model": {"input_per_mtok": 1000, "output_per_mtok": 2000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prices string
		want   float64
	}{{prices, 6*100*1000/1e6 + 6*50*2000/1e6}, {"", 0}} {
		o := openObserved(t, sparktest.Reply, map[string]string{"MADSPARK_MODEL": "house-model", "MADSPARK_PRICES": tc.prices})
		rep, _, err := o.Spark(context.Background(), sparkParams(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Usage.Priced() || rep.Usage.CostUSD < tc.want-1e-9 || rep.Usage.CostUSD > tc.want+1e-9 {
			t.Errorf("prices %q: usage %+v, want $%v", tc.prices, rep.Usage, tc.want)
		}
	}
}
