package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

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

// migrate applies the migrations db has not seen yet, in order, each in its
// own transaction together with its schema_migrations row. It is idempotent,
// and safe when several processes open a new file at once: transactions on
// db begin IMMEDIATE, so the check of schema_migrations and the migration
// itself happen under the write lock.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// Even this statement runs in an (IMMEDIATE) transaction: on its own it
	// would take a read lock and then upgrade it to a write lock, and when
	// two processes do that at once on a new file SQLite fails one of them
	// with SQLITE_BUSY at once instead of letting it wait.
	if err := inTx(ctx, db, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    applied_at TEXT    NOT NULL
)`)
		return err
	}); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := apply(ctx, db, m); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
	}
	return nil
}

// apply applies m unless it was applied already.
func apply(ctx context.Context, db *sql.DB, m migration.Migration) error {
	return inTx(ctx, db, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			m.Version, formatTime(time.Now()))
		return err
	})
}

// inTx runs fn in a transaction on db and commits it, or rolls it back if
// fn fails.
func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
