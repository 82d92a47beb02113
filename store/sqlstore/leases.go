package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/madspark/madspark"
)

// Leases are timed by the store's clock (see clock).

// TakeRunLease gives the lease of run l.RunID to l for ttl from now, unless
// another token holds an unexpired one: that is a *madspark.RunHeldError.
func (s *Store) TakeRunLease(ctx context.Context, l *madspark.RunLease, ttl time.Duration) error {
	const op = "take run lease"
	take, err := s.takeRunLease(ctx, op, l, ttl)
	if err != nil {
		return err
	}
	return s.write(ctx, op, take)
}

// takeRunLease checks l and returns the write that gives it the lease.
func (s *Store) takeRunLease(ctx context.Context, op string, l *madspark.RunLease, ttl time.Duration) (func(tx *Tx) error, error) {
	if l == nil || l.RunID == "" || l.Token == "" {
		return nil, s.fail(errors.New("run ID or token is empty"), "%s", op)
	}
	return func(tx *Tx) error {
		// The run, its lease if any, and the time.
		var cur madspark.RunLease
		var now time.Time
		err := tx.QueryRowContext(ctx, `SELECT COALESCE(l.token, ''), COALESCE(l.holder, ''), COALESCE(l.host, ''), COALESCE(l.pid, 0),
    l.started_at, l.expires_at, `+s.clockSQL()+` FROM runs r LEFT JOIN run_leases l ON l.run_id = r.id WHERE r.id = $1`, l.RunID).
			Scan(&cur.Token, &cur.Holder, &cur.Host, &cur.PID, at{&cur.StartedAt}, at{&cur.ExpiresAt}, at{&now})
		if errors.Is(err, sql.ErrNoRows) {
			return missing("run", l.RunID)
		}
		if now.IsZero() {
			now = s.now()
		}
		started, expires := now, s.kept(now.Add(ttl))
		if cur.Token == l.Token {
			started = cur.StartedAt
		}
		held := cur.Token != "" && cur.Token != l.Token && !cur.ExpiresAt.Before(now)
		if err == nil && !held {
			// The lease changes hands only if it is still as read.
			var n int64
			n, err = affected(tx.ExecContext(ctx, `INSERT INTO run_leases AS cur (run_id, token, holder, host, pid, started_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (run_id) DO UPDATE SET token = excluded.token, holder = excluded.holder, host = excluded.host, pid = excluded.pid,
  started_at = CASE WHEN cur.token = excluded.token THEN cur.started_at ELSE excluded.started_at END, expires_at = excluded.expires_at
WHERE cur.token = excluded.token OR cur.expires_at < $8`,
				l.RunID, l.Token, l.Holder, l.Host, l.PID, s.d.Time(started), s.d.Time(expires), s.d.Time(now)))
			if held = err == nil && n == 0; held {
				// Another process took it meanwhile.
				err = tx.QueryRowContext(ctx, `SELECT holder, host, pid, started_at, expires_at FROM run_leases WHERE run_id = $1`, l.RunID).
					Scan(&cur.Holder, &cur.Host, &cur.PID, at{&cur.StartedAt}, at{&cur.ExpiresAt})
			}
		}
		if err != nil {
			return fmt.Errorf("%q: %w", l.RunID, err)
		}
		if held {
			cur.RunID, cur.Token = l.RunID, ""
			return &madspark.RunHeldError{Lease: cur}
		}
		l.StartedAt, l.ExpiresAt, l.Expired = started, expires, false
		return nil
	}, nil
}

// clockSQL is SQL for the database's clock in a SELECT, or NULL where
// leases are timed by this process's clock.
func (s *Store) clockSQL() string {
	if s.d.Clock == "" {
		return "NULL"
	}
	return s.d.Clock
}

// clock returns the current time by the store's clock: the database's
// (Dialect.Clock), read with q, or else this process's.
func (s *Store) clock(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (time.Time, error) {
	if s.d.Clock == "" {
		return s.now(), nil
	}
	var t time.Time
	return t, q.QueryRowContext(ctx, `SELECT `+s.d.Clock).Scan(at{&t})
}

// KeepRunLease renews the lease l.Token holds for ttl from now.
func (s *Store) KeepRunLease(ctx context.Context, l *madspark.RunLease, ttl time.Duration) error {
	if l == nil || l.RunID == "" {
		return s.fail(errors.New("run ID is empty"), "keep run lease")
	}
	return s.extend(ctx, "keep run lease", l.RunID, ttl, &l.ExpiresAt, &l.Expired,
		`UPDATE run_leases SET expires_at = $1 WHERE run_id = $2 AND token = $3`, func(any) any { return l.Token })
}

// extend sets the expiry of the lease of id to ttl from now by query, of
// $1 the new expiry, $2 id and $3 cond(now), and then *expires; a lease it
// did not find is lost.
func (s *Store) extend(ctx context.Context, op, id string, ttl time.Duration, expires *time.Time, expired *bool,
	query string, cond func(now any) any) error {
	var t time.Time
	err := s.d.Write(ctx, func(tx *Tx) error {
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		t = s.kept(now.Add(ttl))
		n, err := affected(tx.ExecContext(ctx, query, s.d.Time(t), id, cond(s.d.Time(now))))
		if err == nil && n == 0 {
			err = madspark.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return s.fail(err, "%s %q", op, id)
	}
	*expires, *expired = t, false
	return nil
}

// DropRunLease removes the lease if l.Token holds it.
func (s *Store) DropRunLease(ctx context.Context, l *madspark.RunLease) error {
	return s.write(ctx, "drop run lease", func(tx *Tx) error { return dropRunLease(ctx, tx, l) })
}

// dropRunLease removes the lease in tx if l.Token holds it.
func dropRunLease(ctx context.Context, tx *Tx, l *madspark.RunLease) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM run_leases WHERE run_id = $1 AND token = $2`, l.RunID, l.Token)
	return err
}

// RunLeases returns the leases of the runs recorded as running, oldest
// first, with Expired by the store's clock.
func (s *Store) RunLeases(ctx context.Context) ([]madspark.RunLease, error) {
	now, err := s.clock(ctx, s.read)
	var ls []madspark.RunLease
	if err == nil {
		ls, err = all(ctx, s.read, func(row scanner) (l madspark.RunLease, err error) {
			err = row.Scan(&l.RunID, &l.Token, &l.Holder, &l.Host, &l.PID, at{&l.StartedAt}, at{&l.ExpiresAt})
			l.Expired = l.ExpiresAt.Before(now)
			return l, err
		}, `SELECT l.run_id, l.token, l.holder, l.host, l.pid, l.started_at, l.expires_at
FROM run_leases l JOIN runs r ON r.id = l.run_id WHERE r.status = $1 ORDER BY l.started_at, l.run_id`, string(madspark.RunRunning))
	}
	return ls, s.fail(err, "run leases")
}

// InterruptRun records run l.RunID as interrupted if it is running and
// l.Token still holds its lease.
func (s *Store) InterruptRun(ctx context.Context, l *madspark.RunLease, msg string) (bool, error) {
	done := false
	err := s.write(ctx, "interrupt run", func(tx *Tx) error {
		done = false
		n, err := affected(tx.ExecContext(ctx, `DELETE FROM run_leases WHERE run_id = $1 AND token = $2
AND EXISTS (SELECT 1 FROM runs WHERE id = $1 AND status = $3)`, l.RunID, l.Token, string(madspark.RunRunning)))
		if err == nil && n > 0 {
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = $1, error = $2 WHERE id = $3`, string(madspark.RunInterrupted), msg, l.RunID)
			done = err == nil
		}
		if err != nil {
			return fmt.Errorf("%q: %w", l.RunID, err)
		}
		return nil
	})
	return done, err
}

// RenewLease records that worker l.ID is alive for ttl from now, creating
// its lease if needed.
func (s *Store) RenewLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	const op = "renew lease"
	if l == nil || l.ID == "" {
		return s.fail(errors.New("worker ID is empty"), "%s", op)
	}
	var started, expires time.Time
	err := s.write(ctx, op, func(tx *Tx) error {
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		expires = s.kept(now.Add(ttl))
		return tx.QueryRowContext(ctx, `INSERT INTO worker_leases (id, host, pid, started_at, expires_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, expires_at = excluded.expires_at
RETURNING started_at`, l.ID, l.Host, l.PID, s.d.Time(now), s.d.Time(expires)).Scan(at{&started})
	})
	if err != nil {
		return err
	}
	l.StartedAt, l.ExpiresAt, l.Expired = started, expires, false
	return nil
}

// ExtendLease records that worker l.ID is alive for ttl from now, if its
// lease is still there and has not expired; otherwise it returns an error
// wrapping madspark.ErrLeaseLost.
func (s *Store) ExtendLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	if l == nil || l.ID == "" {
		return s.fail(errors.New("worker ID is empty"), "extend lease")
	}
	return s.extend(ctx, "extend lease", l.ID, ttl, &l.ExpiresAt, &l.Expired,
		`UPDATE worker_leases SET expires_at = $1 WHERE id = $2 AND expires_at >= $3`, func(now any) any { return now })
}

// Leases returns every worker lease, oldest first, with Expired by the
// store's clock.
func (s *Store) Leases(ctx context.Context) ([]madspark.WorkerLease, error) {
	now, err := s.clock(ctx, s.read)
	var ls []madspark.WorkerLease
	if err == nil {
		ls, err = all(ctx, s.read, func(row scanner) (l madspark.WorkerLease, err error) {
			err = row.Scan(&l.ID, &l.Host, &l.PID, at{&l.StartedAt}, at{&l.ExpiresAt})
			l.Expired = l.ExpiresAt.Before(now)
			return l, err
		}, `SELECT id, host, pid, started_at, expires_at FROM worker_leases ORDER BY started_at, id`)
	}
	return ls, s.fail(err, "leases")
}

// DropLease removes worker id's lease, if there is one.
func (s *Store) DropLease(ctx context.Context, id string) error {
	return s.write(ctx, "drop lease", func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM worker_leases WHERE id = $1`, id)
		return err
	})
}
