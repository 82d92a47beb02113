package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/madspark/madspark"
)

// CreateBatch stores a new batch and its items. b.ID must be set and not
// used yet; a zero b.CreatedAt is set to the current time.
func (s *Store) CreateBatch(ctx context.Context, b *madspark.Batch) error {
	const op = "create batch"
	if b == nil || b.ID == "" {
		return s.fail(errors.New("batch ID is empty"), "%s", op)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = s.now()
	}
	rows := make([][]any, len(b.Items))
	for i, it := range b.Items {
		tags, err := encode("tags", it.Tags)
		if err != nil {
			return s.fail(err, "%s %q", op, b.ID)
		}
		rows[i] = []any{b.ID, i, it.Line, it.Topic, tags, it.RunID, it.Error}
	}
	return s.write(ctx, op, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO batches (id, pipeline, source, created_at) VALUES ($1, $2, $3, $4)`,
			b.ID, b.Pipeline, b.Source, s.d.Time(b.CreatedAt)); err != nil {
			return fmt.Errorf("%q: %w", b.ID, err)
		}
		if err := s.insertRows(ctx, tx, "batch_items", []string{"batch_id", "idx", "line", "topic", "tags", "run_id", "error"}, rows); err != nil {
			return fmt.Errorf("%q: items: %w", b.ID, err)
		}
		return nil
	})
}

// Batch returns the batch id with its items in order, each with the current
// status of its run, or an error wrapping madspark.ErrNotFound.
func (s *Store) Batch(ctx context.Context, id string) (*madspark.Batch, error) {
	b := &madspark.Batch{}
	err := s.read.QueryRowContext(ctx, `SELECT id, pipeline, source, created_at FROM batches WHERE id = $1`, id).
		Scan(&b.ID, &b.Pipeline, &b.Source, at{&b.CreatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, missing("batch", id)
	}
	if err == nil {
		b.Items, err = all(ctx, s.read, func(row scanner) (it madspark.BatchItem, err error) {
			return it, row.Scan(&it.Line, &it.Topic, decoded{&it.Tags}, &it.RunID, &it.Error, &it.Status)
		}, `SELECT i.line, i.topic, i.tags, i.run_id, i.error, COALESCE(r.status, '')
FROM batch_items i LEFT JOIN runs r ON r.id = i.run_id WHERE i.batch_id = $1 ORDER BY i.idx`, id)
	}
	if err != nil {
		return nil, s.fail(err, "batch %q", id)
	}
	return b, nil
}

// Batches returns at most limit batches, newest first, after skipping
// offset of them, each with its items.
func (s *Store) Batches(ctx context.Context, limit, offset int) ([]*madspark.Batch, error) {
	ids, err := all(ctx, s.read, func(row scanner) (id string, err error) { return id, row.Scan(&id) },
		`SELECT id FROM batches ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2`, limit, offset)
	if err != nil {
		return nil, s.fail(err, "batches")
	}
	out := make([]*madspark.Batch, 0, len(ids))
	for _, id := range ids {
		b, err := s.Batch(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// GetCache returns the value stored under key, and whether there was one.
func (s *Store) GetCache(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := s.read.QueryRowContext(ctx, `SELECT value FROM llm_cache WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.fail(err, "get cache")
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// PutCache stores value under key, replacing any earlier value, and stamps
// it with the current time (see Prune).
func (s *Store) PutCache(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return s.write(ctx, "put cache", func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO llm_cache (key, value, created_at) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`, key, value, s.d.Time(time.Now()))
		return err
	})
}

// Prune deletes the cache entries stored (or last replaced) before
// olderThan and returns how many it deleted. Runs and steps are not
// touched.
func (s *Store) Prune(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "prune cache", func(tx *Tx) (err error) {
		n, err = affected(tx.ExecContext(ctx, `DELETE FROM llm_cache WHERE created_at < $1`, s.d.Time(olderThan)))
		return err
	})
	return n, err
}

// RememberIdeas adds ideas to their memories in one transaction; an idea
// already stored under the same memory and name is left as it was. If any
// idea's Data is not valid JSON, none is added.
func (s *Store) RememberIdeas(ctx context.Context, ideas []madspark.RememberedIdea) error {
	const op = "remember ideas"
	for _, it := range ideas {
		if !json.Valid(it.Data) {
			return s.fail(fmt.Errorf("idea %q: data is not valid JSON", it.Name), "%s", op)
		}
	}
	if len(ideas) == 0 {
		return nil
	}
	return s.write(ctx, op, func(tx *Tx) error {
		// Writers take turns, so that MAX(seq)+1 is unique within a memory.
		if s.d.TableLock != nil {
			if _, err := tx.ExecContext(ctx, s.d.TableLock("remembered_ideas")); err != nil {
				return err
			}
		}
		for _, it := range ideas {
			if _, err := tx.ExecContext(ctx, `INSERT INTO remembered_ideas (memory, name, data, run_id, iteration, accepted_at, seq)
VALUES ($1, $2, $3, $4, $5, $6, (SELECT COALESCE(MAX(seq), 0) + 1 FROM remembered_ideas WHERE memory = $1))
ON CONFLICT (memory, name) DO NOTHING`, it.Memory, it.Name, string(it.Data), it.RunID, it.Iteration, s.d.Time(it.AcceptedAt)); err != nil {
				return fmt.Errorf("idea %q: %w", it.Name, err)
			}
		}
		return nil
	})
}

// RememberedIdeas returns a memory's ideas, oldest first. The result is
// empty, not nil, when the memory has none.
func (s *Store) RememberedIdeas(ctx context.Context, memory string) ([]madspark.RememberedIdea, error) {
	ideas, err := all(ctx, s.read, func(row scanner) (it madspark.RememberedIdea, err error) {
		return it, row.Scan(&it.Memory, &it.Name, raw{&it.Data}, &it.RunID, &it.Iteration, at{&it.AcceptedAt})
	}, `SELECT memory, name, data, run_id, iteration, accepted_at FROM remembered_ideas WHERE memory = $1 ORDER BY seq`, memory)
	return ideas, s.fail(err, "remembered ideas")
}
