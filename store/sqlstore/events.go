package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/madspark/madspark"
)

// AppendEvent stores e as the next event of run e.RunID, setting e.Seq, and
// e.Time when it is zero. It returns an error wrapping madspark.ErrNotFound
// when the run does not exist.
func (s *Store) AppendEvent(ctx context.Context, e *madspark.Event) error {
	const op = "append event"
	add, err := s.appendEvent(ctx, op, e)
	if err != nil {
		return err
	}
	return s.write(ctx, op, add)
}

// appendEvent checks and encodes e, and returns the write that stores it
// and sets e.Seq and e.Time.
func (s *Store) appendEvent(ctx context.Context, op string, e *madspark.Event) (func(tx *Tx) error, error) {
	if e == nil || e.RunID == "" || e.Type == "" {
		return nil, s.fail(errors.New("run ID or type is empty"), "%s", op)
	}
	data, err := jsonArg("data", e.Data)
	if err != nil {
		return nil, s.fail(err, "%s of run %q", op, e.RunID)
	}
	at := s.kept(e.Time)
	if at.IsZero() {
		at = s.now()
	}
	return func(tx *Tx) error {
		// Holding the run's row makes the events of a run append one at a
		// time, so that MAX(seq)+1 is unique.
		if err := s.lockRun(ctx, tx, e.RunID); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO run_events (run_id, seq, type, stage, progress, message, data, created_at)
VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = $1), $2, $3, $4, $5, $6, $7)
RETURNING seq`, e.RunID, string(e.Type), e.Stage, e.Progress, e.Message, data, s.d.Time(at)).Scan(&seq); err != nil {
			return fmt.Errorf("of run %q: %w", e.RunID, err)
		}
		if s.d.Notify != "" {
			if _, err := tx.ExecContext(ctx, s.d.Notify, e.RunID); err != nil {
				return fmt.Errorf("of run %q: %w", e.RunID, err)
			}
		}
		e.Seq, e.Time = seq, at
		return nil
	}, nil
}

// Events returns the events of run runID after sequence number afterSeq, in
// order, at most limit of them (0 or less means 500; capped at 1000).
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64, n int) ([]madspark.Event, error) {
	return s.events(ctx, runID, `AND seq > $2 ORDER BY seq LIMIT $3`, afterSeq, limit(n, defaultEventLimit))
}

// LastEvent returns the latest event of run runID, or nil when it has none.
func (s *Store) LastEvent(ctx context.Context, runID string) (*madspark.Event, error) {
	evs, err := s.events(ctx, runID, `ORDER BY seq DESC LIMIT 1`)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return &evs[0], nil
}

// events reads the events of run runID that the rest of the query selects,
// with args from $2.
func (s *Store) events(ctx context.Context, runID, rest string, args ...any) ([]madspark.Event, error) {
	evs, err := all(ctx, s.read, func(row scanner) (e madspark.Event, err error) {
		return e, row.Scan(&e.RunID, &e.Seq, &e.Type, &e.Stage, &e.Progress, &e.Message, raw{&e.Data}, at{&e.Time})
	}, `SELECT run_id, seq, type, stage, progress, message, data, created_at
FROM run_events WHERE run_id = $1 `+rest, append([]any{runID}, args...)...)
	return evs, s.fail(err, "events of run %q", runID)
}
