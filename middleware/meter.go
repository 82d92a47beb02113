package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/madspark/madspark/llm"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	// InputPerMTok is the price of one million input (prompt) tokens.
	InputPerMTok float64 `json:"input_per_mtok"`
	// OutputPerMTok is the price of one million output (reply) tokens.
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// Cost returns the price of inputTokens input and outputTokens output tokens
// in US dollars.
func (p Price) Cost(inputTokens, outputTokens int) float64 {
	return (float64(inputTokens)*p.InputPerMTok + float64(outputTokens)*p.OutputPerMTok) / 1e6
}

// PriceTable maps a model name, such as "gpt-4o-mini", or a provider and
// model name, such as "openai/gpt-4o-mini", to the model's Price. Keys are
// lower case.
type PriceTable map[string]Price

// freeProviders are the providers that serve models locally by default:
// their models cost nothing unless the price table says otherwise.
var freeProviders = map[string]bool{"mock": true, "ollama": true}

// DefaultPrices returns a new table of the list prices of common models.
//
// The prices are standard list prices in US dollars per million tokens as the
// providers publish them, for prompts within the base context tier and
// without batch, cache or priority discounts. They go out of date; extend or
// override them with LoadPrices.
func DefaultPrices() PriceTable {
	return PriceTable{
		// OpenAI.
		"gpt-4o":       {InputPerMTok: 2.50, OutputPerMTok: 10.00},
		"gpt-4o-mini":  {InputPerMTok: 0.15, OutputPerMTok: 0.60},
		"gpt-4.1":      {InputPerMTok: 2.00, OutputPerMTok: 8.00},
		"gpt-4.1-mini": {InputPerMTok: 0.40, OutputPerMTok: 1.60},
		"gpt-4.1-nano": {InputPerMTok: 0.10, OutputPerMTok: 0.40},
		"gpt-5":        {InputPerMTok: 1.25, OutputPerMTok: 10.00},
		"gpt-5-mini":   {InputPerMTok: 0.25, OutputPerMTok: 2.00},
		"gpt-5-nano":   {InputPerMTok: 0.05, OutputPerMTok: 0.40},
		"o3":           {InputPerMTok: 2.00, OutputPerMTok: 8.00},
		"o4-mini":      {InputPerMTok: 1.10, OutputPerMTok: 4.40},
		// Google Gemini (gemini-2.5-pro: prompts up to 200k tokens).
		"gemini-2.0-flash":      {InputPerMTok: 0.10, OutputPerMTok: 0.40},
		"gemini-2.5-flash":      {InputPerMTok: 0.30, OutputPerMTok: 2.50},
		"gemini-2.5-flash-lite": {InputPerMTok: 0.10, OutputPerMTok: 0.40},
		"gemini-2.5-pro":        {InputPerMTok: 1.25, OutputPerMTok: 10.00},
		// Anthropic.
		"claude-3-5-haiku":  {InputPerMTok: 0.80, OutputPerMTok: 4.00},
		"claude-3-7-sonnet": {InputPerMTok: 3.00, OutputPerMTok: 15.00},
		"claude-sonnet-4":   {InputPerMTok: 3.00, OutputPerMTok: 15.00},
		"claude-sonnet-4-5": {InputPerMTok: 3.00, OutputPerMTok: 15.00},
		"claude-haiku-4-5":  {InputPerMTok: 1.00, OutputPerMTok: 5.00},
		"claude-opus-4":     {InputPerMTok: 15.00, OutputPerMTok: 75.00},
		"claude-opus-4-1":   {InputPerMTok: 15.00, OutputPerMTok: 75.00},
	}
}

// LoadPrices reads a price table from the JSON file at path (ReadPrices)
// and returns it merged over DefaultPrices: an entry in the file replaces
// the default for the same model.
func LoadPrices(path string) (PriceTable, error) {
	file, err := ReadPrices(path)
	if err != nil {
		return nil, err
	}
	t := DefaultPrices()
	maps.Copy(t, file)
	return t, nil
}

// ReadPrices reads the price table of the JSON file at path. The file is
// one object mapping model names to prices:
//
//	{"gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6},
//	 "openai/ft:gpt-4o-mini:acme": {"input_per_mtok": 0.3, "output_per_mtok": 1.2}}
//
// Model names are matched case-insensitively. Unknown fields, negative
// prices, empty names and trailing data are errors.
func ReadPrices(path string) (PriceTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load prices: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var file map[string]*Price
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("load prices %s: want {\"model\": {\"input_per_mtok\": N, \"output_per_mtok\": N}, ...}: %w", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("load prices %s: unexpected data after the price object", path)
	}
	if file == nil {
		return nil, fmt.Errorf("load prices %s: want a JSON object, got null", path)
	}
	t := PriceTable{}
	for model, p := range file {
		switch {
		case strings.TrimSpace(model) == "":
			return nil, fmt.Errorf("load prices %s: empty model name", path)
		case p == nil:
			return nil, fmt.Errorf("load prices %s: model %q: want a price object, got null", path, model)
		case p.InputPerMTok < 0 || p.OutputPerMTok < 0:
			return nil, fmt.Errorf("load prices %s: model %q: negative price", path, model)
		}
		t[strings.ToLower(model)] = *p
	}
	return t, nil
}

// Lookup returns the price of model as served by provider, and whether the
// table knows it. It tries, in order, the keys "provider/model" and "model",
// then the longest key that is a prefix of either followed by '-', '@' or
// ':', so that a dated or tagged name such as "gpt-4o-mini-2024-07-18" is
// priced as "gpt-4o-mini". Matching ignores case and a leading "models/".
func (t PriceTable) Lookup(provider, model string) (Price, bool) {
	model = strings.TrimPrefix(strings.ToLower(model), "models/")
	provider = strings.ToLower(provider)
	if model == "" {
		return Price{}, false
	}
	names := []string{model}
	if provider != "" {
		names = []string{provider + "/" + model, model}
	}
	for _, name := range names {
		if p, ok := t[name]; ok {
			return p, true
		}
	}
	for _, name := range names {
		best, bestLen := Price{}, 0
		for key, p := range t {
			key = strings.ToLower(key)
			if key == name {
				return p, true
			}
			if len(key) > bestLen && len(key) < len(name) && strings.HasPrefix(name, key) &&
				strings.ContainsRune("-@:", rune(name[len(key)])) {
				best, bestLen = p, len(key)
			}
		}
		if bestLen > 0 {
			return best, true
		}
	}
	return Price{}, false
}

// Meter returns a Middleware that meters each request sent to the
// provider: it sits innermost, next to the provider, so that it sees every
// attempt of a retried call. For each request it
//
//   - tells the context's attempt observers (llm.WithAttemptObserver) that
//     a request is about to be sent (Sending) and then what it was and how
//     it went (Attempted): the messages as the provider sent them
//     (llm.SendingWire; the request's own when the provider reports none),
//     the reply or the error, the tokens and their price, the duration;
//   - prices the tokens: Usage.CostUSD from the reply's Provider, Model,
//     InputTokens and OutputTokens (see PriceTable.Lookup). On a server
//     that is not local, a model prices lacks is unpriced
//     (Usage.UnpricedCalls), never a silent 0, and the first such reply
//     for each provider and model is logged at debug level. On a local
//     server (MeterLocal; by default the "mock" and "ollama" providers),
//     such as a proxy to a paid API, the prices of MeterLocalPrices apply
//     (the user's own, MADSPARK_PRICES), and any other model costs 0: a
//     list price is for its vendor's API, not for a local model that
//     goes by the same name. Mock replies cost 0.
//
// A failure before anything was sent (the provider reported no wire, and
// no HTTP status shows that a server answered) is passed on untold. A failed attempt's usage is the
// tokens its *llm.Error reports, usually none.
//
// Meter does not modify the wrapped Client's Response; it returns a copy.
func Meter(prices PriceTable, opts ...MeterOption) llm.Middleware {
	o := meterOptions{local: func(p string) bool { return freeProviders[strings.ToLower(p)] }}
	for _, opt := range opts {
		opt(&o)
	}
	log := logger(o.logger)
	return func(next llm.Client) llm.Client {
		m := &meter{prices: prices, opts: o, log: log, next: next}
		return m
	}
}

type meter struct {
	prices  PriceTable
	opts    meterOptions
	log     *slog.Logger
	next    llm.Client
	unknown sync.Map // "provider/model" → struct{}: logged once
}

func (m *meter) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ctx = llm.WithWireSlot(ctx)
	llm.ObserveSending(ctx)
	start := time.Now()
	resp, err := m.next.Generate(ctx, req)
	d := time.Since(start)
	if err == nil && resp.Cached {
		out := *resp
		out.Usage.CostUSD = 0
		return &out, nil
	}
	wire, sent := llm.Sent(ctx)
	if !sent {
		var e *llm.Error
		if err != nil && (!errors.As(err, &e) || e.Status == 0) {
			return nil, err
		}
		wire = llm.WireOf(req)
	}
	a := &llm.Attempt{Agent: req.Agent, Provider: req.Provider, Model: req.Model, RequestModel: req.Model,
		Wire: wire, Err: err, Start: start, Duration: d}
	var out *llm.Response
	if err == nil {
		c := *resp
		out = &c
		a.Response, a.Usage = out, out.Usage
		if out.Provider != "" {
			a.Provider = out.Provider
		}
		if out.Model != "" {
			a.Model = out.Model
		}
	} else {
		var e *llm.Error
		if errors.As(err, &e) {
			a.Usage = e.Usage
			if e.Provider != "" && a.Provider == "" {
				a.Provider = e.Provider
			}
		}
	}
	a.Usage.LLMCalls, a.Usage.CachedCalls, a.Usage.CachedInputTokens, a.Usage.CachedOutputTokens = 1, 0, 0, 0
	m.price(req, a)
	if out != nil {
		out.Usage = a.Usage
	}
	llm.ObserveAttempt(ctx, a)
	if m.opts.observer != nil {
		m.opts.observer(ctx, a)
	}
	return out, err
}

// price sets a's cost.
func (m *meter) price(req *llm.Request, a *llm.Attempt) {
	u := &a.Usage
	u.CostUSD, u.UnpricedCalls = 0, 0
	if strings.EqualFold(a.Provider, "mock") || u.InputTokens+u.OutputTokens == 0 {
		return
	}
	prices := m.prices
	local := m.opts.local(a.Provider)
	if local {
		prices = m.opts.localPrices
	}
	if p, ok := prices.Lookup(a.Provider, a.Model); ok {
		u.CostUSD = p.Cost(u.InputTokens, u.OutputTokens)
		return
	}
	if local {
		return
	}
	u.UnpricedCalls = 1
	if _, seen := m.unknown.LoadOrStore(a.Provider+"/"+a.Model, struct{}{}); !seen {
		m.log.Debug("no price for model, its cost is unknown (add it to MADSPARK_PRICES)",
			"agent", req.Agent, "provider", a.Provider, "model", a.Model)
	}
}

// MeterOption configures Meter.
type MeterOption func(*meterOptions)

type meterOptions struct {
	logger      *slog.Logger
	local       func(provider string) bool
	localPrices PriceTable
	observer    func(ctx context.Context, a *llm.Attempt)
}

// MeterLogger makes Meter log to l. Without it Meter logs nothing.
func MeterLogger(l *slog.Logger) MeterOption {
	return func(o *meterOptions) { o.logger = l }
}

// MeterLocal tells Meter which providers serve models on this machine or
// network, whose models cost nothing unless the price table says
// otherwise.
func MeterLocal(local func(provider string) bool) MeterOption {
	return func(o *meterOptions) { o.local = local }
}

// MeterLocalPrices are the prices Meter applies on local servers: the
// user's own (ReadPrices), for a local proxy to a paid API. Without it,
// every model of a local server costs 0.
func MeterLocalPrices(prices PriceTable) MeterOption {
	return func(o *meterOptions) { o.localPrices = prices }
}

// MeterObserver makes Meter tell f of every attempt, whatever the
// context's observers: the process's metrics. f must be safe for
// concurrent use.
func MeterObserver(f func(ctx context.Context, a *llm.Attempt)) MeterOption {
	return func(o *meterOptions) { o.observer = f }
}
