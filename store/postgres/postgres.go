// Package postgres is the server store: runs, their step journal, the
// response cache and remembered ideas kept in PostgreSQL, through pgx
// (github.com/jackc/pgx/v5) and its connection pool.
//
// It keeps the same contracts as package store/sqlite, down to error
// messages, listing order and limits, so that the two are interchangeable;
// package store/storetest checks both. Times are stored with PostgreSQL's
// microsecond precision (finer fractions are truncated) and come back in
// UTC. The JSON documents of runs, steps and ideas are stored as TEXT and
// come back byte for byte.
//
// A *DB is safe for concurrent use by many goroutines, and any number of
// processes may share a database. The tables live in the first schema of the
// connection's search_path, so several stores can share a database in
// separate schemas (set search_path in the URL, as in
// "postgres://host/db?search_path=madspark").
//
// The schema is created and upgraded by numbered SQL files embedded in the
// binary (migrations/0001_init.sql, ...), each applied once, in its own
// transaction, and recorded in the schema_migrations table. Migrations run
// under a transaction-scoped advisory lock, so that processes starting at
// the same moment apply each migration exactly once.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/madspark/madspark"
)

// Compile-time checks that *DB satisfies the storage contracts.
var (
	_ madspark.RunStore   = (*DB)(nil)
	_ madspark.CacheStore = (*DB)(nil)
	_ madspark.IdeaStore  = (*DB)(nil)
)

// defaultConnectTimeout bounds each connection attempt when the URL does not
// set connect_timeout.
const defaultConnectTimeout = 10 * time.Second

// defaultMaxConns is the pool's size when the URL does not set
// pool_max_conns.
const defaultMaxConns = 16

// DB is a store backed by a PostgreSQL database. It implements
// madspark.RunStore, madspark.CacheStore and madspark.IdeaStore. Create one
// with Open and release it with Close.
type DB struct {
	pool *pgxpool.Pool
}

// Open connects to the PostgreSQL database at url, a URL such as
// "postgres://user:password@host:5432/db?sslmode=disable" or a key=value
// connection string, with any of the settings pgx and pgxpool accept (such
// as pool_max_conns, connect_timeout and search_path). It checks the
// connection and applies any migrations not applied yet. Without
// connect_timeout in url, each connection attempt gives up after 10 seconds;
// without pool_max_conns, the pool holds up to 16 connections (or one per
// CPU if more); ctx bounds the whole of Open.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	// pgxpool's default (the number of CPUs, at least 4) is too few for a
	// worker: the job queue holds one connection to listen, and each of its
	// concurrent runs writes its journal and events.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return &DB{pool: pool}, nil
}

// Close closes the pool's connections, waiting for the ones in use to be
// returned first. Later calls fail.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// inTx runs fn in a transaction and commits it, or rolls it back if fn
// fails. Errors are prefixed with "postgres: op: ", except those wrapping
// madspark.ErrNotFound, which are returned as they are.
func (db *DB) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, db.pool, fn)
	if err == nil {
		return nil
	}
	if errors.Is(err, madspark.ErrNotFound) {
		return err
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// atomically runs fn in a transaction. fn's errors are returned as they
// are (they say what failed); those of the transaction itself are wrapped
// with op.
func (db *DB) atomically(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	var fnErr error
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		fnErr = fn(tx)
		return fnErr
	})
	if err == nil || err == fnErr {
		return err
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// Pool returns the store's connection pool, for a component that works on
// the same database, such as the job queue (River's pgx driver). Do not
// close it: Close does.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }
