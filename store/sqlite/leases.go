package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/madspark/madspark"
)

// TakeRunLease gives the lease of run l.RunID to l for ttl from now, unless
// another token holds an unexpired one: that is a *madspark.RunHeldError.
func (db *DB) TakeRunLease(ctx context.Context, l *madspark.RunLease, ttl time.Duration) error {
	const op = "take run lease"
	take, err := takeRunLease(ctx, op, l, ttl)
	if err != nil {
		return err
	}
	return db.write(ctx, op, take)
}

// takeRunLease checks l and returns the write that gives it the lease.
func takeRunLease(ctx context.Context, op string, l *madspark.RunLease, ttl time.Duration) (func(tx *sql.Tx) error, error) {
	if l == nil || l.RunID == "" || l.Token == "" {
		return nil, fmt.Errorf("sqlite: %s: run ID or token is empty", op)
	}
	now := time.Now().UTC()
	return func(tx *sql.Tx) error {
		var cur madspark.RunLease
		var started, expires sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT token, holder, host, pid, started_at, expires_at FROM run_leases WHERE run_id = ?`, l.RunID).
			Scan(&cur.Token, &cur.Holder, &cur.Host, &cur.PID, &started, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("%q: %w", l.RunID, err)
		default:
			cur.RunID = l.RunID
			cur.StartedAt, _ = parseTime(started)
			cur.ExpiresAt, _ = parseTime(expires)
			if cur.Token != l.Token && !cur.ExpiresAt.Before(now) {
				cur.Token = ""
				return &madspark.RunHeldError{Lease: cur}
			}
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE id = ?`, l.RunID).Scan(&n); err != nil {
			return fmt.Errorf("%q: %w", l.RunID, err)
		}
		if n == 0 {
			return notFound(l.RunID)
		}
		if cur.Token != l.Token || l.StartedAt.IsZero() {
			l.StartedAt = now
		}
		l.ExpiresAt, l.Expired = now.Add(ttl), false
		_, err = tx.ExecContext(ctx, `INSERT INTO run_leases (run_id, token, holder, host, pid, started_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, holder = excluded.holder, host = excluded.host,
  pid = excluded.pid, started_at = excluded.started_at, expires_at = excluded.expires_at`,
			l.RunID, l.Token, l.Holder, l.Host, l.PID, formatTime(l.StartedAt), formatTime(l.ExpiresAt))
		if err != nil {
			return fmt.Errorf("%q: %w", l.RunID, err)
		}
		return nil
	}, nil
}

// KeepRunLease renews the lease l.Token holds for ttl from now.
func (db *DB) KeepRunLease(ctx context.Context, l *madspark.RunLease, ttl time.Duration) error {
	const op = "keep run lease"
	if l == nil || l.RunID == "" {
		return fmt.Errorf("sqlite: %s: run ID is empty", op)
	}
	expires := time.Now().UTC().Add(ttl)
	var n int64
	err := db.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE run_leases SET expires_at = ? WHERE run_id = ? AND token = ?`,
			formatTime(expires), l.RunID, l.Token)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("sqlite: %s %q: %w", op, l.RunID, madspark.ErrLeaseLost)
	}
	l.ExpiresAt, l.Expired = expires, false
	return nil
}

// DropRunLease removes the lease if l.Token holds it.
func (db *DB) DropRunLease(ctx context.Context, l *madspark.RunLease) error {
	return db.write(ctx, "drop run lease", func(tx *sql.Tx) error { return dropRunLease(ctx, tx, l) })
}

// dropRunLease removes the lease in tx if l.Token holds it.
func dropRunLease(ctx context.Context, tx *sql.Tx, l *madspark.RunLease) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM run_leases WHERE run_id = ? AND token = ?`, l.RunID, l.Token)
	return err
}

// RunLeases returns the leases of the runs recorded as running, oldest
// first, with Expired by this process's clock.
func (db *DB) RunLeases(ctx context.Context) ([]madspark.RunLease, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT l.run_id, l.token, l.holder, l.host, l.pid, l.started_at, l.expires_at
FROM run_leases l JOIN runs r ON r.id = l.run_id WHERE r.status = ? ORDER BY l.started_at, l.run_id`, string(madspark.RunRunning))
	if err != nil {
		return nil, fmt.Errorf("sqlite: run leases: %w", err)
	}
	defer rows.Close()
	now := time.Now()
	out := []madspark.RunLease{}
	for rows.Next() {
		var (
			l                madspark.RunLease
			started, expires sql.NullString
		)
		if err := rows.Scan(&l.RunID, &l.Token, &l.Holder, &l.Host, &l.PID, &started, &expires); err != nil {
			return nil, fmt.Errorf("sqlite: run leases: %w", err)
		}
		if l.StartedAt, err = parseTime(started); err != nil {
			return nil, fmt.Errorf("sqlite: run leases: %w", err)
		}
		if l.ExpiresAt, err = parseTime(expires); err != nil {
			return nil, fmt.Errorf("sqlite: run leases: %w", err)
		}
		l.Expired = l.ExpiresAt.Before(now)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: run leases: %w", err)
	}
	return out, nil
}

// InterruptRun records run l.RunID as interrupted if it is running and
// l.Token still holds its lease.
func (db *DB) InterruptRun(ctx context.Context, l *madspark.RunLease, msg string) (bool, error) {
	done := false
	err := db.write(ctx, "interrupt run", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM run_leases WHERE run_id = ? AND token = ?
AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND status = ?)`, l.RunID, l.Token, l.RunID, string(madspark.RunRunning))
		if err != nil {
			return fmt.Errorf("%q: %w", l.RunID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, error = ? WHERE id = ?`,
			string(madspark.RunInterrupted), msg, l.RunID); err != nil {
			return fmt.Errorf("%q: %w", l.RunID, err)
		}
		done = true
		return nil
	})
	return done, err
}
