package bookmark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/structured"
)

// Entry is a bookmark as the seed's bookmarks.json keeps it, under its ID:
// id, idea_text, topic, context, score, improved_score, tags, timestamp
// (ISO 8601) and metadata {model_used, temperature, token_count}. The
// fields madspark adds (improved_idea, notes, run_id, candidate_index) are
// left out when empty, so that an export imports back whole.
type Entry struct {
	ID             string                    `json:"id" input:"line"`
	IdeaText       string                    `json:"idea_text"`
	ImprovedIdea   string                    `json:"improved_idea,omitempty"`
	Topic          string                    `json:"topic"`
	Context        string                    `json:"context"`
	Score          float64                   `json:"score"`
	ImprovedScore  float64                   `json:"improved_score"`
	Tags           []string                  `json:"tags" input:"line"`
	Timestamp      string                    `json:"timestamp" input:"line"`
	Metadata       madspark.BookmarkMetadata `json:"metadata"`
	Notes          string                    `json:"notes,omitempty"`
	RunID          string                    `json:"run_id,omitempty"`
	CandidateIndex int                       `json:"candidate_index,omitempty"`
}

// File is the seed's bookmarks.json: entries by ID.
type File map[string]Entry

// FieldError is a problem with one field of a bookmarks file, named in
// dotted form under the entry's key ("3f2a….score").
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}
func (e *FieldError) Unwrap() error { return e.Err }

// Export returns every kept bookmark as a File.
func Export(ctx context.Context, store madspark.BookmarkStore) (File, error) {
	f := File{}
	const page = 1000
	for offset := 0; ; offset += page {
		bs, total, err := store.Bookmarks(ctx, madspark.BookmarkFilter{Limit: page, Offset: offset})
		if err != nil {
			return nil, fmt.Errorf("bookmark: export: %w", err)
		}
		for _, b := range bs {
			f[b.ID] = entryOf(b)
		}
		if offset+page >= total || len(bs) == 0 {
			return f, nil
		}
	}
}

func entryOf(b *madspark.Bookmark) Entry {
	tags := b.Tags
	if tags == nil {
		tags = []string{}
	}
	return Entry{ID: b.ID, IdeaText: b.IdeaText, ImprovedIdea: b.ImprovedIdea, Topic: b.Topic, Context: b.Context,
		Score: b.Score, ImprovedScore: b.ImprovedScore, Tags: tags, Timestamp: b.CreatedAt.UTC().Format(time.RFC3339Nano),
		Metadata: b.Metadata, Notes: b.Notes, RunID: b.RunID, CandidateIndex: b.CandidateIndex}
}

// Parse reads a bookmarks file strictly: an unknown field or a value of
// the wrong type is a *FieldError naming it.
func Parse(data []byte) (File, error) {
	var raw map[string]json.RawMessage
	if err := strictDecode(data, &raw); err != nil {
		const want = "want a JSON object of bookmarks by ID"
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return nil, &FieldError{Err: fmt.Errorf("%s, got %s", want, te.Value)}
		}
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Err: fmt.Errorf("%s, got an empty file", want)}
		}
		return nil, &FieldError{Err: fmt.Errorf("%s: %s", want, decodeProblem(err))}
	}
	if raw == nil {
		return nil, &FieldError{Err: errors.New("want a JSON object of bookmarks by ID, got null")}
	}
	f := File{}
	for key, v := range raw {
		var e Entry
		if err := strictDecode(v, &e); err != nil {
			field := key
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				field += "." + te.Field
			} else if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				field += "." + strings.Trim(name, `"`)
			}
			return nil, &FieldError{Field: field, Err: errors.New(decodeProblem(err))}
		}
		f[key] = e
	}
	return f, nil
}

// decodeProblem says what is wrong with JSON that strictDecode refused, in
// the file's terms rather than the Go types': "want a string, got number".
func decodeProblem(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Sprintf("want %s, got %s", structured.KindOf(te.Type), te.Value)
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "not valid JSON: it ends too early"
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + name
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// Limits on what a bookmark holds.
const (
	MaxTextLen  = 20000
	MaxNotesLen = 5000
	MaxTags     = 20
	MaxTagLen   = 50
)

// bookmarkOf checks e, kept under key, and returns it as a bookmark.
func bookmarkOf(key string, e Entry) (*madspark.Bookmark, error) {
	bad := func(field, format string, a ...any) error {
		return &FieldError{Field: key + "." + field, Err: fmt.Errorf(format, a...)}
	}
	if err := input.Line("a bookmark's ID", key); err != nil {
		return nil, &FieldError{Field: input.Show(key), Err: err}
	}
	if err := input.Check(e); err != nil {
		if ie, ok := errors.AsType[*input.Error](err); ok {
			return nil, &FieldError{Field: key + "." + ie.Field, Err: errors.New(ie.Problem)}
		}
		return nil, &FieldError{Field: key, Err: err}
	}
	switch {
	case strings.TrimSpace(key) == "" || utf8.RuneCountInString(key) > 200:
		return nil, &FieldError{Field: key, Err: errors.New("a bookmark's ID must be 1-200 characters")}
	case e.ID != "" && e.ID != key:
		return nil, bad("id", "id %q differs from the key it is kept under", e.ID)
	case strings.TrimSpace(e.IdeaText) == "":
		return nil, bad("idea_text", "idea_text must not be empty")
	case utf8.RuneCountInString(e.IdeaText) > MaxTextLen || utf8.RuneCountInString(e.ImprovedIdea) > MaxTextLen:
		return nil, bad("idea_text", "an idea is at most %d characters", MaxTextLen)
	case utf8.RuneCountInString(e.Notes) > MaxNotesLen:
		return nil, bad("notes", "notes are at most %d characters", MaxNotesLen)
	case e.Score < 0 || e.Score > 10:
		return nil, bad("score", "score must be within 0..10, got %g", e.Score)
	case e.ImprovedScore < 0 || e.ImprovedScore > 10:
		return nil, bad("improved_score", "improved_score must be within 0..10, got %g", e.ImprovedScore)
	case len(e.Tags) > MaxTags:
		return nil, bad("tags", "at most %d tags", MaxTags)
	case e.CandidateIndex < 0:
		return nil, bad("candidate_index", "candidate_index must not be negative")
	}
	for i, t := range e.Tags {
		if strings.TrimSpace(t) == "" || utf8.RuneCountInString(t) > MaxTagLen {
			return nil, bad(fmt.Sprintf("tags[%d]", i), "a tag is 1-%d characters", MaxTagLen)
		}
	}
	var created time.Time
	if e.Timestamp != "" {
		var err error
		if created, err = parseTimestamp(e.Timestamp); err != nil {
			return nil, bad("timestamp", "timestamp %q is not ISO 8601", e.Timestamp)
		}
	}
	return &madspark.Bookmark{ID: key, RunID: e.RunID, CandidateIndex: e.CandidateIndex, IdeaText: e.IdeaText,
		ImprovedIdea: e.ImprovedIdea, Topic: e.Topic, Context: e.Context, Score: e.Score, ImprovedScore: e.ImprovedScore,
		Tags: e.Tags, Notes: e.Notes, CreatedAt: created, Metadata: e.Metadata}, nil
}

// parseTimestamp reads RFC 3339, or the zone-less ISO 8601 that Python's
// datetime.isoformat() writes (taken as UTC).
func parseTimestamp(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	return time.Parse("2006-01-02T15:04:05.999999999", s)
}

// Import checks every entry of f, then stores those whose ID is not kept
// yet, in the order of their timestamps; the others are skipped. A bad
// entry is a *FieldError and nothing is stored.
func Import(ctx context.Context, store madspark.BookmarkStore, f File) (imported, skipped int, err error) {
	bs := make([]*madspark.Bookmark, 0, len(f))
	for key, e := range f {
		b, err := bookmarkOf(key, e)
		if err != nil {
			return 0, 0, err
		}
		bs = append(bs, b)
	}
	sort.Slice(bs, func(i, j int) bool {
		if !bs[i].CreatedAt.Equal(bs[j].CreatedAt) {
			return bs[i].CreatedAt.Before(bs[j].CreatedAt)
		}
		return bs[i].ID < bs[j].ID
	})
	for _, b := range bs {
		if err := store.CreateBookmark(ctx, b); errors.Is(err, madspark.ErrExists) {
			skipped++
			continue
		} else if err != nil {
			return imported, skipped, fmt.Errorf("bookmark: import %s: %w", b.ID, err)
		}
		imported++
	}
	return imported, skipped, nil
}

// NotFoundError is a bookmark that does not exist.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string { return "no bookmark " + e.ID }
func (e *NotFoundError) Unwrap() error { return madspark.ErrNotFound }

// Remove removes the bookmarks ids: all of them, or, when one does not
// exist, none (a *NotFoundError).
func Remove(ctx context.Context, store madspark.BookmarkStore, ids []string) error {
	for _, id := range ids {
		if _, err := store.Bookmark(ctx, id); errors.Is(err, madspark.ErrNotFound) {
			return &NotFoundError{ID: id}
		} else if err != nil {
			return fmt.Errorf("bookmark %s: %w", id, err)
		}
	}
	for _, id := range ids {
		if err := store.DeleteBookmark(ctx, id); err != nil && !errors.Is(err, madspark.ErrNotFound) {
			return fmt.Errorf("bookmark: remove %s: %w", id, err)
		}
	}
	return nil
}
