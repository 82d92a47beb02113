// Package bookmark keeps the ideas users bookmark: made from a run's ideas
// (pipeline.Definition.Ideas), checked for near-duplicates of the bookmarks
// already kept, stored in a madspark.BookmarkStore, exported to and
// imported from the seed's bookmarks.json, and turned into the seed ideas
// of a remix. The API and the command line share it.
package bookmark

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/similarity"
)

// Recommendation says what to do with a bookmark given the ones kept.
type Recommendation string

// The recommendations: allow (nothing like it is kept), warn (something
// similar is), block (something near-identical is).
const (
	Allow Recommendation = "allow"
	Warn  Recommendation = "warn"
	Block Recommendation = "block"
)

// Thresholds of the recommendations, on Similar.Similarity.
const (
	BlockAt = 0.9
	WarnAt  = 0.7
)

// MaxSimilar is how many similar bookmarks a check lists, most similar
// first.
const MaxSimilar = 5

// Similar is a kept bookmark like the one checked.
type Similar struct {
	Bookmark   *madspark.Bookmark `json:"bookmark"`
	Similarity float64            `json:"similarity" jsonschema:"minimum=0,maximum=1"`
}

// Duplicates is the outcome of a check: the recommendation and the kept
// bookmarks at least WarnAt similar.
type Duplicates struct {
	Recommendation Recommendation `json:"recommendation" jsonschema:"enum=allow,enum=warn,enum=block"`
	Similar        []Similar      `json:"similar"`
}

// Similarity is how alike a new idea (text on topic) is to a kept
// bookmark, 0-1: the similarity of the idea to the bookmark's idea or its
// improved version, whichever is closer (package similarity), weighed 0.8
// with 0.2 for the similarity of their topics when both have one. So the
// same idea for the same topic scores 1, and for an unrelated topic 0.8:
// a warning, not a block.
func Similarity(text, topic string, b *madspark.Bookmark) float64 {
	return similarityOf(similarity.Of(text), similarity.Of(topic), topic != "", b)
}

func similarityOf(text, topic similarity.Vector, hasTopic bool, b *madspark.Bookmark) float64 {
	s := similarity.Cosine(text, similarity.Of(b.IdeaText))
	if b.ImprovedIdea != "" {
		s = max(s, similarity.Cosine(text, similarity.Of(b.ImprovedIdea)))
	}
	if hasTopic && b.Topic != "" {
		s = 0.8*s + 0.2*similarity.Cosine(topic, similarity.Of(b.Topic))
	}
	return min(max(s, 0), 1)
}

// MaxCompared is how many kept bookmarks, the newest, Check compares a
// new idea with: so a check costs the same however many are kept. An
// older near-duplicate is not found.
const MaxCompared = 1000

// Check compares an idea (text, on topic) with the MaxCompared newest kept
// bookmarks.
func Check(ctx context.Context, store madspark.BookmarkStore, text, topic string) (*Duplicates, error) {
	tv, pv := similarity.Of(text), similarity.Of(topic)
	out := &Duplicates{Recommendation: Allow, Similar: []Similar{}}
	const page = 500 // within what a store answers at once
	for offset := 0; offset < MaxCompared; offset += page {
		bs, total, err := store.Bookmarks(ctx, madspark.BookmarkFilter{Limit: min(page, MaxCompared-offset), Offset: offset})
		if err != nil {
			return nil, fmt.Errorf("bookmark: check duplicates: %w", err)
		}
		for _, b := range bs {
			if s := similarityOf(tv, pv, topic != "", b); s >= WarnAt {
				out.Similar = append(out.Similar, Similar{Bookmark: b, Similarity: round3(s)})
			}
		}
		if offset+page >= total || len(bs) == 0 {
			break
		}
	}
	slices.SortStableFunc(out.Similar, func(a, b Similar) int {
		switch {
		case a.Similarity > b.Similarity:
			return -1
		case a.Similarity < b.Similarity:
			return 1
		}
		return 0
	})
	if len(out.Similar) > MaxSimilar {
		out.Similar = out.Similar[:MaxSimilar]
	}
	if len(out.Similar) > 0 {
		out.Recommendation = Warn
		if out.Similar[0].Similarity >= BlockAt {
			out.Recommendation = Block
		}
	}
	return out, nil
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// Errors of FromRun.
var (
	// ErrNoResult: the run has not succeeded.
	ErrNoResult = errors.New("the run has no result")
	// ErrNoIdeas: the run's pipeline has no ideas to bookmark.
	ErrNoIdeas = errors.New("the pipeline has no ideas to bookmark")
	// ErrIndex: no idea has that index.
	ErrIndex = errors.New("no idea with index")
)

// FromRun makes a bookmark (not stored) of idea idx of run, whose pipeline
// is def: its text, improved version, scores, topic and context, and as
// metadata the run's model, the idea's temperature and the run's tokens.
// tags nil means the run's tags.
func FromRun(def pipeline.Definition, run *madspark.Run, idx int, tags []string, notes string) (*madspark.Bookmark, error) {
	if run.Status != madspark.RunSucceeded {
		return nil, fmt.Errorf("run %s: %w (it is %s)", run.ID, ErrNoResult, run.Status)
	}
	if def.Ideas == nil {
		return nil, fmt.Errorf("run %s: %s: %w", run.ID, def.Name, ErrNoIdeas)
	}
	ideas, err := def.Ideas(run)
	if err != nil {
		return nil, err
	}
	if idx < 0 || idx >= len(ideas) {
		return nil, fmt.Errorf("%w %d (run %s has %d ideas, 0..%d)", ErrIndex, idx, run.ID, len(ideas), len(ideas)-1)
	}
	it := ideas[idx]
	if tags == nil {
		// The run's own labels that are bookmark tags: not the tag naming
		// the eval, batch or conversation it was made for, nor a longer
		// one (a /v1 client's metadata), which stays on the run.
		for _, t := range run.Tags {
			if !madspark.IsParentTag(t) && utf8.RuneCountInString(t) <= MaxTagLen && len(tags) < MaxTags {
				tags = append(tags, t)
			}
		}
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return nil, err
	}
	return &madspark.Bookmark{
		ID: id.String(), RunID: run.ID, CandidateIndex: idx,
		IdeaText: it.Text, ImprovedIdea: it.Improved, Topic: it.Topic, Context: it.Context,
		Score: it.Score, ImprovedScore: it.ImprovedScore, Tags: append([]string{}, tags...), Notes: notes,
		Metadata: madspark.BookmarkMetadata{ModelUsed: run.Model, Temperature: it.Temperature,
			TokenCount: run.Usage.InputTokens + run.Usage.OutputTokens},
	}, nil
}

// DuplicateError is Save's error for a bookmark that is near-identical to
// a kept one.
type DuplicateError struct{ Duplicates *Duplicates }

func (e *DuplicateError) Error() string {
	s := e.Duplicates.Similar[0]
	return fmt.Sprintf("a near-identical bookmark is kept already: %s (similarity %.2f, %q)", s.Bookmark.ID, s.Similarity, short(s.Bookmark.IdeaText, 60))
}

// Save checks b against the kept bookmarks and stores it, unless one is
// near-identical (a *DuplicateError) and force is false. It returns the
// check.
func Save(ctx context.Context, store madspark.BookmarkStore, b *madspark.Bookmark, force bool) (*Duplicates, error) {
	dups, err := Check(ctx, store, b.IdeaText, b.Topic)
	if err != nil {
		return nil, err
	}
	if dups.Recommendation == Block && !force {
		return dups, &DuplicateError{Duplicates: dups}
	}
	if err := store.CreateBookmark(ctx, b); err != nil {
		return dups, err
	}
	return dups, nil
}

// MaxRemix is how many bookmarks a remix may start from.
const MaxRemix = 10

// SeedIdeas are the ideas a remix builds on: each bookmark's improved idea,
// or its idea when it has none.
func SeedIdeas(bs []*madspark.Bookmark) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.ImprovedIdea != "" {
			out = append(out, b.ImprovedIdea)
		} else {
			out = append(out, b.IdeaText)
		}
	}
	return out
}

func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}

// TagError is a bad tag: at Index of the list (-1 for the list itself).
type TagError struct {
	Index int
	Err   error
}

func (e *TagError) Error() string {
	if e.Index < 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("tag %d: %v", e.Index+1, e.Err)
}

// Tags checks tags (at most MaxTags, each 1-MaxTagLen characters of
// printable text) and returns them trimmed, without repeats; a bad one is
// a *TagError.
func Tags(tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, &TagError{Index: -1, Err: fmt.Errorf("at most %d tags, got %d", MaxTags, len(tags))}
	}
	out := make([]string, 0, len(tags))
	for i, t := range tags {
		t = strings.TrimSpace(t)
		var err error
		switch {
		case t == "":
			err = errors.New("a tag must not be empty")
		case !utf8.ValidString(t):
			err = errors.New("a tag must be valid UTF-8")
		case utf8.RuneCountInString(t) > MaxTagLen:
			err = fmt.Errorf("a tag is at most %d characters", MaxTagLen)
		case strings.IndexFunc(t, unicode.IsControl) >= 0:
			err = errors.New("a tag must not contain control characters")
		}
		if err != nil {
			return nil, &TagError{Index: i, Err: err}
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}
