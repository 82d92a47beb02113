package main

import (
	"context"
	"fmt"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider"
	"github.com/madspark/madspark/store/sqlite"
)

// app is the composed system: the store, the decorated client and the
// engine, assembled once per command.
type app struct {
	db     *sqlite.DB
	info   provider.Info
	engine *engine.Engine
}

func (a *app) Close() error { return a.db.Close() }

// openStore opens the run database: $MADSPARK_DB or the default path under
// the user's data directory.
func (c *cli) openStore(ctx context.Context) (*sqlite.DB, error) {
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
// stack, outermost first: cache → meter → retry → circuit breaker → timeout →
// provider (see package middleware for why in this order).
func (c *cli) openApp(ctx context.Context, useCache bool) (*app, error) {
	settings := provider.FromEnv(c.env)
	base, info, err := provider.Open(ctx, settings, spark.MockResponders())
	if err != nil {
		return nil, usageError{err}
	}
	prices := middleware.DefaultPrices()
	if path := c.env("MADSPARK_PRICES"); path != "" {
		if prices, err = middleware.LoadPrices(path); err != nil {
			return nil, usageError{err}
		}
	}
	if info.Local {
		prices = middleware.PriceTable{}
	}
	db, err := c.openStore(ctx)
	if err != nil {
		return nil, err
	}
	var mws []llm.Middleware
	if useCache {
		mws = append(mws, middleware.Cache(middleware.CacheConfig{Provider: info.Name, DefaultModel: info.Model, Store: db, Logger: c.logger}))
	}
	mws = append(mws,
		middleware.Meter(prices, middleware.MeterLogger(c.logger)),
		middleware.Retry(middleware.RetryConfig{Logger: c.logger}),
		middleware.Breaker(middleware.BreakerConfig{Logger: c.logger}),
		middleware.Timeout(0),
	)
	return &app{
		db:     db,
		info:   info,
		engine: &engine.Engine{Store: db, Client: llm.Chain(base, mws...), Logger: c.logger},
	}, nil
}
