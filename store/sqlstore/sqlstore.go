// Package sqlstore is the store written once for both databases: every
// query and every row mapping of madspark.Store, over database/sql, for
// store/sqlite and store/postgres to serve.
//
// The queries are in the SQL that SQLite and PostgreSQL both accept: $n
// placeholders (modernc.org/sqlite binds $n to the nth argument, as
// PostgreSQL does), ON CONFLICT upserts, RETURNING, lower() on both sides of
// LIKE for case-blind matching. JSON is text (usage is JSONB on
// PostgreSQL, which takes and gives the same text). What the two do their
// own way is a Dialect: how a write transaction is run (SQLite's one writer
// committing groups, PostgreSQL's pool), how a time is stored (RFC 3339
// text or timestamptz), which clock times leases, row and table locks
// (SQLite's writer holds the whole file), what an appended event also does
// (PostgreSQL's NOTIFY), how many rows are inserted at once (COPY) and the
// migrations.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/store/migration"
)

// Dialect is what a database does its own way.
type Dialect struct {
	// Name begins the store's error messages: "sqlite", "postgres".
	Name string
	// Write runs fn in a write transaction and commits it, or rolls it
	// back when fn fails, and returns fn's error as it is. fn may run
	// more than once (a group commit whose other write failed runs it
	// again alone): it writes only through tx and sets its results anew
	// each time. A write whose ctx MayWait may be held a moment, for
	// other writes to commit with it.
	Write func(ctx context.Context, fn func(tx *Tx) error) error
	// Time returns t as a time column's argument, in UTC; Precision is
	// what the column keeps of it (finer is truncated).
	Time      func(t time.Time) any
	Precision time.Duration
	// Clock, if set, is SQL for the database's clock, which then times
	// leases (for processes on machines whose clocks differ to agree);
	// otherwise this process's clock does.
	Clock string
	// RowLock ends a SELECT whose rows the transaction holds until it
	// ends, so that writers of the same rows take turns; TableLock, if
	// set, is the statement that does so for a whole table. Both are
	// empty where a write transaction holds the database from its start.
	RowLock   string
	TableLock func(table string) string
	// Notify, if set, runs in the transaction that appends an event, with
	// the run ID as $1.
	Notify string
	// InsertRows, if set, inserts rows of cols into table in tx in one go;
	// otherwise each row is an INSERT.
	InsertRows func(ctx context.Context, tx *Tx, table string, cols []string, rows [][]any) error
	// Migrations holds the schema's migrations/NNNN_description.sql.
	// CreateMigrations creates the table that records them; Record records
	// one, from $1 its version, $2 its name, $3 the time; LockMigrations,
	// if set, runs first in each migration's transaction, so that
	// processes opening the database at once take turns.
	Migrations                               fs.FS
	CreateMigrations, Record, LockMigrations string
}

// Tx is a write transaction, and the connection it runs on where the
// dialect asked for one (for what database/sql cannot do, such as COPY).
type Tx struct {
	*sql.Tx
	Conn *sql.Conn
}

// Commit runs fn in tx, and commits tx or rolls it back.
func Commit(tx *sql.Tx, conn *sql.Conn, fn func(tx *Tx) error) error {
	if err := fn(&Tx{Tx: tx, Conn: conn}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Store is madspark.Store, but for Close, on a database: reads on read,
// writes by its Dialect.
type Store struct {
	read *sql.DB
	d    Dialect
}

// New returns the store on read of dialect d.
func New(read *sql.DB, d Dialect) *Store { return &Store{read: read, d: d} }

// Limits of listings.
const (
	defaultLimit      = 50
	maxLimit          = 1000
	defaultEventLimit = 500
)

// Migrate applies the migrations of d that db has not seen yet, in order,
// each in its own transaction together with its record.
func Migrate(ctx context.Context, db *sql.DB, d Dialect) error {
	ms, err := migration.Load(d.Migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	step := func(fn func(tx *Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		return Commit(tx, nil, func(tx *Tx) error {
			if d.LockMigrations != "" {
				if _, err := tx.ExecContext(ctx, d.LockMigrations); err != nil {
					return err
				}
			}
			return fn(tx)
		})
	}
	if err := step(func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, d.CreateMigrations)
		return err
	}); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := step(func(tx *Tx) error {
			var n int
			err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&n)
			if err != nil || n > 0 {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, d.Record, m.Version, m.Name, d.Time(time.Now()))
			return err
		}); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
	}
	return nil
}

// mayWaitKey marks the context of a write that may wait a moment before
// it commits.
type mayWaitKey struct{}

// mayWait returns ctx marked for a write that may wait a moment before it
// commits, so that a dialect that commits writes in groups can gather
// others with it: a write whose writer waits for nothing more (a run's
// end).
func mayWait(ctx context.Context) context.Context { return context.WithValue(ctx, mayWaitKey{}, true) }

// MayWait reports whether the write of ctx may wait a moment before it
// commits (see Dialect.Write).
func MayWait(ctx context.Context) bool { return ctx.Value(mayWaitKey{}) != nil }

// write runs fn in a write transaction; see fail for its errors.
func (s *Store) write(ctx context.Context, op string, fn func(tx *Tx) error) error {
	if err := s.d.Write(ctx, fn); err != nil {
		return s.fail(err, "%s", op)
	}
	return nil
}

// fail prefixes err with the store's name and what failed, unless it is
// nil or wraps madspark.ErrNotFound: that error says what it is about.
func (s *Store) fail(err error, format string, args ...any) error {
	if err == nil || errors.Is(err, madspark.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%s: %s: %w", s.d.Name, fmt.Sprintf(format, args...), err)
}

// kept returns t as the store keeps it: in UTC, truncated to Precision.
func (s *Store) kept(t time.Time) time.Time { return t.UTC().Truncate(s.d.Precision) }

// now is the current time as the store keeps it.
func (s *Store) now() time.Time { return s.kept(time.Now()) }

// insertRows inserts rows of cols into table in tx.
func (s *Store) insertRows(ctx context.Context, tx *Tx, table string, cols []string, rows [][]any) error {
	if s.d.InsertRows != nil {
		return s.d.InsertRows(ctx, tx, table, cols, rows)
	}
	marks := make([]string, len(cols))
	for i := range cols {
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	q := `INSERT INTO ` + table + ` (` + strings.Join(cols, ", ") + `) VALUES (` + strings.Join(marks, ", ") + `)`
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, q, r...); err != nil {
			return err
		}
	}
	return nil
}

// missing is the error for a missing run, or a thing of another kind:
// `run "id": not found`.
func missing(what, id string) error {
	return fmt.Errorf("%s %q: %w", what, id, madspark.ErrNotFound)
}

// one turns the outcome of a statement that was to change the row of what
// id names into an error: missing when it changed none.
func one(res sql.Result, err error) func(what, id string) error {
	return func(what, id string) error {
		n, err := affected(res, err)
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if n == 0 {
			return missing(what, id)
		}
		return nil
	}
}

// affected returns the number of rows a statement changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// lockRun returns missing("run", id) unless run id exists, and holds its row
// (RowLock) until tx ends.
func (s *Store) lockRun(ctx context.Context, tx *Tx, id string) error {
	var x int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = $1`+s.d.RowLock, id).Scan(&x)
	if errors.Is(err, sql.ErrNoRows) {
		return missing("run", id)
	}
	return err
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// all returns the rows of a query, each read by scan; empty, not nil, for
// none.
func all[T any](ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// byID reads with scan the row that query selects by its $1, id: an error
// wrapping madspark.ErrNotFound when there is none.
func byID[T any](ctx context.Context, s *Store, scan func(scanner) (*T, error), what, query, id string) (*T, error) {
	v, err := scan(s.read.QueryRowContext(ctx, query, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, missing(what, id)
	}
	return v, s.fail(err, "%s %q", what, id)
}

// limit returns n, 0 or less meaning def, at most maxLimit.
func limit(n, def int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxLimit)
}

// likeArg returns a LIKE pattern that matches text containing s, with \
// as the escape character.
func likeArg(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// at scans a time column into *t: PostgreSQL's timestamptz, or SQLite's
// RFC 3339 text; NULL is the zero time.
type at struct{ t *time.Time }

func (a at) Scan(v any) error {
	var err error
	switch v := v.(type) {
	case nil:
		*a.t = time.Time{}
	case time.Time:
		*a.t = v.UTC()
	case string:
		*a.t, err = time.Parse(time.RFC3339Nano, v)
		*a.t = a.t.UTC()
	default:
		return fmt.Errorf("a time column holds %T", v)
	}
	return err
}

// text returns a copy of the text of a scanned column; NULL is empty.
func text(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case []byte:
		return append([]byte(nil), v...), nil
	}
	return nil, fmt.Errorf("a text column holds %T", v)
}

// raw scans a JSON column into *v, as it is; NULL and empty text are nil.
type raw struct{ v *json.RawMessage }

func (r raw) Scan(v any) error {
	b, err := text(v)
	*r.v = nil
	if len(b) > 0 {
		*r.v = b
	}
	return err
}

// decoded scans a JSON column and decodes it into v; NULL and empty text
// leave v as it is.
type decoded struct{ v any }

func (d decoded) Scan(v any) error {
	b, err := text(v)
	if err != nil || len(b) == 0 {
		return err
	}
	return json.Unmarshal(b, d.v)
}

// jsonArg returns v, which must be valid JSON, as the argument of a JSON
// text column: NULL when v is empty.
func jsonArg(what string, v json.RawMessage) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if !json.Valid(v) {
		return nil, fmt.Errorf("%s is not valid JSON", what)
	}
	return string(v), nil
}

// encode returns v as JSON text.
func encode(what string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", what, err)
	}
	return string(b), nil
}

// list returns v as JSON text, "[]" when empty.
func list[T any](what string, v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	return encode(what, v)
}

// nullTime returns t as a time argument, NULL for the zero time.
func (s *Store) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.d.Time(t)
}
