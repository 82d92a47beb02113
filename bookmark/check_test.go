package bookmark

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark"
)

// sliceStore keeps bookmarks newest first in memory, and counts how many
// it hands out.
type sliceStore struct {
	madspark.BookmarkStore // only Bookmarks is used
	bs                     []*madspark.Bookmark
	read                   atomic.Int64
}

func (s *sliceStore) Bookmarks(_ context.Context, f madspark.BookmarkFilter) ([]*madspark.Bookmark, int, error) {
	lo, hi := min(f.Offset, len(s.bs)), min(f.Offset+min(f.Limit, 1000), len(s.bs))
	s.read.Add(int64(hi - lo))
	return s.bs[lo:hi], len(s.bs), nil
}

// manyBookmarks returns n distinct bookmarks, newest first; the newest is
// about rooftop gardens, the oldest about glacier satellites.
func manyBookmarks(n int) *sliceStore {
	s := &sliceStore{}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		text := fmt.Sprintf("Idea %d: a cooperative of %d neighbours shares tools number %d and a workshop in district %d", i, i%97, i*7, i%13)
		switch i {
		case 0:
			text = "Rooftop gardens: shared vegetable beds on apartment roofs"
		case n - 1:
			text = "A satellite constellation that measures glacier melt"
		}
		s.bs = append(s.bs, &madspark.Bookmark{ID: fmt.Sprintf("b%06d", i), IdeaText: text, Topic: "city life",
			CreatedAt: t0.Add(-time.Duration(i) * time.Minute)})
	}
	return s
}

// TestCheckBounded: a check reads the MaxCompared newest bookmarks and no
// more, however many are kept; a duplicate among them is found, an older
// one is not.
func TestCheckBounded(t *testing.T) {
	ctx := context.Background()
	s := manyBookmarks(3 * MaxCompared)
	d, err := Check(ctx, s, "Rooftop gardens: shared vegetable beds on apartment roofs", "city life")
	if err != nil || d.Recommendation != Block || d.Similar[0].Bookmark.ID != "b000000" {
		t.Fatalf("the newest duplicate: %+v, %v", d, err)
	}
	if n := s.read.Load(); n != MaxCompared {
		t.Errorf("compared with %d bookmarks, want %d", n, MaxCompared)
	}
	if d, err := Check(ctx, s, "A satellite constellation that measures glacier melt", "city life"); err != nil || d.Recommendation != Allow {
		t.Errorf("a duplicate older than the %d newest: %+v, %v", MaxCompared, d, err)
	}
	// Fewer than MaxCompared: every one.
	small := manyBookmarks(700)
	if d, _ := Check(ctx, small, "A satellite constellation that measures glacier melt", "city life"); d.Recommendation != Block {
		t.Errorf("the oldest of 700: %+v", d)
	}
	if n := small.read.Load(); n != 700 {
		t.Errorf("compared with %d of 700 bookmarks", n)
	}
}

// BenchmarkCheck: one duplicate check with 20000 bookmarks kept.
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	s := manyBookmarks(20000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(ctx, s, "Shared rooftop vegetable beds for the tenants of apartment blocks", "city life"); err != nil {
			b.Fatal(err)
		}
	}
}
