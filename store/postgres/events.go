package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/madspark/madspark"
)

var _ madspark.EventStore = (*DB)(nil)

// EventChannel is the channel that AppendEvent notifies, with the run ID as
// payload, when the event's transaction commits.
const EventChannel = "madspark_events"

// Limits on the number of events Events returns.
const (
	defaultEventLimit = 500
	maxEventLimit     = 1000
)

// AppendEvent stores e as the next event of run e.RunID, setting e.Seq, and
// e.Time when it is zero, and notifies EventChannel. It returns an error
// wrapping madspark.ErrNotFound when the run does not exist.
func (db *DB) AppendEvent(ctx context.Context, e *madspark.Event) error {
	const op = "append event"
	return db.atomically(ctx, op, func(tx pgx.Tx) error { return appendEvent(ctx, tx, op, e) })
}

// appendEvent stores e in tx, sets e.Seq, and e.Time when it is zero, and
// notifies EventChannel when tx commits.
func appendEvent(ctx context.Context, tx pgx.Tx, op string, e *madspark.Event) error {
	if e == nil || e.RunID == "" || e.Type == "" {
		return fmt.Errorf("postgres: %s: run ID or type is empty", op)
	}
	data, err := nullJSON("data", e.Data)
	if err != nil {
		return fmt.Errorf("postgres: %s of run %q: %w", op, e.RunID, err)
	}
	at := e.Time
	if at.IsZero() {
		at = time.Now()
	}
	at = dbTime(at)
	// The run's row lock makes the events of one run append one at a
	// time, so MAX(seq)+1 is unique (as for steps).
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE`, e.RunID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(e.RunID)
	}
	if err != nil {
		return fmt.Errorf("postgres: %s of run %q: %w", op, e.RunID, err)
	}
	var seq int64
	if err := tx.QueryRow(ctx, `INSERT INTO run_events (run_id, seq, type, stage, progress, message, data, created_at)
VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = $1), $2, $3, $4, $5, $6, $7)
RETURNING seq`, e.RunID, string(e.Type), e.Stage, e.Progress, e.Message, data, at).Scan(&seq); err != nil {
		return fmt.Errorf("postgres: %s of run %q: %w", op, e.RunID, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, EventChannel, e.RunID); err != nil {
		return fmt.Errorf("postgres: %s of run %q: %w", op, e.RunID, err)
	}
	e.Seq, e.Time = seq, at
	return nil
}

// Events returns the events of run runID after sequence number afterSeq, in
// order, at most limit of them (0 or less means 500; capped at 1000).
func (db *DB) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]madspark.Event, error) {
	if limit <= 0 {
		limit = defaultEventLimit
	}
	limit = min(limit, maxEventLimit)
	return db.events(ctx, runID, `AND seq > $2 ORDER BY seq LIMIT $3`, afterSeq, int64(limit))
}

// LastEvent returns the latest event of run runID, or nil when it has none.
func (db *DB) LastEvent(ctx context.Context, runID string) (*madspark.Event, error) {
	evs, err := db.events(ctx, runID, `ORDER BY seq DESC LIMIT 1`)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return &evs[0], nil
}

// events reads the events of run runID that the rest of the query selects
// (with args from $2).
func (db *DB) events(ctx context.Context, runID, rest string, args ...any) ([]madspark.Event, error) {
	rows, err := db.pool.Query(ctx, `SELECT run_id, seq, type, stage, progress, message, data, created_at
FROM run_events WHERE run_id = $1 `+rest, append([]any{runID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: events of run %q: %w", runID, err)
	}
	defer rows.Close()
	out := []madspark.Event{}
	for rows.Next() {
		var (
			e        madspark.Event
			typ      string
			progress int32
			data     *string
			created  pgtype.Timestamptz
		)
		if err := rows.Scan(&e.RunID, &e.Seq, &typ, &e.Stage, &progress, &e.Message, &data, &created); err != nil {
			return nil, fmt.Errorf("postgres: events of run %q: %w", runID, err)
		}
		e.Type, e.Progress, e.Data, e.Time = madspark.EventType(typ), int(progress), rawJSON(data), scannedTime(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: events of run %q: %w", runID, err)
	}
	return out, nil
}

// ListenEvents calls notify with the run ID of every event appended to this
// database, by any process, as its transaction commits, until ctx is done.
// It holds one connection of the pool (LISTEN needs a session) and returns
// ctx's error, or the error that broke the connection; the caller decides
// whether to listen again. ready, if not nil, is called once the connection
// listens.
func (db *DB) ListenEvents(ctx context.Context, ready func(), notify func(runID string)) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: listen: %w", err)
	}
	// The session's LISTEN must not outlive this call: the connection is
	// closed rather than returned to the pool.
	defer func() {
		pc := conn.Hijack()
		_ = pc.Close(context.Background())
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+EventChannel); err != nil {
		return fmt.Errorf("postgres: listen: %w", err)
	}
	if ready != nil {
		ready()
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("postgres: listen: %w", err)
		}
		notify(n.Payload)
	}
}
