// Package app composes madspark for one command: the store, the response
// cache's tiers, the provider and its client stack, telemetry, run events,
// the engine, the pipeline registry, the job queue and the server. It also
// holds what a command does with them beyond parsing flags and printing:
// running a pipeline with its files, resuming, batches, evals and serving.
//
// Commands (cmd/madspark) parse flags, call one function of this package
// and render what it returns.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/cache/redis"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider"
	"github.com/madspark/madspark/provider/llamaserver"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/telemetry"
)

// Version is the version of madspark, reported by the server's /health.
const Version = "0.1.0"

// InputError is bad input from the user, found before any LLM call: a
// command exits 2 with it.
type InputError struct{ Err error }

func (e InputError) Error() string { return e.Err.Error() }
func (e InputError) Unwrap() error { return e.Err }

// Inputf is an InputError with a formatted message.
func Inputf(format string, a ...any) error { return InputError{fmt.Errorf(format, a...)} }

// Config says how to compose the system.
type Config struct {
	// Getenv reads the settings (the environment, then .env).
	Getenv func(string) string
	Logger *slog.Logger
	// Notices receives one-line notices for people, such as mock mode
	// or where files were written (a command's standard error).
	Notices io.Writer
	// Command names this process in the leases of its runs ("madspark
	// resume").
	Command string
	// NoCache leaves the response cache aside.
	NoCache bool
	// Progress, if set, is called as each run starts, with what tells
	// the run's usage so far; it returns the sink of the run's events and
	// the function that ends the display.
	Progress func(usage func() llm.Usage) (sink func(madspark.Event), stop func())
	// ModelPath and HFRepo start llama-server with a local GGUF model (or
	// one it fetches) and point the OpenAI-compatible provider at it;
	// else MADSPARK_MODEL_PATH and MADSPARK_HF_REPO do.
	ModelPath, HFRepo string
	// MetricReaders read the GenAI client metrics too, beside /metrics
	// and OTLP (a test's sdkmetric.ManualReader).
	MetricReaders []sdkmetric.Reader
}

// App is the composed system. Its fields are read-only once Open returns.
type App struct {
	cfg    Config
	Store  madspark.Store
	Cache  madspark.CacheStore
	Info   provider.Info
	Events *events.Hub
	Engine *engine.Engine
	// Tracing exports traces when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	Tracing *telemetry.Tracing
	// Metrics are the GenAI client metrics of every request sent to a
	// provider: served at /metrics, and exported over OTLP when
	// OTEL_EXPORTER_OTLP_ENDPOINT is set.
	Metrics *telemetry.Metrics
	// limiter bounds the calls in flight to each provider, and admits the
	// server's requests before they start.
	limiter *middleware.Limiter
	// breaker is the provider's circuit breaker; the server asks it before
	// it starts answering (App.Admit).
	breaker *middleware.CircuitBreaker
	// breakerWatch says whether the circuit breaker holds the provider's
	// calls back, for the API's provider status.
	breakerWatch *middleware.BreakerWatch
	stop         func()
}

// Close stops what Open started and closes the store.
func (a *App) Close() error {
	a.Events.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.Tracing.Shutdown(ctx) // spans that cannot be sent are dropped, never a failed command
	_ = a.Metrics.Shutdown(ctx)
	if c, ok := a.Cache.(io.Closer); ok && a.Cache != madspark.CacheStore(a.Store) {
		c.Close()
	}
	err := a.Store.Close()
	a.stop()
	return err
}

// Logger is the app's logger.
func (a *App) Logger() *slog.Logger { return a.cfg.Logger }

func (a *App) getenv(k string) string { return a.cfg.Getenv(k) }

func (a *App) notice(format string, args ...any) {
	fmt.Fprintf(a.cfg.Notices, "madspark: "+format+"\n", args...)
}

// OpenStore opens the run database: PostgreSQL when DATABASE_URL is set,
// else the SQLite file $MADSPARK_DB or the default path under the user's
// data directory.
func OpenStore(ctx context.Context, getenv func(string) string) (madspark.Store, error) {
	if url := getenv("DATABASE_URL"); url != "" {
		db, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("open database (DATABASE_URL): %w", err)
		}
		return db, nil
	}
	path := getenv("MADSPARK_DB")
	if path == "" {
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return nil, fmt.Errorf("locate database (set MADSPARK_DB): %w", err)
		}
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return db, nil
}

// Open chooses the provider from the settings and composes the client
// stack, outermost first: cache → concurrency limit → retry → circuit
// breaker → timeout → meter → provider (see package middleware for why in
// this order). Settings that are wrong are an InputError.
func Open(ctx context.Context, cfg Config) (a *App, err error) {
	if cfg.Notices == nil {
		cfg.Notices = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	stop, err := startLlamaServer(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	settings := provider.FromEnv(cfg.Getenv)
	settings.OnStructuredFallback = func(name, reason string) {
		cfg.Logger.Warn("the server refused response_format: schemas now go in the prompt", "provider", name, "reason", reason)
	}
	responders := MockResponders()
	def, info, err := provider.Open(ctx, settings, responders)
	if err != nil {
		return nil, InputError{err}
	}
	// Requests that name another provider (a debate's --proposer-models)
	// are routed to it; the stack below wraps them all.
	base := provider.NewRouter(def, info.Name, func(ctx context.Context, name string) (llm.Client, error) {
		if info.Mock {
			return def, nil
		}
		return provider.OpenNamed(ctx, settings, name, responders)
	})
	// The user's prices apply on any server, the list prices on the
	// vendors' own (see middleware.Meter).
	prices, own := middleware.DefaultPrices(), middleware.PriceTable{}
	if path := cfg.Getenv("MADSPARK_PRICES"); path != "" {
		if own, err = middleware.ReadPrices(path); err != nil {
			return nil, InputError{err}
		}
		maps.Copy(prices, own)
	}
	if _, err := Concurrency(cfg.Getenv, info.Name, 0, ""); err != nil {
		return nil, err
	}
	db, err := OpenStore(ctx, cfg.Getenv)
	if err != nil {
		return nil, err
	}
	// The response cache's durable tier: Redis when REDIS_URL is set (shared
	// by every process; down means no cache, never a failed run), else the
	// database.
	var cache madspark.CacheStore = db
	if url := cfg.Getenv("REDIS_URL"); url != "" {
		rc, err := redis.Open(ctx, url, 0, cfg.Logger)
		if err != nil {
			db.Close()
			return nil, InputError{fmt.Errorf("REDIS_URL: %w", err)}
		}
		cache = rc
	}
	// One limit on the calls in flight per provider, whichever path makes
	// them: CLI runs, queue workers, the API and /v1 alike.
	limiter := middleware.NewLimiter(middleware.LimitConfig{DefaultProvider: info.Name, Limit: func(p string) int {
		n, _ := Concurrency(cfg.Getenv, p, 0, "")
		return n
	}})
	tracing, err := telemetry.Setup(ctx, cfg.Getenv)
	if err != nil {
		db.Close()
		return nil, InputError{err}
	}
	metrics, err := telemetry.SetupMetrics(ctx, cfg.Getenv, cfg.MetricReaders...)
	if err != nil {
		db.Close()
		return nil, InputError{err}
	}
	cooldown, err := breakerCooldown(cfg.Getenv)
	if err != nil {
		db.Close()
		return nil, err
	}
	// One circuit for every provider; the server asks it before it
	// starts answering (App.Admit), the API shows its watch.
	breakerWatch := &middleware.BreakerWatch{}
	breaker := middleware.NewBreaker(middleware.BreakerConfig{Logger: cfg.Logger, Cooldown: cooldown, Watch: breakerWatch})
	var mws []llm.Middleware
	if !cfg.NoCache {
		mws = append(mws, middleware.Cache(middleware.CacheConfig{Provider: info.Name, DefaultModel: info.Model, Store: cache, Logger: cfg.Logger}))
	}
	mws = append(mws,
		limiter.Middleware(),
		middleware.Retry(middleware.RetryConfig{Logger: cfg.Logger}),
		breaker.Middleware(),
		middleware.Timeout(0),
		// Innermost: every request sent is priced, recorded and measured.
		middleware.Meter(prices, middleware.MeterLogger(cfg.Logger), middleware.MeterLocal(settings.Local), middleware.MeterLocalPrices(own),
			middleware.MeterObserver(metrics.Record)),
	)
	// Every run's events are stored, so that anyone can follow it.
	hub := events.New(db, events.Options{Logger: cfg.Logger})
	return &App{
		cfg:     cfg,
		Store:   db,
		Cache:   cache,
		Info:    info,
		Events:  hub,
		Tracing: tracing,
		Metrics: metrics,
		limiter: limiter,
		breaker: breaker, breakerWatch: breakerWatch,
		stop: stop,
		Engine: &engine.Engine{Store: db, Client: llm.Chain(base, mws...), Logger: cfg.Logger, Events: hub,
			Tracer: tracing.Tracer(), CaptureContent: tracing.CaptureContent(), Holder: cfg.Command},
	}, nil
}

// breakerCooldown is how long the circuit breaker holds a failing
// provider's calls back: MADSPARK_BREAKER_COOLDOWN (a duration from 1s to
// 1h), else the breaker's default of 60s.
func breakerCooldown(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv("MADSPARK_BREAKER_COOLDOWN"))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > time.Hour {
		return 0, Inputf("MADSPARK_BREAKER_COOLDOWN must be a duration from 1s to 1h, such as 30s, got %q", v)
	}
	return d, nil
}

// startLlamaServer starts llama-server for cfg's model (or
// MADSPARK_MODEL_PATH / MADSPARK_HF_REPO) and points cfg's settings at it.
// It returns the function that stops it; without a model it does nothing.
func startLlamaServer(ctx context.Context, cfg *Config) (func(), error) {
	modelPath, hfRepo := cfg.ModelPath, cfg.HFRepo
	if modelPath == "" && hfRepo == "" {
		modelPath, hfRepo = cfg.Getenv("MADSPARK_MODEL_PATH"), cfg.Getenv("MADSPARK_HF_REPO")
	}
	if modelPath == "" && hfRepo == "" {
		return func() {}, nil
	}
	s, err := llamaserver.Start(ctx, llamaserver.Config{ModelPath: modelPath, HFRepo: hfRepo, Parallel: len(debate.Proposers), Logger: cfg.Logger})
	if err != nil {
		return nil, InputError{err}
	}
	outer := cfg.Getenv
	cfg.Getenv = func(k string) string {
		switch k {
		case "MADSPARK_PROVIDER":
			return "openai"
		case "OPENAI_BASE_URL":
			return s.BaseURL
		case "OPENAI_API_KEY":
			return ""
		}
		return outer(k)
	}
	fmt.Fprintf(cfg.Notices, "madspark: llama-server running at %s with %s\n", s.BaseURL, modelPath+hfRepo)
	return s.Stop, nil
}

// MockResponders answers every pipeline's agents in mock mode.
func MockResponders() map[string]mock.Responder {
	all := map[string]mock.Responder{}
	for _, m := range []map[string]mock.Responder{spark.MockResponders(), chaos.MockResponders(), debate.MockResponders(), assess.MockResponders(), proposal.MockResponders(), eval.MockResponders()} {
		maps.Copy(all, m)
	}
	return all
}

// DefaultConcurrency is how many runs a worker works at once when neither
// a flag nor MADSPARK_PROVIDER_CONCURRENCY says.
const DefaultConcurrency = 4

// Concurrency returns how many runs may be worked at once against
// provider: flag when set (positive), else MADSPARK_PROVIDER_CONCURRENCY —
// a number ("8") or per-provider numbers ("openai=8,gemini=2,*=4") — else
// DefaultConcurrency. flagName names the flag in errors.
func Concurrency(getenv func(string) string, provider string, flag int, flagName string) (int, error) {
	if flag < 0 {
		return 0, Inputf("%s must be positive, got %d", flagName, flag)
	}
	if flag > 0 {
		return flag, nil
	}
	spec := strings.TrimSpace(getenv("MADSPARK_PROVIDER_CONCURRENCY"))
	if spec == "" {
		return DefaultConcurrency, nil
	}
	bad := Inputf(`MADSPARK_PROVIDER_CONCURRENCY must be a positive number or provider=number pairs such as "openai=8,gemini=2,*=4", got %q`, spec)
	if n, err := strconv.Atoi(spec); err == nil {
		if n < 1 {
			return 0, bad
		}
		return n, nil
	}
	n := DefaultConcurrency
	for part := range strings.SplitSeq(spec, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		v, err := strconv.Atoi(strings.TrimSpace(num))
		if !ok || err != nil || v < 1 {
			return 0, bad
		}
		switch strings.TrimSpace(name) {
		case provider:
			return v, nil
		case "*", "default":
			n = v
		}
	}
	return n, nil
}

// Envelope is the JSON a command prints for a run: the run, where it ran,
// its result, usage and duration.
func (a *App) Envelope(run *engine.Run, pipeline string, result any, elapsed time.Duration) map[string]any {
	return map[string]any{
		"run_id": run.ID(), "pipeline": pipeline, "mode": a.Info.Mode(), "provider": a.Info.Name, "model": a.Info.Model,
		"result": result, "usage": run.Usage(), "duration_ms": elapsed.Milliseconds(),
	}
}

// errNotFound reports whether err says that something does not exist.
func errNotFound(err error) bool { return errors.Is(err, madspark.ErrNotFound) }
