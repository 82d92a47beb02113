package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/sqlite"
)

// registry registers every pipeline, with its dependencies from the app.
// The queue's workers, batches and resume find pipelines here.
func (c *cli) registry(a *app) (*pipeline.Registry, error) {
	reg := pipeline.NewRegistry()
	count, err := debate.NewTokenCounter()
	if err != nil {
		return nil, err
	}
	var searcher search.Provider
	if s := search.FromEnv(c.env); s != nil {
		searcher = search.Cached(s, a.cache, 24*time.Hour)
	}
	for _, def := range []func() (pipeline.Definition, error){
		spark.Definition,
		func() (pipeline.Definition, error) { return chaos.Definition(a.db) },
		func() (pipeline.Definition, error) { return debate.Definition(count, searcher, c.logger) },
		func() (pipeline.Definition, error) { return assess.Definition(c.assessConfig(a)) },
		func() (pipeline.Definition, error) {
			font, err := c.pdfFont()
			if err != nil {
				return pipeline.Definition{}, err
			}
			return proposal.Definition(c.proposalSources(a), c.logger, font)
		},
	} {
		d, err := def()
		if err != nil {
			return nil, err
		}
		if err := reg.Register(d); err != nil {
			return nil, err
		}
	}
	if err := registerEval(reg, a); err != nil {
		return nil, err
	}
	return reg, nil
}

// queueOptions are the settings of a process's part in the job queue.
type queueOptions struct {
	// concurrency is how many runs this process works at once; 0 means it
	// only enqueues.
	concurrency int
	lease       time.Duration
}

// openQueue opens the job queue in the app's database, River's tables
// beside the store's.
func (c *cli) openQueue(ctx context.Context, a *app, reg *pipeline.Registry, o queueOptions) (*jobs.Queue, error) {
	cfg := jobs.Config{
		Store: a.db, Registry: reg, Engine: a.engine,
		Mode: a.info.Mode(), Provider: a.info.Name, Model: a.info.Model,
		Concurrency: o.concurrency, LeaseTTL: o.lease, Logger: c.logger,
	}
	switch db := a.db.(type) {
	case *sqlite.DB:
		cfg.SQLite = db.WritePool()
	case *postgres.DB:
		cfg.Postgres = db.Pool()
	default:
		return nil, fmt.Errorf("the job queue needs a SQLite or PostgreSQL store, not %T", a.db)
	}
	q, err := jobs.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the job queue: %w", err)
	}
	return q, nil
}

// defaultConcurrency is how many runs a worker works at once when neither
// --max-concurrent nor MADSPARK_PROVIDER_CONCURRENCY says.
const defaultConcurrency = 4

// concurrency returns how many runs this process may work at once against
// provider: flag when set (positive), else MADSPARK_PROVIDER_CONCURRENCY —
// a number ("8") or per-provider numbers ("openai=8,gemini=2,*=4") — else
// defaultConcurrency.
func (c *cli) concurrency(provider string, flag int, flagName string) (int, error) {
	if flag < 0 {
		return 0, usagef("%s must be positive, got %d", flagName, flag)
	}
	if flag > 0 {
		return flag, nil
	}
	spec := strings.TrimSpace(c.env("MADSPARK_PROVIDER_CONCURRENCY"))
	if spec == "" {
		return defaultConcurrency, nil
	}
	bad := usagef(`MADSPARK_PROVIDER_CONCURRENCY must be a positive number or provider=number pairs such as "openai=8,gemini=2,*=4", got %q`, spec)
	if n, err := strconv.Atoi(spec); err == nil {
		if n < 1 {
			return 0, bad
		}
		return n, nil
	}
	n := defaultConcurrency
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
