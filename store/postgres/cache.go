package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// GetCache returns the value stored under key, and whether there was one.
func (db *DB) GetCache(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := db.pool.QueryRow(ctx, `SELECT value FROM llm_cache WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("postgres: get cache: %w", err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// PutCache stores value under key, replacing any earlier value, and stamps
// it with the current time (see Prune).
func (db *DB) PutCache(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO llm_cache (key, value, created_at) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`,
		key, value, dbTime(time.Now()))
	if err != nil {
		return fmt.Errorf("postgres: put cache: %w", err)
	}
	return nil
}

// Prune deletes the cache entries stored (or last replaced) before
// olderThan and returns how many it deleted. Runs and steps are not
// touched.
func (db *DB) Prune(ctx context.Context, olderThan time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM llm_cache WHERE created_at < $1`, dbTime(olderThan))
	if err != nil {
		return 0, fmt.Errorf("postgres: prune cache: %w", err)
	}
	return tag.RowsAffected(), nil
}
