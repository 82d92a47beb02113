package bookmark

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/store/sqlite"
)

func store(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSimilarity(t *testing.T) {
	kept := &madspark.Bookmark{IdeaText: "Rooftop gardens: shared vegetable beds on apartment roofs, run by tenants",
		ImprovedIdea: "Refined rooftop gardens with rainwater tanks and a tenant rota", Topic: "urban farming"}
	for _, tc := range []struct {
		name, text, topic string
		lo, hi            float64
	}{
		{"same idea, same topic", kept.IdeaText, "urban farming", 1, 1},
		{"same as the improved idea", kept.ImprovedIdea, "urban farming", 1, 1},
		{"same idea, unrelated topic", kept.IdeaText, "deep sea mining", 0.8, 0.8},
		{"same idea, no topic", kept.IdeaText, "", 1, 1},
		{"reworded", "Rooftop gardens: shared vegetable beds on apartment roofs run by the tenants", "urban farming", BlockAt, 1},
		{"unrelated", "A satellite constellation that measures glacier melt", "climate", 0, 0.2},
	} {
		if s := Similarity(tc.text, tc.topic, kept); s < tc.lo-1e-9 || s > tc.hi+1e-9 {
			t.Errorf("%s: similarity %.3f, want %.2f..%.2f", tc.name, s, tc.lo, tc.hi)
		}
	}
}

// TestCheckAndSave: the recommendation follows the thresholds (block at
// 0.9, warn at 0.7), the similar ones come most similar first, and Save
// refuses a near-identical bookmark unless forced.
func TestCheckAndSave(t *testing.T) {
	ctx := context.Background()
	db := store(t)
	if d, err := Check(ctx, db, "anything", "x"); err != nil || d.Recommendation != Allow || d.Similar == nil || len(d.Similar) != 0 {
		t.Fatalf("empty store: %+v, %v", d, err)
	}
	a := &madspark.Bookmark{ID: "a", IdeaText: "Rooftop gardens: shared vegetable beds on apartment roofs", Topic: "urban farming"}
	if _, err := Save(ctx, db, a, false); err != nil {
		t.Fatal(err)
	}
	d, err := Save(ctx, db, &madspark.Bookmark{ID: "b", IdeaText: a.IdeaText, Topic: a.Topic}, false)
	var de *DuplicateError
	if !errors.As(err, &de) || d.Recommendation != Block || d.Similar[0].Bookmark.ID != "a" || !strings.Contains(err.Error(), "a (similarity 1.00") {
		t.Fatalf("duplicate: %+v, %v", d, err)
	}
	if _, err := db.Bookmark(ctx, "b"); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("the refused bookmark was stored: %v", err)
	}
	if _, err := Save(ctx, db, &madspark.Bookmark{ID: "b", IdeaText: a.IdeaText, Topic: a.Topic}, true); err != nil {
		t.Fatalf("forced: %v", err)
	}
	// Same idea on an unrelated topic: a warning, and it is kept.
	d, err = Save(ctx, db, &madspark.Bookmark{ID: "c", IdeaText: a.IdeaText, Topic: "deep sea mining"}, false)
	if err != nil || d.Recommendation != Warn || len(d.Similar) != 2 {
		t.Fatalf("other topic: %+v, %v", d, err)
	}
	d, _ = Check(ctx, db, a.IdeaText, "urban farming")
	if d.Recommendation != Block || len(d.Similar) != 3 || d.Similar[0].Similarity < d.Similar[2].Similarity || d.Similar[2].Bookmark.ID != "c" {
		t.Errorf("ordering: %+v", d.Similar)
	}
	if d, _ := Check(ctx, db, "A satellite constellation that measures glacier melt", "climate"); d.Recommendation != Allow {
		t.Errorf("unrelated: %+v", d)
	}
	// At most MaxSimilar, however many there are.
	for i := range 8 {
		_, _ = Save(ctx, db, &madspark.Bookmark{ID: "x" + string(rune('0'+i)), IdeaText: a.IdeaText, Topic: a.Topic}, true)
	}
	if d, _ := Check(ctx, db, a.IdeaText, a.Topic); len(d.Similar) != MaxSimilar {
		t.Errorf("%d similar listed, want %d", len(d.Similar), MaxSimilar)
	}
}

func TestTags(t *testing.T) {
	got, err := Tags([]string{" food ", "city", "food"})
	if err != nil || strings.Join(got, ",") != "food,city" {
		t.Errorf("Tags = %q, %v", got, err)
	}
	for _, tc := range []struct {
		tags  []string
		index int
	}{
		{[]string{"a", ""}, 1},
		{[]string{strings.Repeat("t", 51)}, 0},
		{[]string{"a", "b\x00c"}, 1},
		{make([]string, 21), -1},
	} {
		var te *TagError
		if _, err := Tags(tc.tags); !errors.As(err, &te) || te.Index != tc.index {
			t.Errorf("Tags(%q) = %v, want a TagError at %d", tc.tags, err, tc.index)
		}
	}
}

func TestSeedIdeas(t *testing.T) {
	got := SeedIdeas([]*madspark.Bookmark{{IdeaText: "a", ImprovedIdea: "a+"}, {IdeaText: "b"}})
	if strings.Join(got, ",") != "a+,b" {
		t.Errorf("SeedIdeas = %q", got)
	}
}

// TestFromRunTags: a bookmark given no tags takes its run's labels, not
// the tag naming the eval, batch or conversation the run was made for;
// tags given are kept as given.
func TestFromRunTags(t *testing.T) {
	def := pipeline.Definition{Name: "ideas", Ideas: func(*madspark.Run) ([]pipeline.Idea, error) {
		return []pipeline.Idea{{Text: "an idea", Topic: "a topic"}}, nil
	}}
	run := &madspark.Run{ID: "r1", Status: madspark.RunSucceeded,
		Tags: []string{"food", madspark.ParentTag(madspark.ParentBatch, "b1"), "cities", madspark.ParentTag(madspark.ParentEval, "e1"),
			"safety_identifier=" + strings.Repeat("9f86d081", 8)}} // a /v1 client's, longer than a bookmark tag
	b, err := FromRun(def, run, 0, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Tags, []string{"food", "cities"}) {
		t.Errorf("inherited tags %q, want the run's labels only", b.Tags)
	}
	if b, err = FromRun(def, run, 0, []string{"mine"}, ""); err != nil || !slices.Equal(b.Tags, []string{"mine"}) {
		t.Errorf("given tags: %q, %v", b.Tags, err)
	}
	run.Tags = []string{madspark.ParentTag(madspark.ParentConversation, "c1")}
	if b, err = FromRun(def, run, 0, nil, ""); err != nil || b.Tags == nil || len(b.Tags) != 0 {
		t.Errorf("a run with only its parent's tag gives tags %#v, %v", b.Tags, err)
	}
}
