package middleware

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/madspark/madspark/llm"
)

func meterCost(t *testing.T, mw llm.Middleware, resp *llm.Response) float64 {
	t.Helper()
	next := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) { return resp, nil })
	got, err := mw(next).Generate(context.Background(), request("p"))
	if err != nil {
		t.Fatal(err)
	}
	return got.Usage.CostUSD
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestMeterCost(t *testing.T) {
	mw := Meter(DefaultPrices())
	for _, tc := range []struct {
		provider, model string
		want            float64 // for 1M input and 2M output tokens
	}{
		{"openai", "gpt-4o-mini", 0.15 + 2*0.60},
		{"openai", "gpt-4o-mini-2024-07-18", 0.15 + 2*0.60},
		{"openai", "GPT-4o-2024-08-06", 2.50 + 2*10},
		{"openai", "gpt-4.1-mini", 0.40 + 2*1.60},
		{"anthropic", "claude-sonnet-4-5-20250929", 3 + 2*15},
		{"anthropic", "claude-opus-4-1-20250805", 15 + 2*75},
		{"gemini", "models/gemini-2.5-flash", 0.30 + 2*2.50},
		{"gemini", "gemini-2.5-flash-lite", 0.10 + 2*0.40},
		{"openai", "gpt-4oz", 0},       // not a dated gpt-4o
		{"openai", "unknown-model", 0}, // unknown
		{"mock", "gpt-4o", 0},          // mock is free
		{"ollama", "llama3.1:8b", 0},   // local is free
	} {
		resp := &llm.Response{Provider: tc.provider, Model: tc.model,
			Usage: llm.Usage{LLMCalls: 1, InputTokens: 1_000_000, OutputTokens: 2_000_000}}
		if got := meterCost(t, mw, resp); !near(got, tc.want) {
			t.Errorf("%s/%s: cost = %v, want %v", tc.provider, tc.model, got, tc.want)
		}
		if resp.Usage.CostUSD != 0 {
			t.Errorf("%s/%s: Meter modified the wrapped client's Response", tc.provider, tc.model)
		}
	}

	small := &llm.Response{Provider: "openai", Model: "gpt-5", Usage: llm.Usage{InputTokens: 1000, OutputTokens: 500}}
	if got := meterCost(t, mw, small); !near(got, (1000*1.25+500*10.0)/1e6) {
		t.Errorf("gpt-5 cost = %v", got)
	}
	cached := &llm.Response{Provider: "openai", Model: "gpt-4o", Cached: true, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 9}}
	if got := meterCost(t, mw, cached); got != 0 {
		t.Errorf("cached cost = %v, want 0", got)
	}
}

func TestMeterError(t *testing.T) {
	e := status(500)
	next := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) { return nil, e })
	if resp, err := Meter(DefaultPrices())(next).Generate(context.Background(), request("p")); resp != nil || err != e {
		t.Errorf("Generate = %v, %v; want nil, the error", resp, err)
	}
}

func TestMeterUnknownLoggedOnce(t *testing.T) {
	var logs logBuffer
	mw := Meter(DefaultPrices(), MeterLogger(newLogger(&logs)))
	next := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) {
		return &llm.Response{Provider: "openai", Model: "mystery-1", Usage: llm.Usage{InputTokens: 5}}, nil
	})
	c := mw(next)
	for range 3 {
		c.Generate(context.Background(), request("p"))
	}
	if n := strings.Count(logs.String(), "no price for model"); n != 1 {
		t.Errorf("logged %d times, want 1: %s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "model=mystery-1") || !strings.Contains(logs.String(), "level=DEBUG") {
		t.Errorf("log = %s", logs.String())
	}
}

func TestPriceTableLookup(t *testing.T) {
	pt := PriceTable{
		"x":        {InputPerMTok: 1},
		"openai/x": {InputPerMTok: 2},
		"x-big":    {InputPerMTok: 3},
		"Mixed":    {InputPerMTok: 4},
	}
	for _, tc := range []struct {
		provider, model string
		want            float64
		ok              bool
	}{
		{"openai", "x", 2, true},
		{"azure", "x", 1, true},
		{"", "x", 1, true},
		{"openai", "x-2025", 2, true},
		{"azure", "x-big-2025", 3, true},
		{"azure", "x@v2", 1, true},
		{"azure", "mixed", 4, true},
		{"azure", "xbig", 0, false},
		{"azure", "", 0, false},
	} {
		p, ok := pt.Lookup(tc.provider, tc.model)
		if ok != tc.ok || p.InputPerMTok != tc.want {
			t.Errorf("Lookup(%q, %q) = %v, %v; want %v, %v", tc.provider, tc.model, p.InputPerMTok, ok, tc.want, tc.ok)
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadPrices(t *testing.T) {
	path := writeFile(t, `{
		"gpt-4o": {"input_per_mtok": 1, "output_per_mtok": 2},
		"Acme/Custom-Model": {"input_per_mtok": 0.5, "output_per_mtok": 0.75}
	}`)
	pt, err := LoadPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := pt["gpt-4o"]; p.InputPerMTok != 1 || p.OutputPerMTok != 2 {
		t.Errorf("gpt-4o = %+v, want the file's price", p)
	}
	if p, ok := pt.Lookup("acme", "custom-model-v2"); !ok || p.OutputPerMTok != 0.75 {
		t.Errorf("custom model = %+v, %v", p, ok)
	}
	if _, ok := pt["gemini-2.5-pro"]; !ok {
		t.Error("defaults were not merged")
	}
	if len(pt) != len(DefaultPrices())+1 {
		t.Errorf("len = %d, want %d", len(pt), len(DefaultPrices())+1)
	}
	// ReadPrices gives the file's own, which apply on local servers too.
	if own, err := ReadPrices(path); err != nil || len(own) != 2 || own["acme/custom-model"].InputPerMTok != 0.5 {
		t.Errorf("ReadPrices = %v, %v", own, err)
	}
}

func TestLoadPricesRejects(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"syntax", `{"gpt-4o": {"input_per_mtok": 1,}}`, "invalid character"},
		{"not an object", `[1, 2]`, "cannot unmarshal array"},
		{"wrong type", `{"gpt-4o": {"input_per_mtok": "1"}}`, "cannot unmarshal string"},
		{"unknown field", `{"gpt-4o": {"input_per_mtoken": 1}}`, `unknown field "input_per_mtoken"`},
		{"negative", `{"gpt-4o": {"input_per_mtok": -1}}`, "negative price"},
		{"null entry", `{"gpt-4o": null}`, "got null"},
		{"null", `null`, "got null"},
		{"empty name", `{"": {}}`, "empty model name"},
		{"trailing", `{} {}`, "unexpected data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.content)
			_, err := LoadPrices(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v, want one naming %s and containing %q", err, path, tc.want)
			}
		})
	}
	if _, err := LoadPrices(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: err = %v", err)
	}
}

// attemptLog is an llm.AttemptObserver that keeps what it is told.
type attemptLog struct {
	sending  int
	attempts []*llm.Attempt
}

func (l *attemptLog) Sending(context.Context)                     { l.sending++ }
func (l *attemptLog) Attempted(_ context.Context, a *llm.Attempt) { l.attempts = append(l.attempts, a) }

func TestMeterPricesByServer(t *testing.T) {
	local := func(p string) bool { return p == "gateway" }
	mw := Meter(DefaultPrices(), MeterLocal(local), MeterLocalPrices(PriceTable{"house": {InputPerMTok: 1, OutputPerMTok: 2}}))
	for _, tc := range []struct {
		provider, model string
		cost            float64
		unpriced        int
	}{
		{"openai", "mystery-1", 0, 1}, // no price, not local: unknown
		{"openai", "gpt-4o-mini", 0.15 + 2*0.60, 0},
		{"gateway", "house", 1 + 2*2, 0}, // the user's price on a local server
		{"gateway", "gpt-4o-mini", 0, 0}, // a list price is the vendor's, not a local model's
		{"gateway", "llama", 0, 0},       // local, no price: free
		{"mock", "house", 0, 0},
	} {
		resp := &llm.Response{Provider: tc.provider, Model: tc.model, Usage: llm.Usage{LLMCalls: 1, InputTokens: 1_000_000, OutputTokens: 2_000_000}}
		next := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) { return resp, nil })
		got, err := mw(next).Generate(context.Background(), request("p"))
		if err != nil {
			t.Fatal(err)
		}
		if !near(got.Usage.CostUSD, tc.cost) || got.Usage.UnpricedCalls != tc.unpriced {
			t.Errorf("%s/%s: usage %+v, want $%v, %d unpriced", tc.provider, tc.model, got.Usage, tc.cost, tc.unpriced)
		}
	}
}

func TestMeterReportsEachAttempt(t *testing.T) {
	var seen []*llm.Attempt
	mw := Meter(DefaultPrices(), MeterObserver(func(_ context.Context, a *llm.Attempt) { seen = append(seen, a) }))
	var obs attemptLog
	ctx := llm.WithAttemptObserver(context.Background(), &obs)

	// A provider that reports what it sent.
	wire := llm.Wire{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "s + hint"}, {Role: llm.RoleUser, Content: "p"}}, ResponseFormat: []byte(`{"type":"json_schema"}`)}
	sent := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		llm.SendingWire(ctx, wire)
		return &llm.Response{Text: "ok", Provider: "openai", Model: "gpt-4o-mini", Usage: llm.Usage{LLMCalls: 1, InputTokens: 10, OutputTokens: 5}}, nil
	})
	if _, err := mw(sent).Generate(ctx, request("p")); err != nil {
		t.Fatal(err)
	}
	// An answer with an error status, a failure before sending, a reply
	// the provider counted tokens for but could not use.
	status := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) { return nil, status(503) })
	unsent := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) { return nil, errors.New("no route") })
	invalid := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		llm.SendingWire(ctx, llm.WireOf(req))
		return nil, &llm.Error{Provider: "openai", Message: "empty reply", Invalid: true, Usage: llm.Usage{InputTokens: 7, OutputTokens: 1}}
	})
	for _, c := range []llm.Client{status, unsent, invalid} {
		if _, err := mw(c).Generate(ctx, request("p")); err == nil {
			t.Fatal("a failure succeeded")
		}
	}
	if obs.sending != 4 || len(obs.attempts) != 3 || len(seen) != 3 {
		t.Fatalf("told %d sendings, %d attempts (%d to the process's observer); want 4, 3", obs.sending, len(obs.attempts), len(seen))
	}
	ok, failed, paid := obs.attempts[0], obs.attempts[1], obs.attempts[2]
	if string(ok.Wire.ResponseFormat) != `{"type":"json_schema"}` || ok.Wire.Messages[0].Content != "s + hint" || ok.Response.Text != "ok" ||
		ok.Usage.LLMCalls != 1 || !near(ok.Usage.CostUSD, (10*0.15+5*0.60)/1e6) || ok.Duration <= 0 || ok.Start.IsZero() {
		t.Errorf("attempt = %+v", ok)
	}
	if failed.Err == nil || failed.Usage.LLMCalls != 1 || failed.Usage.InputTokens != 0 || len(failed.Wire.Messages) != 2 || failed.Wire.Messages[1].Content != "p" {
		t.Errorf("failed attempt = %+v", failed)
	}
	if paid.Usage.InputTokens != 7 || paid.Usage.OutputTokens != 1 || paid.Usage.LLMCalls != 1 || llm.ErrorType(paid.Err) != llm.ErrorInvalidReply {
		t.Errorf("unusable reply's attempt = %+v", paid)
	}
}
