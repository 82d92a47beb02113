package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/madspark/madspark"
)

// TakeRunLease gives the lease of run l.RunID to l for ttl from now, by the
// database's clock, unless another token holds an unexpired one: that is a
// *madspark.RunHeldError.
func (db *DB) TakeRunLease(ctx context.Context, l *madspark.RunLease, ttl time.Duration) error {
	return takeRunLease(ctx, db.pool, "take run lease", l, ttl)
}

// takeRunLease gives the lease to l through q.
func takeRunLease(ctx context.Context, q querier, op string, l *madspark.RunLease, ttl time.Duration) error {
	if l == nil || l.RunID == "" || l.Token == "" {
		return fmt.Errorf("postgres: %s: run ID or token is empty", op)
	}
	var started, expires pgtype.Timestamptz
	err := q.QueryRow(ctx, `INSERT INTO run_leases AS cur (run_id, token, holder, host, pid, started_at, expires_at)
VALUES ($1, $2, $3, $4, $5, now(), now() + $6 * interval '1 microsecond')
ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, holder = excluded.holder, host = excluded.host, pid = excluded.pid,
  started_at = CASE WHEN cur.token = excluded.token THEN cur.started_at ELSE excluded.started_at END,
  expires_at = excluded.expires_at
WHERE cur.token = excluded.token OR cur.expires_at < now()
RETURNING started_at, expires_at`, l.RunID, l.Token, l.Holder, l.Host, l.PID, ttl.Microseconds()).Scan(&started, &expires)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23503": // foreign_key_violation: no such run
		return fmt.Errorf("postgres: %s %q: %w", op, l.RunID, madspark.ErrNotFound)
	case errors.Is(err, pgx.ErrNoRows):
		held := madspark.RunLease{RunID: l.RunID}
		var hs, he pgtype.Timestamptz
		err := q.QueryRow(ctx, `SELECT holder, host, pid, started_at, expires_at FROM run_leases WHERE run_id = $1`, l.RunID).
			Scan(&held.Holder, &held.Host, &held.PID, &hs, &he)
		if err != nil {
			return fmt.Errorf("postgres: %s %q: %w", op, l.RunID, err)
		}
		held.StartedAt, held.ExpiresAt = scannedTime(hs), scannedTime(he)
		return &madspark.RunHeldError{Lease: held}
	case err != nil:
		return fmt.Errorf("postgres: %s %q: %w", op, l.RunID, err)
	}
	l.StartedAt, l.ExpiresAt, l.Expired = scannedTime(started), scannedTime(expires), false
	return nil
}

// KeepRunLease renews the lease l.Token holds for ttl from now.
func (db *DB) KeepRunLease(ctx context.Context, l *madspark.RunLease, ttl time.Duration) error {
	const op = "keep run lease"
	var expires pgtype.Timestamptz
	err := db.pool.QueryRow(ctx, `UPDATE run_leases SET expires_at = now() + $3 * interval '1 microsecond'
WHERE run_id = $1 AND token = $2 RETURNING expires_at`, l.RunID, l.Token, ttl.Microseconds()).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s %q: %w", op, l.RunID, madspark.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, l.RunID, err)
	}
	l.ExpiresAt, l.Expired = scannedTime(expires), false
	return nil
}

// DropRunLease removes the lease if l.Token holds it.
func (db *DB) DropRunLease(ctx context.Context, l *madspark.RunLease) error {
	return dropRunLease(ctx, db.pool, l)
}

// dropRunLease removes the lease through q if l.Token holds it.
func dropRunLease(ctx context.Context, q querier, l *madspark.RunLease) error {
	if _, err := q.Exec(ctx, `DELETE FROM run_leases WHERE run_id = $1 AND token = $2`, l.RunID, l.Token); err != nil {
		return fmt.Errorf("postgres: drop run lease %q: %w", l.RunID, err)
	}
	return nil
}

// RunLeases returns the leases of the runs recorded as running, oldest
// first, with Expired by the database's clock.
func (db *DB) RunLeases(ctx context.Context) ([]madspark.RunLease, error) {
	rows, err := db.pool.Query(ctx, `SELECT l.run_id, l.token, l.holder, l.host, l.pid, l.started_at, l.expires_at, l.expires_at < now()
FROM run_leases l JOIN runs r ON r.id = l.run_id WHERE r.status = $1 ORDER BY l.started_at, l.run_id`, string(madspark.RunRunning))
	if err != nil {
		return nil, fmt.Errorf("postgres: run leases: %w", err)
	}
	defer rows.Close()
	out := []madspark.RunLease{}
	for rows.Next() {
		var (
			l                madspark.RunLease
			pid              int64
			started, expires pgtype.Timestamptz
		)
		if err := rows.Scan(&l.RunID, &l.Token, &l.Holder, &l.Host, &pid, &started, &expires, &l.Expired); err != nil {
			return nil, fmt.Errorf("postgres: run leases: %w", err)
		}
		l.PID, l.StartedAt, l.ExpiresAt = int(pid), scannedTime(started), scannedTime(expires)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: run leases: %w", err)
	}
	return out, nil
}

// InterruptRun records run l.RunID as interrupted if it is running and
// l.Token still holds its lease.
func (db *DB) InterruptRun(ctx context.Context, l *madspark.RunLease, msg string) (bool, error) {
	done := false
	err := db.inTx(ctx, "interrupt run", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM run_leases WHERE run_id = $1 AND token = $2
AND EXISTS (SELECT 1 FROM runs WHERE id = $1 AND status = $3)`, l.RunID, l.Token, string(madspark.RunRunning))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET status = $2, error = $3 WHERE id = $1`,
			l.RunID, string(madspark.RunInterrupted), msg); err != nil {
			return err
		}
		done = true
		return nil
	})
	return done, err
}
