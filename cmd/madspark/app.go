package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

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
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/telemetry"
)

// app is the composed system: the store, the decorated client, the event
// hub and the engine, assembled once per command.
type app struct {
	db     madspark.Store
	cache  madspark.CacheStore
	info   provider.Info
	events *events.Hub
	engine *engine.Engine
	// tracing exports traces when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	tracing *telemetry.Tracing
}

func (a *app) Close() error {
	a.events.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.tracing.Shutdown(ctx) // spans that cannot be sent are dropped, never a failed command
	if c, ok := a.cache.(io.Closer); ok && a.cache != madspark.CacheStore(a.db) {
		c.Close()
	}
	return a.db.Close()
}

// openStore opens the run database: PostgreSQL when DATABASE_URL is set,
// else the SQLite file $MADSPARK_DB or the default path under the user's
// data directory.
func (c *cli) openStore(ctx context.Context) (madspark.Store, error) {
	if url := c.env("DATABASE_URL"); url != "" {
		db, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("open database (DATABASE_URL): %w", err)
		}
		return db, nil
	}
	path := c.env("MADSPARK_DB")
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

// openApp chooses the provider from the environment and composes the client
// stack, outermost first: cache → meter → concurrency limit → retry →
// circuit breaker → timeout → provider (see package middleware for why in this order).
func (c *cli) openApp(ctx context.Context, useCache bool) (*app, error) {
	settings := provider.FromEnv(c.env)
	responders := mockResponders()
	def, info, err := provider.Open(ctx, settings, responders)
	if err != nil {
		return nil, usageError{err}
	}
	// Requests that name another provider (a debate's --proposer-models)
	// are routed to it; the stack below wraps them all.
	base := provider.NewRouter(def, info.Name, func(ctx context.Context, name string) (llm.Client, error) {
		if info.Mock {
			return def, nil
		}
		return provider.OpenNamed(ctx, settings, name, responders)
	})
	prices := middleware.DefaultPrices()
	if path := c.env("MADSPARK_PRICES"); path != "" {
		if prices, err = middleware.LoadPrices(path); err != nil {
			return nil, usageError{err}
		}
	}
	if info.Local {
		prices = middleware.PriceTable{}
	}
	if _, err := c.concurrency(info.Name, 0, ""); err != nil {
		return nil, err
	}
	db, err := c.openStore(ctx)
	if err != nil {
		return nil, err
	}
	// The response cache's durable tier: Redis when REDIS_URL is set (shared
	// by every process; down means no cache, never a failed run), else the
	// database.
	var cache madspark.CacheStore = db
	if url := c.env("REDIS_URL"); url != "" {
		rc, err := redis.Open(ctx, url, 0, c.logger)
		if err != nil {
			db.Close()
			return nil, usageError{fmt.Errorf("REDIS_URL: %w", err)}
		}
		cache = rc
	}
	// One limit on the calls in flight per provider, whichever path makes
	// them: CLI runs, queue workers, the API and /v1 alike.
	limit := middleware.Limit(middleware.LimitConfig{DefaultProvider: info.Name, Limit: func(p string) int {
		n, _ := c.concurrency(p, 0, "")
		return n
	}})
	var mws []llm.Middleware
	if useCache {
		mws = append(mws, middleware.Cache(middleware.CacheConfig{Provider: info.Name, DefaultModel: info.Model, Store: cache, Logger: c.logger}))
	}
	mws = append(mws,
		middleware.Meter(prices, middleware.MeterLogger(c.logger)),
		limit,
		middleware.Retry(middleware.RetryConfig{Logger: c.logger}),
		middleware.Breaker(middleware.BreakerConfig{Logger: c.logger}),
		middleware.Timeout(0),
	)
	tracing, err := telemetry.Setup(ctx, c.env)
	if err != nil {
		db.Close()
		return nil, usageError{err}
	}
	// Every run's events are stored, so that anyone can follow it.
	hub := events.New(db, events.Options{Logger: c.logger})
	return &app{
		db:      db,
		cache:   cache,
		info:    info,
		events:  hub,
		tracing: tracing,
		engine: &engine.Engine{Store: db, Client: llm.Chain(base, mws...), Logger: c.logger, Events: hub,
			Tracer: tracing.Tracer(), CaptureContent: tracing.CaptureContent(), Holder: c.command},
	}, nil
}

// execute runs one pipeline run: it records the run, draws progress on a
// terminal, runs fn under the timeout, and records the outcome, also when
// interrupted. The error, if any, names the run, provider and model.
func (c *cli) execute(ctx context.Context, a *app, pipeline string, params any, timeout time.Duration, fn func(context.Context, *engine.Run) (any, error)) (*engine.Run, time.Duration, error) {
	return c.executeRun(ctx, a, "", pipeline, params, timeout, fn)
}

// executeRun is execute for a new run (resumeID empty) or for resuming the
// unfinished run resumeID, whose finished steps are replayed.
func (c *cli) executeRun(ctx context.Context, a *app, resumeID, pipeline string, params any, timeout time.Duration, fn func(context.Context, *engine.Run) (any, error)) (*engine.Run, time.Duration, error) {
	if a.info.Mock {
		fmt.Fprintf(c.stderr, "madspark: mock mode (%s): outputs are mock data, no model is called\n", a.info.Reason)
	}
	start := time.Now()
	var prog *progress
	sink := func(madspark.Event) {}
	if c.progress {
		prog = newProgress(c.stderr)
		sink = prog.Event
	}
	stop := func() {
		if prog != nil {
			prog.Stop()
		}
	}
	var run *engine.Run
	var err error
	if resumeID != "" {
		run, err = a.engine.Resume(ctx, resumeID, sink)
	} else {
		run, err = a.engine.Start(ctx, engine.RunInfo{Pipeline: pipeline, Mode: a.info.Mode(), Provider: a.info.Name, Model: a.info.Model, Params: params}, sink)
	}
	if err != nil {
		stop()
		return nil, 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	res, runErr := fn(rctx, run)
	cancel()
	stop()
	switch {
	case runErr != nil && ctx.Err() != nil:
		runErr = fmt.Errorf("interrupted: %w", runErr)
	case runErr != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		runErr = fmt.Errorf("run timed out after %s (--timeout): %w", timeout, runErr)
	}
	if err := run.Finish(ctx, res, runErr); err != nil {
		c.logger.Warn("could not record the run's outcome", "run", run.ID(), "err", err)
	}
	if runErr != nil && ctx.Err() != nil {
		return run, 0, &interruptedError{runID: run.ID(), err: runErr}
	}
	if runErr != nil {
		return run, 0, fmt.Errorf("run %s failed with %s/%s: %w; once the cause is fixed, madspark resume %s finishes it", run.ID(), a.info.Name, a.info.Model, runErr, run.ID())
	}
	return run, time.Since(start), nil
}

// interruptedError is a run stopped by Ctrl-C (or SIGTERM): it is kept,
// failed, and "madspark resume" finishes it.
type interruptedError struct {
	runID string
	// flags are resume's flags that the hint suggests ("--output-dir DIR").
	flags string
	err   error
}

func (e *interruptedError) Error() string {
	return fmt.Sprintf("interrupted; run %s is kept, finish it with: madspark resume %s%s", e.runID, e.runID, e.flags)
}

// resumeInto makes the hint of an interrupted run's err, if it is one,
// write the run's files to dir when it is resumed.
func resumeInto(err error, dir string) error {
	if ie, ok := errors.AsType[*interruptedError](err); ok {
		ie.flags = " --output-dir " + shellQuote(dir)
	}
	return err
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (e *interruptedError) Unwrap() error { return e.err }

// mockResponders answers every pipeline's agents in mock mode.
func mockResponders() map[string]mock.Responder {
	all := map[string]mock.Responder{}
	for _, m := range []map[string]mock.Responder{spark.MockResponders(), chaos.MockResponders(), debate.MockResponders(), assess.MockResponders(), proposal.MockResponders(), eval.MockResponders()} {
		maps.Copy(all, m)
	}
	return all
}
