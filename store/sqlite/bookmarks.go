package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/madspark/madspark"
)

var _ madspark.BookmarkStore = (*DB)(nil)

// bookmarkColumns are the columns scanBookmark reads, in order.
const bookmarkColumns = `id, run_id, candidate_index, idea_text, improved_idea, topic, context, score, improved_score, tags, notes, metadata, created_at`

// CreateBookmark stores a new bookmark. b.ID must be set; a bookmark with
// the same ID gives an error wrapping madspark.ErrExists. A zero
// b.CreatedAt is set to the current time and nil b.Tags to empty, in *b as
// well as in the store; repeated tags are dropped.
func (db *DB) CreateBookmark(ctx context.Context, b *madspark.Bookmark) error {
	const op = "create bookmark"
	if b == nil || b.ID == "" {
		return fmt.Errorf("sqlite: %s: bookmark ID is empty", op)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Now().UTC()
	}
	b.Tags = uniqueTags(b.Tags)
	tags, err := json.Marshal(b.Tags)
	if err != nil {
		return fmt.Errorf("sqlite: %s %q: %w", op, b.ID, err)
	}
	meta, err := json.Marshal(b.Metadata)
	if err != nil {
		return fmt.Errorf("sqlite: %s %q: %w", op, b.ID, err)
	}
	return db.write(ctx, op, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM bookmarks WHERE id = ?`, b.ID).Scan(&n); err != nil {
			return fmt.Errorf("%q: %w", b.ID, err)
		}
		if n > 0 {
			return fmt.Errorf("bookmark %q: %w", b.ID, madspark.ErrExists)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO bookmarks (`+bookmarkColumns+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.ID, b.RunID, b.CandidateIndex, b.IdeaText, b.ImprovedIdea, b.Topic, b.Context, b.Score, b.ImprovedScore,
			string(tags), b.Notes, string(meta), formatTime(b.CreatedAt)); err != nil {
			return fmt.Errorf("%q: %w", b.ID, err)
		}
		for _, t := range b.Tags {
			if _, err := tx.ExecContext(ctx, `INSERT INTO bookmark_tags (bookmark_id, tag) VALUES (?, ?)`, b.ID, t); err != nil {
				return fmt.Errorf("%q: tag %q: %w", b.ID, t, err)
			}
		}
		return nil
	})
}

// uniqueTags returns tags without repeats, in their first order; empty, not
// nil, for none.
func uniqueTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// scanBookmark reads a row of bookmarkColumns.
func scanBookmark(s scanner) (*madspark.Bookmark, error) {
	var (
		b          madspark.Bookmark
		tags, meta string
		created    sql.NullString
	)
	if err := s.Scan(&b.ID, &b.RunID, &b.CandidateIndex, &b.IdeaText, &b.ImprovedIdea, &b.Topic, &b.Context,
		&b.Score, &b.ImprovedScore, &tags, &b.Notes, &meta, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(tags), &b.Tags); err != nil {
		return nil, fmt.Errorf("bookmark %q: tags: %w", b.ID, err)
	}
	if b.Tags == nil {
		b.Tags = []string{}
	}
	if err := json.Unmarshal([]byte(meta), &b.Metadata); err != nil {
		return nil, fmt.Errorf("bookmark %q: metadata: %w", b.ID, err)
	}
	var err error
	if b.CreatedAt, err = parseTime(created); err != nil {
		return nil, fmt.Errorf("bookmark %q: %w", b.ID, err)
	}
	return &b, nil
}

// Bookmark returns the bookmark with the given ID, or an error wrapping
// madspark.ErrNotFound.
func (db *DB) Bookmark(ctx context.Context, id string) (*madspark.Bookmark, error) {
	b, err := scanBookmark(db.r.QueryRowContext(ctx, `SELECT `+bookmarkColumns+` FROM bookmarks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("bookmark %q: %w", id, madspark.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: bookmark %q: %w", id, err)
	}
	return b, nil
}

// Bookmarks lists the bookmarks that match f, newest first, and how many
// match in all.
func (db *DB) Bookmarks(ctx context.Context, f madspark.BookmarkFilter) ([]*madspark.Bookmark, int, error) {
	var (
		where []string
		args  []any
	)
	if tags := uniqueTags(f.Tags); len(tags) > 0 {
		where = append(where, `id IN (SELECT bookmark_id FROM bookmark_tags WHERE tag IN (?`+strings.Repeat(", ?", len(tags)-1)+`)
    GROUP BY bookmark_id HAVING COUNT(*) = ?)`)
		for _, t := range tags {
			args = append(args, t)
		}
		args = append(args, len(tags))
	}
	if f.Query != "" {
		where = append(where, `(topic LIKE ? ESCAPE '\' OR context LIKE ? ESCAPE '\' OR idea_text LIKE ? ESCAPE '\' OR improved_idea LIKE ? ESCAPE '\')`)
		q := "%" + likeEscape(f.Query) + "%"
		args = append(args, q, q, q, q)
	}
	if f.RunID != "" {
		where = append(where, `run_id = ?`)
		args = append(args, f.RunID)
	}
	cond := ""
	if len(where) > 0 {
		cond = ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
	var total int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM bookmarks`+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("sqlite: list bookmarks: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+bookmarkColumns+` FROM bookmarks`+cond+
		` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, append(args, limit, max(f.Offset, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: list bookmarks: %w", err)
	}
	defer rows.Close()
	out := []*madspark.Bookmark{}
	for rows.Next() {
		b, err := scanBookmark(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("sqlite: list bookmarks: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlite: list bookmarks: %w", err)
	}
	return out, total, nil
}

// DeleteBookmark removes the bookmark with the given ID, or returns an
// error wrapping madspark.ErrNotFound.
func (db *DB) DeleteBookmark(ctx context.Context, id string) error {
	return db.write(ctx, "delete bookmark", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM bookmarks WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		} else if n == 0 {
			return fmt.Errorf("bookmark %q: %w", id, madspark.ErrNotFound)
		}
		return nil
	})
}

// UpdateBookmark sets the tags (repeats dropped) and notes of the bookmark
// with the given ID and returns it as stored, or returns an error wrapping
// madspark.ErrNotFound.
func (db *DB) UpdateBookmark(ctx context.Context, id string, tags []string, notes string) (*madspark.Bookmark, error) {
	const op = "update bookmark"
	tags = uniqueTags(tags)
	enc, err := json.Marshal(tags)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, id, err)
	}
	err = db.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE bookmarks SET tags = ?, notes = ? WHERE id = ?`, string(enc), notes, id)
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		} else if n == 0 {
			return fmt.Errorf("bookmark %q: %w", id, madspark.ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM bookmark_tags WHERE bookmark_id = ?`, id); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		for _, t := range tags {
			if _, err := tx.ExecContext(ctx, `INSERT INTO bookmark_tags (bookmark_id, tag) VALUES (?, ?)`, id, t); err != nil {
				return fmt.Errorf("%q: tag %q: %w", id, t, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db.Bookmark(ctx, id)
}
