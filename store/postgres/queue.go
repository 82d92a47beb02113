package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

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
		return fmt.Errorf("postgres: %s: batch ID is empty", op)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = dbTime(time.Now())
	}
	return db.inTx(ctx, op, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO batches (id, pipeline, source, created_at) VALUES ($1, $2, $3, $4)`,
			b.ID, b.Pipeline, b.Source, dbTime(b.CreatedAt)); err != nil {
			return fmt.Errorf("%q: %w", b.ID, err)
		}
		rows := make([][]any, len(b.Items))
		for i, it := range b.Items {
			tags, err := json.Marshal(it.Tags)
			if err != nil {
				return err
			}
			rows[i] = []any{b.ID, int32(i), int64(it.Line), it.Topic, string(tags), it.RunID, it.Error}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_items"},
			[]string{"batch_id", "idx", "line", "topic", "tags", "run_id", "error"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("%q: items: %w", b.ID, err)
		}
		return nil
	})
}

// Batch returns the batch id with its items in order, each with the current
// status of its run, or an error wrapping madspark.ErrNotFound.
func (db *DB) Batch(ctx context.Context, id string) (*madspark.Batch, error) {
	b := &madspark.Batch{Items: []madspark.BatchItem{}}
	var created pgtype.Timestamptz
	err := db.pool.QueryRow(ctx, `SELECT id, pipeline, source, created_at FROM batches WHERE id = $1`, id).
		Scan(&b.ID, &b.Pipeline, &b.Source, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("batch %q: %w", id, madspark.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: batch %q: %w", id, err)
	}
	b.CreatedAt = scannedTime(created)
	rows, err := db.pool.Query(ctx, `SELECT i.line, i.topic, i.tags, i.run_id, i.error, COALESCE(r.status, '')
FROM batch_items i LEFT JOIN runs r ON r.id = i.run_id
WHERE i.batch_id = $1 ORDER BY i.idx`, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: batch %q: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			it           madspark.BatchItem
			line         int64
			tags, status string
		)
		if err := rows.Scan(&line, &it.Topic, &tags, &it.RunID, &it.Error, &status); err != nil {
			return nil, fmt.Errorf("postgres: batch %q: %w", id, err)
		}
		if err := json.Unmarshal([]byte(tags), &it.Tags); err != nil {
			return nil, fmt.Errorf("postgres: batch %q: tags: %w", id, err)
		}
		it.Line, it.Status = int(line), madspark.RunStatus(status)
		b.Items = append(b.Items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: batch %q: %w", id, err)
	}
	return b, nil
}

// Batches returns at most limit batches, newest first, after skipping
// offset of them, each with its items.
func (db *DB) Batches(ctx context.Context, limit, offset int) ([]*madspark.Batch, error) {
	rows, err := db.pool.Query(ctx, `SELECT id FROM batches ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2`, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("postgres: batches: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: batches: %w", err)
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

// RenewLease records that worker l.ID is alive for ttl from now by the
// database's clock (so that workers on machines whose clocks differ agree),
// creating its lease if needed.
func (db *DB) RenewLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	const op = "renew lease"
	if l == nil || l.ID == "" {
		return fmt.Errorf("postgres: %s: worker ID is empty", op)
	}
	var started, expires pgtype.Timestamptz
	err := db.pool.QueryRow(ctx, `INSERT INTO worker_leases (id, host, pid, started_at, expires_at)
VALUES ($1, $2, $3, now(), now() + $4 * interval '1 microsecond')
ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, expires_at = excluded.expires_at
RETURNING started_at, expires_at`, l.ID, l.Host, int64(l.PID), ttl.Microseconds()).Scan(&started, &expires)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, l.ID, err)
	}
	l.StartedAt, l.ExpiresAt, l.Expired = scannedTime(started), scannedTime(expires), false
	return nil
}

// ExtendLease records that worker l.ID is alive for ttl from now by the
// database's clock, if its lease is still there and has not expired;
// otherwise it returns an error wrapping madspark.ErrLeaseLost.
func (db *DB) ExtendLease(ctx context.Context, l *madspark.WorkerLease, ttl time.Duration) error {
	const op = "extend lease"
	if l == nil || l.ID == "" {
		return fmt.Errorf("postgres: %s: worker ID is empty", op)
	}
	var expires pgtype.Timestamptz
	err := db.pool.QueryRow(ctx, `UPDATE worker_leases SET expires_at = now() + $2 * interval '1 microsecond'
WHERE id = $1 AND expires_at >= now() RETURNING expires_at`, l.ID, ttl.Microseconds()).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s %q: %w", op, l.ID, madspark.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, l.ID, err)
	}
	l.ExpiresAt, l.Expired = scannedTime(expires), false
	return nil
}

// Leases returns every worker lease, oldest first, with Expired by the
// database's clock.
func (db *DB) Leases(ctx context.Context) ([]madspark.WorkerLease, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, host, pid, started_at, expires_at, expires_at < now()
FROM worker_leases ORDER BY started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: leases: %w", err)
	}
	defer rows.Close()
	out := []madspark.WorkerLease{}
	for rows.Next() {
		var (
			l                madspark.WorkerLease
			pid              int64
			started, expires pgtype.Timestamptz
		)
		if err := rows.Scan(&l.ID, &l.Host, &pid, &started, &expires, &l.Expired); err != nil {
			return nil, fmt.Errorf("postgres: leases: %w", err)
		}
		l.PID, l.StartedAt, l.ExpiresAt = int(pid), scannedTime(started), scannedTime(expires)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: leases: %w", err)
	}
	return out, nil
}

// DropLease removes worker id's lease, if there is one.
func (db *DB) DropLease(ctx context.Context, id string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM worker_leases WHERE id = $1`, id); err != nil {
		return fmt.Errorf("postgres: drop lease %q: %w", id, err)
	}
	return nil
}
