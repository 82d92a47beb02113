package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/madspark/madspark"
)

var _ madspark.BookmarkStore = (*DB)(nil)

// bookmarkColumns are the columns scanBookmark reads, in order.
const bookmarkColumns = `id, run_id, candidate_index, idea_text, improved_idea, topic, context, score, improved_score, tags, notes, metadata, created_at`

// CreateBookmark stores a new bookmark. b.ID must be set; a bookmark with
// the same ID gives an error wrapping madspark.ErrExists. A zero
// b.CreatedAt is set to the current time (truncated to microseconds) and
// nil b.Tags to empty, in *b as well as in the store; repeated tags are
// dropped.
func (db *DB) CreateBookmark(ctx context.Context, b *madspark.Bookmark) error {
	const op = "create bookmark"
	if b == nil || b.ID == "" {
		return fmt.Errorf("postgres: %s: bookmark ID is empty", op)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = dbTime(time.Now())
	}
	b.Tags = uniqueTags(b.Tags)
	tags, err := json.Marshal(b.Tags)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, b.ID, err)
	}
	meta, err := json.Marshal(b.Metadata)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, b.ID, err)
	}
	err = db.inTx(ctx, op, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO bookmarks (`+bookmarkColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
			b.ID, b.RunID, int32(b.CandidateIndex), b.IdeaText, b.ImprovedIdea, b.Topic, b.Context, b.Score, b.ImprovedScore,
			string(tags), b.Notes, string(meta), dbTime(b.CreatedAt))
		if err != nil {
			return fmt.Errorf("%q: %w", b.ID, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("bookmark %q: %w", b.ID, madspark.ErrExists)
		}
		for _, t := range b.Tags {
			if _, err := tx.Exec(ctx, `INSERT INTO bookmark_tags (bookmark_id, tag) VALUES ($1, $2)`, b.ID, t); err != nil {
				return fmt.Errorf("%q: tag %q: %w", b.ID, t, err)
			}
		}
		return nil
	})
	return err
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
func scanBookmark(row pgx.Row) (*madspark.Bookmark, error) {
	var (
		b          madspark.Bookmark
		idx        int32
		tags, meta string
		created    pgtype.Timestamptz
	)
	if err := row.Scan(&b.ID, &b.RunID, &idx, &b.IdeaText, &b.ImprovedIdea, &b.Topic, &b.Context,
		&b.Score, &b.ImprovedScore, &tags, &b.Notes, &meta, &created); err != nil {
		return nil, err
	}
	b.CandidateIndex = int(idx)
	if err := json.Unmarshal([]byte(tags), &b.Tags); err != nil {
		return nil, fmt.Errorf("bookmark %q: tags: %w", b.ID, err)
	}
	if b.Tags == nil {
		b.Tags = []string{}
	}
	if err := json.Unmarshal([]byte(meta), &b.Metadata); err != nil {
		return nil, fmt.Errorf("bookmark %q: metadata: %w", b.ID, err)
	}
	b.CreatedAt = scannedTime(created)
	return &b, nil
}

// Bookmark returns the bookmark with the given ID, or an error wrapping
// madspark.ErrNotFound.
func (db *DB) Bookmark(ctx context.Context, id string) (*madspark.Bookmark, error) {
	b, err := scanBookmark(db.pool.QueryRow(ctx, `SELECT `+bookmarkColumns+` FROM bookmarks WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("bookmark %q: %w", id, madspark.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: bookmark %q: %w", id, err)
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
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if tags := uniqueTags(f.Tags); len(tags) > 0 {
		where = append(where, `id IN (SELECT bookmark_id FROM bookmark_tags WHERE tag = ANY(`+arg(tags)+`)
    GROUP BY bookmark_id HAVING COUNT(*) = `+arg(int64(len(tags)))+`)`)
	}
	if f.Query != "" {
		q := arg("%" + likeEscape(f.Query) + "%")
		var ors []string
		for _, col := range []string{"topic", "context", "idea_text", "improved_idea"} {
			ors = append(ors, `lower(`+col+`) LIKE lower(`+q+`) ESCAPE '\'`)
		}
		where = append(where, "("+strings.Join(ors, " OR ")+")")
	}
	if f.RunID != "" {
		where = append(where, `run_id = `+arg(f.RunID))
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
	var total int64
	if err := db.pool.QueryRow(ctx, `SELECT COUNT(*) FROM bookmarks`+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("postgres: list bookmarks: %w", err)
	}
	q := `SELECT ` + bookmarkColumns + ` FROM bookmarks` + cond +
		` ORDER BY created_at DESC, id DESC LIMIT ` + arg(int64(limit)) + ` OFFSET ` + arg(int64(max(f.Offset, 0)))
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: list bookmarks: %w", err)
	}
	defer rows.Close()
	out := []*madspark.Bookmark{}
	for rows.Next() {
		b, err := scanBookmark(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("postgres: list bookmarks: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("postgres: list bookmarks: %w", err)
	}
	return out, int(total), nil
}

// DeleteBookmark removes the bookmark with the given ID, or returns an
// error wrapping madspark.ErrNotFound.
func (db *DB) DeleteBookmark(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM bookmarks WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete bookmark %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("bookmark %q: %w", id, madspark.ErrNotFound)
	}
	return nil
}

// UpdateBookmark sets the tags (repeats dropped) and notes of the bookmark
// with the given ID and returns it as stored, or returns an error wrapping
// madspark.ErrNotFound.
func (db *DB) UpdateBookmark(ctx context.Context, id string, tags []string, notes string) (*madspark.Bookmark, error) {
	const op = "update bookmark"
	tags = uniqueTags(tags)
	enc, err := json.Marshal(tags)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s %q: %w", op, id, err)
	}
	err = db.inTx(ctx, op, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE bookmarks SET tags = $1, notes = $2 WHERE id = $3`, string(enc), notes, id)
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("bookmark %q: %w", id, madspark.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM bookmark_tags WHERE bookmark_id = $1`, id); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		for _, t := range tags {
			if _, err := tx.Exec(ctx, `INSERT INTO bookmark_tags (bookmark_id, tag) VALUES ($1, $2)`, id, t); err != nil {
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
