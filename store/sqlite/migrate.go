package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrationFS holds the schema migrations, named NNNN_description.sql.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version number", base)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s have the same version", other, base)
		}
		seen[v] = base
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
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
			return fmt.Errorf("migrate: %s: %w", m.name, err)
		}
	}
	return nil
}

// apply applies m unless it was applied already.
func apply(ctx context.Context, db *sql.DB, m migration) error {
	return inTx(ctx, db, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			m.version, formatTime(time.Now()))
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
