package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/madspark/madspark"
)

// RememberIdeas adds ideas to their memories in one transaction; an idea
// already stored under the same memory and name is left as it was. If any
// idea's Data is not valid JSON, none is added.
func (db *DB) RememberIdeas(ctx context.Context, ideas []madspark.RememberedIdea) error {
	const op = "remember ideas"
	for _, it := range ideas {
		if !json.Valid(it.Data) {
			return fmt.Errorf("postgres: %s: idea %q: data is not valid JSON", op, it.Name)
		}
	}
	if len(ideas) == 0 {
		return nil
	}
	return db.inTx(ctx, op, func(tx pgx.Tx) error {
		// The lock conflicts with itself but not with readers, so that
		// writers take turns and MAX(seq)+1 below is unique within a
		// memory. Remembering ideas is rare and quick.
		if _, err := tx.Exec(ctx, `LOCK TABLE remembered_ideas IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		for _, it := range ideas {
			if _, err := tx.Exec(ctx, `
				INSERT INTO remembered_ideas (memory, name, data, run_id, iteration, accepted_at, seq)
				VALUES ($1, $2, $3, $4, $5, $6, (SELECT COALESCE(MAX(seq), 0) + 1 FROM remembered_ideas WHERE memory = $1))
				ON CONFLICT (memory, name) DO NOTHING`,
				it.Memory, it.Name, string(it.Data), it.RunID, int64(it.Iteration), dbTime(it.AcceptedAt)); err != nil {
				return fmt.Errorf("idea %q: %w", it.Name, err)
			}
		}
		return nil
	})
}

// RememberedIdeas returns a memory's ideas, oldest first. The result is
// empty, not nil, when the memory has none.
func (db *DB) RememberedIdeas(ctx context.Context, memory string) ([]madspark.RememberedIdea, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT memory, name, data, run_id, iteration, accepted_at
		FROM remembered_ideas WHERE memory = $1 ORDER BY seq`, memory)
	if err != nil {
		return nil, fmt.Errorf("postgres: remembered ideas: %w", err)
	}
	defer rows.Close()
	out := []madspark.RememberedIdea{}
	for rows.Next() {
		var (
			it        madspark.RememberedIdea
			data      string
			iteration int64
			at        pgtype.Timestamptz
		)
		if err := rows.Scan(&it.Memory, &it.Name, &data, &it.RunID, &iteration, &at); err != nil {
			return nil, fmt.Errorf("postgres: remembered ideas: %w", err)
		}
		it.Data = json.RawMessage(data)
		it.Iteration = int(iteration)
		it.AcceptedAt = scannedTime(at)
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: remembered ideas: %w", err)
	}
	return out, nil
}
