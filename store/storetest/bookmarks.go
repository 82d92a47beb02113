package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark"
)

// testRunTags: a run's tags come back as stored, in order; no tags is nil.
func testRunTags(t *testing.T, s Store) {
	r := newRun("tagged", "spark", base)
	r.Tags = []string{"urban", "food", "ümlaut"}
	mustCreate(t, s, r)
	if got := mustRun(t, s, "tagged").Tags; !reflect.DeepEqual(got, r.Tags) {
		t.Errorf("tags = %q, want %q", got, r.Tags)
	}
	mustCreate(t, s, newRun("plain", "spark", base.Add(time.Second)))
	if got := mustRun(t, s, "plain").Tags; got != nil {
		t.Errorf("tags of a run without = %#v, want nil", got)
	}
	if got := mustRuns(t, s, madspark.RunFilter{})[1].Tags; !reflect.DeepEqual(got, r.Tags) {
		t.Errorf("listed tags = %q, want %q", got, r.Tags)
	}
}

// testRunsQuery: Query matches the parameters' text, ignoring ASCII case,
// with LIKE's wildcards taken literally, and combines with the other
// filters.
func testRunsQuery(t *testing.T, s Store) {
	for i, p := range []string{
		`{"topic":"Urban farming on rooftops"}`,
		`{"prompt":"food waste in cities"}`,
		`{"query":"100% renewable grids_now"}`,
		`{"idea":"urban air taxis"}`,
	} {
		r := newRun("q"+strconv.Itoa(i), "spark", base.Add(time.Duration(i)*time.Second))
		if i == 1 {
			r.Pipeline = "chaos"
		}
		r.Params = []byte(p)
		mustCreate(t, s, r)
	}
	for _, tc := range []struct {
		f    madspark.RunFilter
		want []string
	}{
		{madspark.RunFilter{Query: "urban"}, []string{"q3", "q0"}},
		{madspark.RunFilter{Query: "URBAN FARMING"}, []string{"q0"}},
		{madspark.RunFilter{Query: "urban", Pipeline: "chaos"}, nil},
		{madspark.RunFilter{Query: "food", Pipeline: "chaos"}, []string{"q1"}},
		{madspark.RunFilter{Query: "100%"}, []string{"q2"}},
		{madspark.RunFilter{Query: "0% r"}, []string{"q2"}},
		{madspark.RunFilter{Query: "%"}, []string{"q2"}},
		{madspark.RunFilter{Query: "grids_now"}, []string{"q2"}},
		{madspark.RunFilter{Query: "i_s"}, []string{}},
		{madspark.RunFilter{Query: "urban", Limit: 1, Offset: 1}, []string{"q0"}},
		{madspark.RunFilter{Query: "nothing like it"}, nil},
	} {
		checkIDs(t, fmt.Sprintf("%+v", tc.f), mustRuns(t, s, tc.f), tc.want...)
	}
}

// testLastEvent: the latest event of a run, nil for none.
func testLastEvent(t *testing.T, s Store) {
	c := ctx(t)
	mustCreate(t, s, newRun("ev", "spark", base))
	mustCreate(t, s, newRun("other", "spark", base))
	if e, err := s.LastEvent(c, "ev"); err != nil || e != nil {
		t.Fatalf("LastEvent of a run without events = %+v, %v; want nil, nil", e, err)
	}
	if e, err := s.LastEvent(c, "missing"); err != nil || e != nil {
		t.Fatalf("LastEvent of a missing run = %+v, %v; want nil, nil", e, err)
	}
	for i, stage := range []string{"queued", "generate", "evaluate"} {
		mustAppend(t, s, &madspark.Event{RunID: "ev", Type: madspark.EventProgress, Stage: stage, Progress: i * 10, Message: "m" + stage})
	}
	mustAppend(t, s, &madspark.Event{RunID: "other", Type: madspark.EventProgress, Stage: "later"})
	e, err := s.LastEvent(c, "ev")
	if err != nil || e == nil {
		t.Fatalf("LastEvent = %+v, %v", e, err)
	}
	if e.Seq != 3 || e.Stage != "evaluate" || e.Progress != 20 || e.Message != "mevaluate" || e.RunID != "ev" || e.Time.IsZero() {
		t.Errorf("LastEvent = %+v, want seq 3, stage evaluate", e)
	}
}

func bookmark(id string, created time.Time, tags ...string) *madspark.Bookmark {
	return &madspark.Bookmark{
		ID: id, RunID: "run-" + id, CandidateIndex: 1,
		IdeaText: "Idea " + id, ImprovedIdea: "Improved idea " + id,
		Topic: "topic " + id, Context: "context " + id,
		Score: 6.5, ImprovedScore: 7.25, Tags: tags, Notes: "notes " + id,
		CreatedAt: created,
		Metadata:  madspark.BookmarkMetadata{ModelUsed: "mock-1", Temperature: 0.9, TokenCount: 1500},
	}
}

func mustBookmark(t *testing.T, s madspark.BookmarkStore, b *madspark.Bookmark) {
	t.Helper()
	if err := s.CreateBookmark(ctx(t), b); err != nil {
		t.Fatalf("CreateBookmark %q: %v", b.ID, err)
	}
}

func mustBookmarks(t *testing.T, s madspark.BookmarkStore, f madspark.BookmarkFilter) ([]string, int) {
	t.Helper()
	bs, total, err := s.Bookmarks(ctx(t), f)
	if err != nil {
		t.Fatalf("Bookmarks %+v: %v", f, err)
	}
	if bs == nil {
		t.Fatalf("Bookmarks %+v = nil, want a non-nil slice", f)
	}
	ids := []string{}
	for _, b := range bs {
		ids = append(ids, b.ID)
	}
	return ids, total
}

// testBookmarkRoundTrip: every field comes back; tags in order, without
// repeats; nil tags are empty; times in UTC.
func testBookmarkRoundTrip(t *testing.T, s Store) {
	c := ctx(t)
	want := bookmark("b1", base, "urban", "food", "urban", "Ünïcode")
	mustBookmark(t, s, want)
	if !reflect.DeepEqual(want.Tags, []string{"urban", "food", "Ünïcode"}) {
		t.Errorf("CreateBookmark left tags %q, want repeats dropped", want.Tags)
	}
	got, err := s.Bookmark(c, "b1")
	if err != nil {
		t.Fatal(err)
	}
	checkTime(t, "created", got.CreatedAt, want.CreatedAt)
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at in %v, want UTC", got.CreatedAt.Location())
	}
	got.CreatedAt = want.CreatedAt
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Bookmark:\n got %+v\nwant %+v", got, want)
	}

	bare := &madspark.Bookmark{ID: "bare", IdeaText: "just an idea"}
	mustBookmark(t, s, bare)
	if bare.CreatedAt.IsZero() || bare.Tags == nil {
		t.Errorf("CreateBookmark did not set the defaults: %+v", bare)
	}
	got, err = s.Bookmark(c, "bare")
	if err != nil {
		t.Fatal(err)
	}
	if got.Tags == nil || len(got.Tags) != 0 || got.RunID != "" || got.IdeaText != "just an idea" {
		t.Errorf("bare bookmark = %+v", got)
	}
	if time.Since(got.CreatedAt) > time.Minute || time.Since(got.CreatedAt) < 0 {
		t.Errorf("default created_at = %v, want now", got.CreatedAt)
	}
}

// testBookmarkRejects: an existing ID is ErrExists and changes nothing; a
// missing one is ErrNotFound on read and delete; an empty ID is refused.
func testBookmarkRejects(t *testing.T, s Store) {
	c := ctx(t)
	mustBookmark(t, s, bookmark("dup", base, "a"))
	err := s.CreateBookmark(c, bookmark("dup", base.Add(time.Hour), "b"))
	if !errors.Is(err, madspark.ErrExists) {
		t.Errorf("CreateBookmark of an existing ID = %v, want ErrExists", err)
	}
	if ids, _ := mustBookmarks(t, s, madspark.BookmarkFilter{Tags: []string{"b"}}); len(ids) != 0 {
		t.Errorf("the refused bookmark's tags were stored: %v", ids)
	}
	if got, err := s.Bookmark(c, "dup"); err != nil || !reflect.DeepEqual(got.Tags, []string{"a"}) {
		t.Errorf("the existing bookmark changed: %+v, %v", got, err)
	}
	if err := s.CreateBookmark(c, &madspark.Bookmark{IdeaText: "x"}); err == nil {
		t.Error("CreateBookmark without an ID succeeded")
	}
	if _, err := s.Bookmark(c, "nope"); !errors.Is(err, madspark.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Bookmark(missing) = %v, want ErrNotFound naming it", err)
	}
	if err := s.DeleteBookmark(c, "nope"); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("DeleteBookmark(missing) = %v, want ErrNotFound", err)
	}
	if err := s.DeleteBookmark(c, "dup"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bookmark(c, "dup"); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("Bookmark after delete = %v, want ErrNotFound", err)
	}
	if ids, total := mustBookmarks(t, s, madspark.BookmarkFilter{Tags: []string{"a"}}); len(ids) != 0 || total != 0 {
		t.Errorf("a deleted bookmark's tags still match: %v (%d)", ids, total)
	}
	// The ID is free again.
	mustBookmark(t, s, bookmark("dup", base, "c"))
}

// testBookmarksFilter: newest first; tags all required; the query looks in
// topic, context, idea and improved idea, ignoring ASCII case, with LIKE's
// wildcards taken literally; the total ignores paging.
func testBookmarksFilter(t *testing.T, s Store) {
	for i, tc := range []struct {
		tags                  []string
		topic, idea, improved string
	}{
		{[]string{"urban", "food"}, "Urban farming", "Rooftop gardens", ""},
		{[]string{"urban"}, "Transport", "Bike lanes", "Protected bike lanes for 100% of streets"},
		{[]string{"food"}, "Food waste", "Compost hubs", "Neighbourhood compost_hubs"},
		{nil, "Energy", "Solar co-ops", ""},
	} {
		b := bookmark("b"+strconv.Itoa(i), base.Add(time.Duration(i)*time.Second), tc.tags...)
		b.Topic, b.IdeaText, b.ImprovedIdea, b.Context = tc.topic, tc.idea, tc.improved, "ctx"
		if i == 2 {
			b.RunID = "run-b0" // two ideas of one run
		}
		mustBookmark(t, s, b)
	}
	for _, tc := range []struct {
		f     madspark.BookmarkFilter
		want  []string
		total int
	}{
		{madspark.BookmarkFilter{}, []string{"b3", "b2", "b1", "b0"}, 4},
		{madspark.BookmarkFilter{Tags: []string{"urban"}}, []string{"b1", "b0"}, 2},
		{madspark.BookmarkFilter{Tags: []string{"urban", "food"}}, []string{"b0"}, 1},
		{madspark.BookmarkFilter{Tags: []string{"food", "food"}}, []string{"b2", "b0"}, 2},
		{madspark.BookmarkFilter{Tags: []string{"Urban"}}, []string{}, 0},
		{madspark.BookmarkFilter{Tags: []string{"none"}}, []string{}, 0},
		{madspark.BookmarkFilter{Query: "urban"}, []string{"b0"}, 1},
		{madspark.BookmarkFilter{Query: "BIKE"}, []string{"b1"}, 1},
		{madspark.BookmarkFilter{Query: "protected"}, []string{"b1"}, 1},
		{madspark.BookmarkFilter{Query: "compost"}, []string{"b2"}, 1},
		{madspark.BookmarkFilter{Query: "ctx"}, []string{"b3", "b2", "b1", "b0"}, 4},
		{madspark.BookmarkFilter{Query: "100%"}, []string{"b1"}, 1},
		{madspark.BookmarkFilter{Query: "%"}, []string{"b1"}, 1},
		{madspark.BookmarkFilter{Query: "t_h"}, []string{"b2"}, 1},
		{madspark.BookmarkFilter{Query: "o_o"}, []string{}, 0},
		{madspark.BookmarkFilter{Query: "o", Tags: []string{"food"}}, []string{"b2", "b0"}, 2},
		{madspark.BookmarkFilter{Limit: 2}, []string{"b3", "b2"}, 4},
		{madspark.BookmarkFilter{Limit: 2, Offset: 3}, []string{"b0"}, 4},
		{madspark.BookmarkFilter{Offset: 9}, []string{}, 4},
		{madspark.BookmarkFilter{Tags: []string{"urban"}, Limit: 1, Offset: 1}, []string{"b0"}, 2},
		{madspark.BookmarkFilter{RunID: "run-b0"}, []string{"b2", "b0"}, 2},
		{madspark.BookmarkFilter{RunID: "run-b1"}, []string{"b1"}, 1},
		{madspark.BookmarkFilter{RunID: "run-b0", Tags: []string{"urban"}}, []string{"b0"}, 1},
		{madspark.BookmarkFilter{RunID: "run-b"}, []string{}, 0},
	} {
		ids, total := mustBookmarks(t, s, tc.f)
		if !reflect.DeepEqual(ids, tc.want) || total != tc.total {
			t.Errorf("Bookmarks %+v = %v (total %d), want %v (total %d)", tc.f, ids, total, tc.want, tc.total)
		}
	}
}

// testBookmarksOrder: same creation time, then by descending ID; Limit of
// 0 means 50.
func testBookmarksOrder(t *testing.T, s Store) {
	for i := range 60 {
		mustBookmark(t, s, bookmark(fmt.Sprintf("s%02d", i), base))
	}
	ids, total := mustBookmarks(t, s, madspark.BookmarkFilter{})
	if len(ids) != 50 || total != 60 || ids[0] != "s59" || ids[49] != "s10" {
		t.Errorf("Bookmarks{} = %d ids from %v to %v (total %d), want 50 from s59 to s10 of 60", len(ids), ids[0], ids[len(ids)-1], total)
	}
}

// testBookmarkUpdate: tags and notes change, repeats dropped, and the tag
// filter follows them; every other field stays; a missing bookmark is
// ErrNotFound and changes nothing.
func testBookmarkUpdate(t *testing.T, s Store) {
	c := ctx(t)
	orig := bookmark("u1", base, "old", "kept")
	mustBookmark(t, s, orig)
	mustBookmark(t, s, bookmark("u2", base.Add(time.Second), "old"))
	got, err := s.UpdateBookmark(c, "u1", []string{"kept", "new", "kept", "Ünïcode"}, "rewritten notes\nover two lines")
	if err != nil {
		t.Fatal(err)
	}
	want := *orig
	want.Tags, want.Notes = []string{"kept", "new", "Ünïcode"}, "rewritten notes\nover two lines"
	checkTime(t, "created", got.CreatedAt, want.CreatedAt)
	got.CreatedAt = want.CreatedAt
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("UpdateBookmark:\n got %+v\nwant %+v", got, &want)
	}
	if again, err := s.Bookmark(c, "u1"); err != nil || !reflect.DeepEqual(again.Tags, want.Tags) || again.Notes != want.Notes {
		t.Errorf("Bookmark after the update = %+v, %v", again, err)
	}
	for _, tc := range []struct {
		tag  string
		want []string
	}{{"old", []string{"u2"}}, {"new", []string{"u1"}}, {"kept", []string{"u1"}}} {
		if ids, _ := mustBookmarks(t, s, madspark.BookmarkFilter{Tags: []string{tc.tag}}); !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("tag %q after the update: %v, want %v", tc.tag, ids, tc.want)
		}
	}
	if got, err := s.UpdateBookmark(c, "u1", nil, ""); err != nil || got.Tags == nil || len(got.Tags) != 0 || got.Notes != "" {
		t.Errorf("UpdateBookmark to no tags and no notes = %+v, %v", got, err)
	}
	if ids, _ := mustBookmarks(t, s, madspark.BookmarkFilter{Tags: []string{"kept"}}); len(ids) != 0 {
		t.Errorf("a removed tag still matches: %v", ids)
	}
	if _, err := s.UpdateBookmark(c, "nope", []string{"x"}, "n"); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("UpdateBookmark(missing) = %v, want ErrNotFound", err)
	}
	if ids, _ := mustBookmarks(t, s, madspark.BookmarkFilter{Tags: []string{"x"}}); len(ids) != 0 {
		t.Errorf("the refused update's tags were stored: %v", ids)
	}
}
