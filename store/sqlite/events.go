package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/madspark/madspark"
)

var _ madspark.EventStore = (*DB)(nil)

// Limits on the number of events Events returns.
const (
	defaultEventLimit = 500
	maxEventLimit     = 1000
)

// AppendEvent stores e as the next event of run e.RunID, setting e.Seq, and
// e.Time when it is zero. It returns an error wrapping madspark.ErrNotFound
// when the run does not exist.
func (db *DB) AppendEvent(ctx context.Context, e *madspark.Event) error {
	const op = "append event"
	add, err := appendEvent(ctx, op, e)
	if err != nil {
		return err
	}
	return db.write(ctx, op, add)
}

// appendEvent checks and encodes e, and returns the write that stores it
// and sets e.Seq and e.Time.
func appendEvent(ctx context.Context, op string, e *madspark.Event) (func(tx *sql.Tx) error, error) {
	if e == nil || e.RunID == "" || e.Type == "" {
		return nil, fmt.Errorf("sqlite: %s: run ID or type is empty", op)
	}
	data, err := nullJSON("data", e.Data)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s of run %q: %w", op, e.RunID, err)
	}
	at := e.Time
	if at.IsZero() {
		at = time.Now().UTC()
	}
	return func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE id = ?`, e.RunID).Scan(&n); err != nil {
			return fmt.Errorf("of run %q: %w", e.RunID, err)
		}
		if n == 0 {
			return notFound(e.RunID)
		}
		// MAX+1 is race-free: the transaction holds the write lock from
		// its start (BEGIN IMMEDIATE).
		var seq int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO run_events
    (run_id, seq, type, stage, progress, message, data, created_at)
VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = ?), ?, ?, ?, ?, ?, ?)
RETURNING seq`,
			e.RunID, e.RunID, string(e.Type), e.Stage, e.Progress, e.Message, data, formatTime(at)).Scan(&seq); err != nil {
			return fmt.Errorf("of run %q: %w", e.RunID, err)
		}
		e.Seq, e.Time = seq, at.UTC()
		return nil
	}, nil
}

// Events returns the events of run runID after sequence number afterSeq, in
// order, at most limit of them (0 or less means 500; capped at 1000).
func (db *DB) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]madspark.Event, error) {
	if limit <= 0 {
		limit = defaultEventLimit
	}
	limit = min(limit, maxEventLimit)
	return db.events(ctx, runID, `AND seq > ? ORDER BY seq LIMIT ?`, afterSeq, limit)
}

// LastEvent returns the latest event of run runID, or nil when it has none.
func (db *DB) LastEvent(ctx context.Context, runID string) (*madspark.Event, error) {
	evs, err := db.events(ctx, runID, `ORDER BY seq DESC LIMIT 1`)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return &evs[0], nil
}

// events reads the events of run runID that the rest of the query selects.
func (db *DB) events(ctx context.Context, runID, rest string, args ...any) ([]madspark.Event, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT run_id, seq, type, stage, progress, message, data, created_at
FROM run_events WHERE run_id = ? `+rest, append([]any{runID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of run %q: %w", runID, err)
	}
	defer rows.Close()
	out := []madspark.Event{}
	for rows.Next() {
		var (
			e       madspark.Event
			typ     string
			data    sql.NullString
			created sql.NullString
		)
		if err := rows.Scan(&e.RunID, &e.Seq, &typ, &e.Stage, &e.Progress, &e.Message, &data, &created); err != nil {
			return nil, fmt.Errorf("sqlite: events of run %q: %w", runID, err)
		}
		e.Type, e.Data = madspark.EventType(typ), rawJSON(data)
		if e.Time, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("sqlite: events of run %q: %w", runID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: events of run %q: %w", runID, err)
	}
	return out, nil
}
