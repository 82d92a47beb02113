package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/madspark/madspark/store/migration"
)

// migrationFS holds the schema migrations, named NNNN_description.sql.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in version order.
func migrations() ([]migration.Migration, error) {
	return migration.Load(migrationFS, "migrations/*.sql")
}

// lockMigrations takes the advisory lock that serialises migrations of the
// current schema, until the end of the transaction. Other schemas of the
// same database have other locks.
const lockMigrations = `SELECT pg_advisory_xact_lock(
    hashtextextended('madspark/store/postgres migrate ' || COALESCE(current_schema(), ''), 0))`

// createMigrations creates the table that records applied migrations.
const createMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER     NOT NULL PRIMARY KEY,
    name       TEXT        NOT NULL DEFAULT '',
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// migrate applies the migrations the database has not seen yet, in order,
// each in its own transaction together with its schema_migrations row. It is
// idempotent, and safe when several processes open the same database at
// once: every transaction first takes the migration lock, so the check of
// schema_migrations and the migration itself are never interleaved with
// another process's (a plain CREATE TABLE IF NOT EXISTS is not safe against
// a concurrent one).
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockMigrations); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, createMigrations)
		return err
	}); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return apply(ctx, tx, m) }); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
	}
	return nil
}

// apply applies m in tx unless it was applied already.
func apply(ctx context.Context, tx pgx.Tx, m migration.Migration) error {
	if _, err := tx.Exec(ctx, lockMigrations); err != nil {
		return err
	}
	var done bool
	if err := tx.QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&done); err != nil {
		return err
	}
	if done {
		return nil
	}
	// Without arguments, Exec uses the simple query protocol, which runs
	// the several statements of a migration.
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	return err
}
