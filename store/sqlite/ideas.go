package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/madspark/madspark"
)

var _ madspark.IdeaStore = (*DB)(nil)

// RememberIdeas adds ideas to their memories in one transaction; an idea
// already stored under the same memory and name is left as it was.
func (db *DB) RememberIdeas(ctx context.Context, ideas []madspark.RememberedIdea) error {
	return db.write(ctx, "remember ideas", func(tx *sql.Tx) error {
		for _, it := range ideas {
			if !json.Valid(it.Data) {
				return fmt.Errorf("idea %q: data is not valid JSON", it.Name)
			}
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO remembered_ideas (memory, name, data, run_id, iteration, accepted_at, seq)
				VALUES (?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM remembered_ideas WHERE memory = ?))
				ON CONFLICT (memory, name) DO NOTHING`,
				it.Memory, it.Name, string(it.Data), it.RunID, it.Iteration, formatTime(it.AcceptedAt), it.Memory); err != nil {
				return fmt.Errorf("idea %q: %w", it.Name, err)
			}
		}
		return nil
	})
}

// RememberedIdeas returns a memory's ideas, oldest first.
func (db *DB) RememberedIdeas(ctx context.Context, memory string) ([]madspark.RememberedIdea, error) {
	rows, err := db.r.QueryContext(ctx, `
		SELECT memory, name, data, run_id, iteration, accepted_at
		FROM remembered_ideas WHERE memory = ? ORDER BY seq`, memory)
	if err != nil {
		return nil, fmt.Errorf("sqlite: remembered ideas: %w", err)
	}
	defer rows.Close()
	out := []madspark.RememberedIdea{}
	for rows.Next() {
		var it madspark.RememberedIdea
		var data string
		var at sql.NullString
		if err := rows.Scan(&it.Memory, &it.Name, &data, &it.RunID, &it.Iteration, &at); err != nil {
			return nil, fmt.Errorf("sqlite: remembered ideas: %w", err)
		}
		it.Data = json.RawMessage(data)
		if it.AcceptedAt, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("sqlite: remembered ideas: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: remembered ideas: %w", err)
	}
	return out, nil
}
