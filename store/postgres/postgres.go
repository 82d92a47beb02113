// Package postgres is the server store: madspark.Store (package
// store/sqlstore) kept in PostgreSQL, through pgx (github.com/jackc/pgx/v5),
// its connection pool and its database/sql adapter, with what is
// PostgreSQL's own: its dialect, events notified to other processes
// (LISTEN/NOTIFY) and batch items copied in (COPY).
//
// It keeps the same contracts as package store/sqlite, so that the two are
// interchangeable; package store/storetest checks both. Times are stored
// with PostgreSQL's microsecond precision (finer fractions are truncated)
// and come back in UTC. The JSON documents of runs, steps and ideas are
// stored as TEXT and come back byte for byte.
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
	"database/sql"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/store/sqlstore"
)

var _ madspark.Store = (*DB)(nil)

// defaultConnectTimeout bounds each connection attempt when the URL does not
// set connect_timeout.
const defaultConnectTimeout = 10 * time.Second

// defaultMaxConns is the pool's size when the URL does not set
// pool_max_conns.
const defaultMaxConns = 16

// DB is a store backed by a PostgreSQL database. It implements
// madspark.Store. Create one with Open and release it with Close.
type DB struct {
	*sqlstore.Store
	pool *pgxpool.Pool
	sql  *sql.DB // on pool
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
	db := &DB{pool: pool, sql: stdlib.OpenDBFromPool(pool)}
	d := db.dialect()
	if err := sqlstore.Migrate(ctx, db.sql, d); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	db.Store = sqlstore.New(db.sql, d)
	return db, nil
}

// migrationFS holds the schema migrations, named NNNN_description.sql.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// dialect is how the store's queries run on PostgreSQL: in transactions of
// the pool, which lock the rows whose numbering they extend, times as
// timestamptz, the clock the database's (so that processes on machines
// whose clocks differ agree), events notified, batch items copied in.
func (db *DB) dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:      "postgres",
		Write:     db.write,
		Time:      func(t time.Time) any { return t.UTC().Truncate(time.Microsecond) },
		Precision: time.Microsecond,
		Clock:     "now()",
		// FOR NO KEY UPDATE does not block the foreign-key checks of
		// other transactions (FOR KEY SHARE). The table lock conflicts
		// with itself but not with readers.
		RowLock:    " FOR NO KEY UPDATE",
		TableLock:  func(table string) string { return "LOCK TABLE " + table + " IN SHARE ROW EXCLUSIVE MODE" },
		Notify:     "SELECT pg_notify('" + EventChannel + "', $1)",
		InsertRows: copyRows,
		Migrations: migrationFS,
		CreateMigrations: `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER     NOT NULL PRIMARY KEY,
    name       TEXT        NOT NULL DEFAULT '',
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`,
		Record: `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
		// Migrations of the current schema take turns under a lock that
		// other schemas of the database do not share (a plain CREATE TABLE
		// IF NOT EXISTS is not safe against a concurrent one).
		LockMigrations: `SELECT pg_advisory_xact_lock(
    hashtextextended('madspark/store/postgres migrate ' || COALESCE(current_schema(), ''), 0))`,
	}
}

// write runs fn in a transaction on a connection of the pool.
func (db *DB) write(ctx context.Context, fn func(tx *sqlstore.Tx) error) error {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return sqlstore.Commit(tx, conn, fn)
}

// copyRows copies rows into table with COPY, in tx.
func copyRows(ctx context.Context, tx *sqlstore.Tx, table string, cols []string, rows [][]any) error {
	return tx.Conn.Raw(func(c any) error {
		_, err := c.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		return err
	})
}

// Close closes the pool's connections, waiting for the ones in use to be
// returned first. Later calls fail.
func (db *DB) Close() error {
	err := db.sql.Close()
	db.pool.Close()
	if err != nil {
		return fmt.Errorf("postgres: close: %w", err)
	}
	return nil
}

// Pool returns the store's connection pool, for a component that works on
// the same database, such as the job queue (River's pgx driver). Do not
// close it: Close does.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }
