package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/madspark/madspark"
)

// bookmarkColumns are the columns scanBookmark reads, in order.
const bookmarkColumns = `id, run_id, candidate_index, idea_text, improved_idea, topic, context, score, improved_score, tags, notes, metadata, created_at`

// CreateBookmark stores a new bookmark. b.ID must be set; a bookmark with
// the same ID gives an error wrapping madspark.ErrExists. A zero
// b.CreatedAt is set to the current time and nil b.Tags to empty, in *b as
// well as in the store; repeated tags are dropped.
func (s *Store) CreateBookmark(ctx context.Context, b *madspark.Bookmark) error {
	const op = "create bookmark"
	if b == nil || b.ID == "" {
		return s.fail(errors.New("bookmark ID is empty"), "%s", op)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = s.now()
	}
	b.Tags = uniqueTags(b.Tags)
	tags, err := encode("tags", b.Tags)
	var meta string
	if err == nil {
		meta, err = encode("metadata", b.Metadata)
	}
	if err != nil {
		return s.fail(err, "%s %q", op, b.ID)
	}
	return s.write(ctx, op, func(tx *Tx) error {
		n, err := affected(tx.ExecContext(ctx, `INSERT INTO bookmarks (`+bookmarkColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
			b.ID, b.RunID, b.CandidateIndex, b.IdeaText, b.ImprovedIdea, b.Topic, b.Context, b.Score, b.ImprovedScore,
			tags, b.Notes, meta, s.d.Time(b.CreatedAt)))
		if err != nil {
			return fmt.Errorf("%q: %w", b.ID, err)
		}
		if n == 0 {
			return fmt.Errorf("bookmark %q: %w", b.ID, madspark.ErrExists)
		}
		return tagBookmark(ctx, tx, b.ID, b.Tags)
	})
}

// tagBookmark indexes the tags of bookmark id, in tx.
func tagBookmark(ctx context.Context, tx *Tx, id string, tags []string) error {
	for _, t := range tags {
		if _, err := tx.ExecContext(ctx, `INSERT INTO bookmark_tags (bookmark_id, tag) VALUES ($1, $2)`, id, t); err != nil {
			return fmt.Errorf("%q: tag %q: %w", id, t, err)
		}
	}
	return nil
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
func scanBookmark(row scanner) (*madspark.Bookmark, error) {
	var b madspark.Bookmark
	if err := row.Scan(&b.ID, &b.RunID, &b.CandidateIndex, &b.IdeaText, &b.ImprovedIdea, &b.Topic, &b.Context,
		&b.Score, &b.ImprovedScore, decoded{&b.Tags}, &b.Notes, decoded{&b.Metadata}, at{&b.CreatedAt}); err != nil {
		return nil, err
	}
	if b.Tags == nil {
		b.Tags = []string{}
	}
	return &b, nil
}

// Bookmark returns the bookmark with the given ID, or an error wrapping
// madspark.ErrNotFound.
func (s *Store) Bookmark(ctx context.Context, id string) (*madspark.Bookmark, error) {
	return byID(ctx, s, scanBookmark, "bookmark", `SELECT `+bookmarkColumns+` FROM bookmarks WHERE id = $1`, id)
}

// Bookmarks lists the bookmarks that match f, newest first, and how many
// match in all.
func (s *Store) Bookmarks(ctx context.Context, f madspark.BookmarkFilter) ([]*madspark.Bookmark, int, error) {
	var w where
	if tags := uniqueTags(f.Tags); len(tags) > 0 {
		marks := make([]string, len(tags))
		for i, t := range tags {
			w.args = append(w.args, t)
			marks[i] = fmt.Sprintf("$%d", len(w.args))
		}
		w.add(`id IN (SELECT bookmark_id FROM bookmark_tags WHERE tag IN (`+strings.Join(marks, ", ")+`)
    GROUP BY bookmark_id HAVING COUNT(*) = ?)`, len(tags))
	}
	if f.Query != "" {
		w.add(`(lower(topic) LIKE lower(?) ESCAPE '\' OR lower(context) LIKE lower(?) ESCAPE '\'
    OR lower(idea_text) LIKE lower(?) ESCAPE '\' OR lower(improved_idea) LIKE lower(?) ESCAPE '\')`, likeArg(f.Query))
	}
	if f.RunID != "" {
		w.add(`run_id = ?`, f.RunID)
	}
	var total int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM bookmarks`+w.sql(), w.args...).Scan(&total)
	var out []*madspark.Bookmark
	if err == nil {
		q := `SELECT ` + bookmarkColumns + ` FROM bookmarks` + w.sql() + w.page(limit(f.Limit, defaultLimit), f.Offset)
		out, err = all(ctx, s.read, scanBookmark, q, w.args...)
	}
	if err != nil {
		return nil, 0, s.fail(err, "list bookmarks")
	}
	return out, total, nil
}

// DeleteBookmark removes the bookmark with the given ID, or returns an
// error wrapping madspark.ErrNotFound.
func (s *Store) DeleteBookmark(ctx context.Context, id string) error {
	return s.write(ctx, "delete bookmark", func(tx *Tx) error {
		return one(tx.ExecContext(ctx, `DELETE FROM bookmarks WHERE id = $1`, id))("bookmark", id)
	})
}

// UpdateBookmark sets the tags (repeats dropped) and notes of the bookmark
// with the given ID and returns it as stored, or returns an error wrapping
// madspark.ErrNotFound.
func (s *Store) UpdateBookmark(ctx context.Context, id string, tags []string, notes string) (*madspark.Bookmark, error) {
	const op = "update bookmark"
	tags = uniqueTags(tags)
	enc, err := encode("tags", tags)
	if err != nil {
		return nil, s.fail(err, "%s %q", op, id)
	}
	if err := s.write(ctx, op, func(tx *Tx) error {
		if err := one(tx.ExecContext(ctx, `UPDATE bookmarks SET tags = $1, notes = $2 WHERE id = $3`, enc, notes, id))("bookmark", id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM bookmark_tags WHERE bookmark_id = $1`, id); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		return tagBookmark(ctx, tx, id, tags)
	}); err != nil {
		return nil, err
	}
	return s.Bookmark(ctx, id)
}
