package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// GetCache returns the value stored under key, and whether there was one.
func (db *DB) GetCache(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := db.r.QueryRowContext(ctx, `SELECT value FROM llm_cache WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: get cache: %w", err)
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
	return db.write(ctx, "put cache", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO llm_cache (key, value, created_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`,
			key, value, formatTime(time.Now()))
		return err
	})
}

// Prune deletes the cache entries stored (or last replaced) before
// olderThan and returns how many it deleted. Runs and steps are not
// touched.
func (db *DB) Prune(ctx context.Context, olderThan time.Time) (int64, error) {
	var n int64
	err := db.write(ctx, "prune cache", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM llm_cache WHERE created_at < ?`, formatTime(olderThan))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
