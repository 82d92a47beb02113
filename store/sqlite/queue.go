package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/madspark/madspark"
)

var (
	_ madspark.BatchStore = (*DB)(nil)
	_ madspark.LeaseStore = (*DB)(nil)
)

// CreateBatch stores a new batch and its items. b.ID must be set and not
// used yet; a zero b.CreatedAt is set to the current time.
func (db *DB) CreateBatch(ctx context.Context, b *madspark.Batch) error {
	const op = "create batch"
	if b == nil || b.ID == "" {
		return fmt.Errorf("sqlite: %s: batch ID is empty", op)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Now().UTC()
	}
	return db.write(ctx, op, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO batches (id, pipeline, source, created_at) VALUES (?, ?, ?, ?)`,
			b.ID, b.Pipeline, b.Source, formatTime(b.CreatedAt)); err != nil {
			return fmt.Errorf("%q: %w", b.ID, err)
		}
		for i, it := range b.Items {
			tags, err := tagsJSON(it.Tags)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO batch_items (batch_id, idx, line, topic, tags, run_id, error) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				b.ID, i, it.Line, it.Topic, tags, it.RunID, it.Error); err != nil {
				return fmt.Errorf("%q: item %d: %w", b.ID, i, err)
			}
		}
		return nil
	})
}

// Batch returns the batch id with its items in order, each with the current
// status of its run, or an error wrapping madspark.ErrNotFound.
func (db *DB) Batch(ctx context.Context, id string) (*madspark.Batch, error) {
	b := &madspark.Batch{Items: []madspark.BatchItem{}}
	var created sql.NullString
	err := db.r.QueryRowContext(ctx, `SELECT id, pipeline, source, created_at FROM batches WHERE id = ?`, id).
		Scan(&b.ID, &b.Pipeline, &b.Source, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("batch %q: %w", id, madspark.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: batch %q: %w", id, err)
	}
	if b.CreatedAt, err = parseTime(created); err != nil {
		return nil, fmt.Errorf("sqlite: batch %q: %w", id, err)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT i.line, i.topic, i.tags, i.run_id, i.error, COALESCE(r.status, '')
FROM batch_items i LEFT JOIN runs r ON r.id = i.run_id
WHERE i.batch_id = ? ORDER BY i.idx`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: batch %q: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var it madspark.BatchItem
		var tags, status string
		if err := rows.Scan(&it.Line, &it.Topic, &tags, &it.RunID, &it.Error, &status); err != nil {
			return nil, fmt.Errorf("sqlite: batch %q: %w", id, err)
		}
		if err := json.Unmarshal([]byte(tags), &it.Tags); err != nil {
			return nil, fmt.Errorf("sqlite: batch %q: tags: %w", id, err)
		}
		it.Status = madspark.RunStatus(status)
		b.Items = append(b.Items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: batch %q: %w", id, err)
	}
	return b, nil
}

// Batches returns at most limit batches, newest first, after skipping
// offset of them, each with its items.
func (db *DB) Batches(ctx context.Context, limit, offset int) ([]*madspark.Batch, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM batches ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("sqlite: batches: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: batches: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: batches: %w", err)
	}
	out := make([]*madspark.Batch, 0, len(ids))
	for _, id := range ids {
		b, err := db.Batch(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// tagsJSON returns tags as stored: a JSON array, or null for none.
func tagsJSON(tags []string) (string, error) {
	b, err := json.Marshal(tags)
	return string(b), err
}

// RenewLease records that worker l.ID is alive for ttl from now, creating
// its lease if needed. The clock is this machine's: SQLite is not shared
// between machines.
func (db *DB) RenewLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	const op = "renew lease"
	if l == nil || l.ID == "" {
		return fmt.Errorf("sqlite: %s: worker ID is empty", op)
	}
	now := time.Now().UTC()
	expires := now.Add(ttl)
	var started sql.NullString
	err := db.write(ctx, op, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO worker_leases (id, host, pid, started_at, expires_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, expires_at = excluded.expires_at
RETURNING started_at`, l.ID, l.Host, l.PID, formatTime(now), formatTime(expires)).Scan(&started)
	})
	if err != nil {
		return err
	}
	if l.StartedAt, err = parseTime(started); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	l.ExpiresAt, l.Expired = expires, false
	return nil
}

// ExtendLease records that worker l.ID is alive for ttl from now, if its
// lease is still there and has not expired; otherwise it returns an error
// wrapping madspark.ErrLeaseLost.
func (db *DB) ExtendLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	const op = "extend lease"
	if l == nil || l.ID == "" {
		return fmt.Errorf("sqlite: %s: worker ID is empty", op)
	}
	now := time.Now().UTC()
	expires := now.Add(ttl)
	var n int64
	err := db.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE worker_leases SET expires_at = ? WHERE id = ? AND expires_at >= ?`,
			formatTime(expires), l.ID, formatTime(now))
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
		return fmt.Errorf("sqlite: %s %q: %w", op, l.ID, madspark.ErrLeaseLost)
	}
	l.ExpiresAt, l.Expired = expires, false
	return nil
}

// Leases returns every worker lease, oldest first.
func (db *DB) Leases(ctx context.Context) ([]madspark.WorkerLease, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, host, pid, started_at, expires_at FROM worker_leases ORDER BY started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: leases: %w", err)
	}
	defer rows.Close()
	now := time.Now()
	out := []madspark.WorkerLease{}
	for rows.Next() {
		var (
			l                madspark.WorkerLease
			started, expires sql.NullString
		)
		if err := rows.Scan(&l.ID, &l.Host, &l.PID, &started, &expires); err != nil {
			return nil, fmt.Errorf("sqlite: leases: %w", err)
		}
		var errS, errE error
		l.StartedAt, errS = parseTime(started)
		l.ExpiresAt, errE = parseTime(expires)
		if err := errors.Join(errS, errE); err != nil {
			return nil, fmt.Errorf("sqlite: leases: %w", err)
		}
		l.Expired = l.ExpiresAt.Before(now)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: leases: %w", err)
	}
	return out, nil
}

// DropLease removes worker id's lease, if there is one.
func (db *DB) DropLease(ctx context.Context, id string) error {
	return db.write(ctx, "drop lease", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM worker_leases WHERE id = ?`, id)
		return err
	})
}
