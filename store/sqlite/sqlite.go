// Package sqlite is the embedded store: madspark.Store (package
// store/sqlstore) kept in one SQLite file, through the pure-Go driver
// modernc.org/sqlite (no cgo), with what is SQLite's own: one writer that
// commits writes in groups, statements kept prepared, and its dialect.
//
// A *DB is safe for concurrent use by many goroutines, and several processes
// may open the same file at once: the database runs in WAL mode, every write
// is an IMMEDIATE transaction, and a busy connection waits up to five seconds
// for another writer instead of failing.
//
// The schema is created and upgraded by numbered SQL files embedded in the
// binary (migrations/0001_init.sql, ...), each applied once, in its own
// transaction, and recorded in the schema_migrations table. JSON is TEXT,
// timestamps are RFC 3339 TEXT in UTC with nine fraction digits (so that text
// order is time order), numbers are INTEGER or REAL.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/store/sqlstore"

	msqlite "modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

var _ madspark.Store = (*DB)(nil)

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection (in this process or another) before giving up with
// SQLITE_BUSY.
const busyTimeoutMS = 5000

// DB is a store backed by one SQLite file. It implements madspark.Store.
// Create one with Open and release it with Close.
type DB struct {
	*sqlstore.Store
	// Connection pools and locking.
	//
	// SQLite allows many readers but only one writer at a time per file. A
	// single pool of several connections would let goroutines of this
	// process race each other for the write lock, and the losers would sit
	// in SQLite's busy handler, which polls with sleeps; worse, a
	// transaction that reads first and writes later (BEGIN DEFERRED) can
	// fail at once with SQLITE_BUSY when another writer got in between,
	// whatever the busy timeout.
	//
	// So there are two pools on the same file:
	//
	//   - w, for every write, has exactly one connection. Writers of this
	//     process queue for it in database/sql (in order, honouring their
	//     contexts) and never contend inside SQLite. Its transactions begin
	//     with BEGIN IMMEDIATE (_txlock=immediate), so the write lock is
	//     taken up front and a transaction never has to upgrade a read
	//     lock. Contention with other processes is then only ever "wait
	//     for the lock", which busy_timeout handles.
	//   - r, for reads, has several connections with query_only set. In WAL
	//     mode readers do not block the writer nor each other, and each
	//     statement sees the latest committed state.
	w *sql.DB
	r *sql.DB
	// writes are the store's own writes, which one goroutine commits in
	// groups (see commits).
	writes *committer
}

// Open opens the SQLite database at path, creating the file and its parent
// directories (mode 0700) if needed, configures it (WAL journal, busy
// timeout of 5 seconds, foreign keys, synchronous=NORMAL) and applies any
// migrations not applied yet. path must name a file; ":memory:" is not
// supported.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open: invalid database path %q", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// Create the file ourselves so that it is private to the user (the
	// database holds prompts and results); SQLite gives the -wal and -shm
	// files the same permissions. An empty file is a valid new database.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	wc, err := openDB(dsn(abs, false), true)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w := sql.OpenDB(wc)
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	if err := enableWAL(ctx, w); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db := &DB{w: w, writes: newCommitter(w)}
	d := db.dialect()
	if err := sqlstore.Migrate(ctx, w, d); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	rc, err := openDB(dsn(abs, true), false)
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.r = sql.OpenDB(rc)
	n := max(4, runtime.GOMAXPROCS(0))
	db.r.SetMaxOpenConns(n)
	db.r.SetMaxIdleConns(n)
	if err := db.r.PingContext(ctx); err != nil {
		_ = db.r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.Store = sqlstore.New(db.r, d)
	return db, nil
}

// migrationFS holds the schema migrations, named NNNN_description.sql.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// timeFormat is RFC 3339 with a fixed nine-digit fraction, in UTC: "Z".
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// dialect is how the store's queries run on SQLite: written by the one
// writer, which holds the file from the start of its transactions (no
// locks needed), times as text, leases timed by this machine's clock.
func (db *DB) dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:  "sqlite",
		Write: db.writes.do,
		Time:  func(t time.Time) any { return t.UTC().Format(timeFormat) },
		// Migrations run on the write pool, whose transactions begin
		// IMMEDIATE: the check of schema_migrations and the migration
		// happen under the write lock. Even its creation is in such a
		// transaction: on its own it would take a read lock and then
		// upgrade it, and when two processes do that at once on a new
		// file SQLite fails one of them at once instead of letting it
		// wait.
		Migrations: migrationFS,
		CreateMigrations: `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    applied_at TEXT    NOT NULL
)`,
		Record: `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $3)`,
	}
}

// dsn returns the modernc.org/sqlite data source name for the file at the
// absolute path abs: a file: URI (so that any character in the path is
// escaped) with the connection's pragmas.
func dsn(abs string, readOnly bool) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: C:/x -> /C:/x
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// journal_mode=WAL is not set here but once, by enableWAL: it is
		// persistent in the file, and switching a new file to WAL can fail
		// with SQLITE_BUSY without waiting when another process does the
		// same at the same moment, which a DSN pragma could not retry.
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	return u.String()
}

// enableWAL switches the database to WAL mode. Changing the journal mode
// needs an exclusive lock, and when two connections race to take it from a
// read lock, SQLite fails one of them with SQLITE_BUSY at once rather than
// invoking the busy handler (which could deadlock); so this retries for up
// to the busy timeout. Once the file is in WAL mode every connection to it,
// from any process, uses WAL.
func enableWAL(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	delay := time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("enable WAL: journal mode is %q", mode)
			}
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("enable WAL: %w", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("enable WAL: %w", ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (or one of
// their extended codes).
func isBusy(err error) bool {
	var e *msqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// Close closes the database. Calls in progress may fail; later calls fail.
func (db *DB) Close() error {
	db.writes.close()
	errR := db.r.Close()
	errW := db.w.Close()
	if err := errors.Join(errR, errW); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// DefaultPath returns where the database lives by default:
// $XDG_DATA_HOME/madspark/madspark.db when XDG_DATA_HOME is set to an
// absolute path, otherwise ~/.local/share/madspark/madspark.db, or
// ~/Library/Application Support/madspark/madspark.db on macOS and
// %LocalAppData%\madspark\madspark.db on Windows. It does not read
// $MADSPARK_DB; the caller decides whether that overrides the default.
func DefaultPath() (string, error) {
	const dir, file = "madspark", "madspark.db"
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, dir, file), nil
	}
	if runtime.GOOS == "windows" {
		if x := os.Getenv("LocalAppData"); x != "" {
			return filepath.Join(x, dir, file), nil
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("sqlite: default path: %w", err)
	}
	switch runtime.GOOS {
	case "darwin", "ios":
		return filepath.Join(home, "Library", "Application Support", dir, file), nil
	case "windows":
		return filepath.Join(home, "AppData", "Local", dir, file), nil
	}
	return filepath.Join(home, ".local", "share", dir, file), nil
}

// writeAlone runs fn in a write transaction of its own.
func writeAlone(ctx context.Context, w *sql.DB, fn func(tx *sqlstore.Tx) error) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return sqlstore.Commit(tx, nil, fn)
}

// WritePool returns the pool of the single write connection, for a component
// that must take turns with the store's own writes on the file, such as the
// job queue (River's SQLite driver, which asks for a one-connection pool).
// Its transactions begin IMMEDIATE. Keep what runs on it short, and do not
// close it: Close does.
func (db *DB) WritePool() *sql.DB { return db.w }
