package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/bookmark"
)

func (hs *harness) bookmark(runID string, idx int, extra map[string]any) (resp, api.CreateBookmarkResponse) {
	hs.t.Helper()
	body := map[string]any{"run_id": runID, "candidate_index": idx}
	for k, v := range extra {
		body[k] = v
	}
	r := hs.do("POST", "/api/bookmarks", body)
	var out api.CreateBookmarkResponse
	if r.status == http.StatusCreated {
		r.json(hs.t, &out)
	}
	return r, out
}

func (hs *harness) bookmarks(path string) api.BookmarkPage {
	hs.t.Helper()
	r := hs.do("GET", path, nil)
	if r.status != 200 {
		hs.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var p api.BookmarkPage
	r.json(hs.t, &p)
	return p
}

func ids(p api.BookmarkPage) []string {
	var out []string
	for _, b := range p.Bookmarks {
		out = append(out, b.ID)
	}
	return out
}

func TestBookmarks(t *testing.T) {
	hs := newHarness(t, options{})
	runID := hs.sparkRun("urban farming")
	rec, err := hs.db.Run(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Candidates []struct {
			Idea          string  `json:"idea"`
			ImprovedIdea  string  `json:"improved_idea"`
			InitialScore  float64 `json:"initial_score"`
			ImprovedScore float64 `json:"improved_score"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(rec.Result, &res); err != nil {
		t.Fatal(err)
	}

	// A new idea: kept, nothing like it.
	r, first := hs.bookmark(runID, 1, map[string]any{"tags": []string{"food", "city"}, "notes": "pilot in spring"})
	if r.status != 201 || first.Duplicates.Recommendation != bookmark.Allow || len(first.Duplicates.Similar) != 0 {
		t.Fatalf("first bookmark: %d %s", r.status, r.body)
	}
	b := first.Bookmark
	c := res.Candidates[1]
	if b.IdeaText != c.Idea || b.ImprovedIdea != c.ImprovedIdea || b.Score != c.InitialScore || b.ImprovedScore != c.ImprovedScore ||
		b.Topic != "urban farming" || b.Context != "cheap" || b.CandidateIndex != 1 || b.RunID != runID || b.Notes != "pilot in spring" ||
		!slices.Equal(b.Tags, []string{"food", "city"}) || b.Metadata.ModelUsed != "mock-1" || b.Metadata.Temperature != 0.9 ||
		b.Metadata.TokenCount != rec.Usage.InputTokens+rec.Usage.OutputTokens || r.header.Get("Location") != "/api/bookmarks/"+b.ID {
		t.Errorf("bookmark: %+v", b)
	}
	// The same idea again: refused as near-identical, with the kept one.
	r, _ = hs.bookmark(runID, 1, nil)
	e := r.err(t)
	if r.status != 409 || e.Duplicates == nil || e.Duplicates.Recommendation != "block" || len(e.Duplicates.Similar) != 1 || e.Duplicates.Similar[0].Similarity < 0.99 {
		t.Fatalf("duplicate: %d %s", r.status, r.body)
	}
	// Forced, it is kept, and says what it duplicates.
	r, forced := hs.bookmark(runID, 1, map[string]any{"force": true, "tags": []string{}})
	if r.status != 201 || forced.Duplicates.Recommendation != bookmark.Block || forced.Duplicates.Similar[0].Bookmark.ID != b.ID || len(forced.Bookmark.Tags) != 0 {
		t.Fatalf("forced: %d %s", r.status, r.body)
	}
	// Another candidate, tagged like the run (none).
	r, other := hs.bookmark(runID, 0, nil)
	if r.status != 201 || other.Bookmark.Tags == nil {
		t.Fatalf("candidate 0: %d %s", r.status, r.body)
	}

	// The check, for a similar and for an unrelated text.
	check := func(text, topic string) bookmark.Duplicates {
		r := hs.do("POST", "/api/bookmarks/check", map[string]any{"idea_text": text, "topic": topic})
		var d bookmark.Duplicates
		r.json(t, &d)
		return d
	}
	if d := check(c.Idea, "urban farming"); d.Recommendation != bookmark.Block || len(d.Similar) != 2 {
		t.Errorf("check of a kept idea: %+v", d)
	}
	if d := check(c.Idea, "deep sea mining regulation"); d.Recommendation != bookmark.Warn {
		t.Errorf("check of a kept idea on another topic: %+v", d)
	}
	if d := check("A satellite constellation for measuring glacier melt", "climate"); d.Recommendation != bookmark.Allow || len(d.Similar) != 0 {
		t.Errorf("check of an unrelated idea: %+v", d)
	}

	// Listing, tags, search, paging.
	if p := hs.bookmarks("/api/bookmarks"); p.Total != 3 || len(p.Bookmarks) != 3 || p.NextOffset != nil || p.Bookmarks[0].ID != other.Bookmark.ID {
		t.Errorf("list: %+v", ids(p))
	}
	// A run page asks which of its ideas are bookmarked.
	if p := hs.bookmarks("/api/bookmarks?run_id=" + runID); p.Total != 3 {
		t.Errorf("the run's bookmarks: %v", ids(p))
	}
	if p := hs.bookmarks("/api/bookmarks?run_id=another"); p.Total != 0 || len(p.Bookmarks) != 0 {
		t.Errorf("another run's bookmarks: %v", ids(p))
	}
	if p := hs.bookmarks("/api/bookmarks?tag=food&tag=city"); !slices.Equal(ids(p), []string{b.ID}) || p.Total != 1 {
		t.Errorf("tags food and city: %v", ids(p))
	}
	if p := hs.bookmarks("/api/bookmarks?limit=2"); len(p.Bookmarks) != 2 || p.NextOffset == nil || *p.NextOffset != 2 || p.Total != 3 {
		t.Errorf("page: %v %v", ids(p), p.NextOffset)
	}
	word := strings.Fields(strings.ToUpper(c.ImprovedIdea))[1]
	if p := hs.bookmarks("/api/bookmarks/search?q=" + word); p.Total < 2 {
		t.Errorf("search %q: %v", word, ids(p))
	}
	if p := hs.bookmarks("/api/bookmarks/search?q=zeppelin"); p.Total != 0 || p.Bookmarks == nil {
		t.Errorf("search zeppelin: %+v", p)
	}
	if p := hs.bookmarks("/api/bookmarks/search?q=URBAN&tag=food"); !slices.Equal(ids(p), []string{b.ID}) {
		t.Errorf("search URBAN with tag food: %v", ids(p))
	}

	// One, then gone.
	r = hs.do("GET", "/api/bookmarks/"+b.ID, nil)
	var got madspark.Bookmark
	r.json(t, &got)
	if got.ID != b.ID || got.Notes != "pilot in spring" {
		t.Errorf("get: %s", r.body)
	}
	if r := hs.do("DELETE", "/api/bookmarks/"+b.ID, nil); r.status != 204 || len(r.body) != 0 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := hs.do(m, "/api/bookmarks/"+b.ID, nil); r.status != 404 || r.err(t).Error.Type != "not_found" {
			t.Errorf("%s a deleted bookmark: %d %s", m, r.status, r.body)
		}
	}
}

func TestBookmarksBadInput(t *testing.T) {
	hs := newHarness(t, options{})
	runID := hs.sparkRun("urban farming")
	queued := hs.startRun("spark", map[string]any{"topic": "x"}) // no worker: never runs
	for _, tc := range []struct {
		name   string
		body   string
		status int
		field  string
	}{
		{"no run", `{"candidate_index":0}`, 422, "run_id"},
		{"unknown run", `{"run_id":"nope","candidate_index":0}`, 404, "run_id"},
		{"run not finished", `{"run_id":"` + queued + `","candidate_index":0}`, 409, ""},
		{"index out of range", `{"run_id":"` + runID + `","candidate_index":3}`, 422, "candidate_index"},
		{"negative index", `{"run_id":"` + runID + `","candidate_index":-1}`, 422, "candidate_index"},
		{"index of the wrong type", `{"run_id":"` + runID + `","candidate_index":"0"}`, 400, "candidate_index"},
		{"unknown field", `{"run_id":"` + runID + `","candidate_index":0,"tag":"x"}`, 400, "tag"},
		{"bad tag", `{"run_id":"` + runID + `","candidate_index":0,"tags":["ok","` + strings.Repeat("t", 51) + `"]}`, 422, "tags[1]"},
		{"long notes", `{"run_id":"` + runID + `","candidate_index":0,"notes":"` + strings.Repeat("n", 5001) + `"}`, 422, "notes"},
	} {
		r := hs.do("POST", "/api/bookmarks", tc.body)
		if e := r.err(t); r.status != tc.status || e.Error.Field != tc.field {
			t.Errorf("%s: %d %q %s; want %d %q", tc.name, r.status, e.Error.Field, e.Error.Message, tc.status, tc.field)
		}
	}
	for body, field := range map[string]string{`{"topic":"x"}`: "idea_text", `{"idea_text":"  "}`: "idea_text"} {
		if r := hs.do("POST", "/api/bookmarks/check", body); r.status != 422 || r.err(t).Error.Field != field {
			t.Errorf("check %s: %d %s", body, r.status, r.body)
		}
	}
	for q, field := range map[string]string{"/api/bookmarks/search": "q", "/api/bookmarks/search?q=%20": "q", "/api/bookmarks?tag=": "tag[0]", "/api/bookmarks?limit=500": "limit"} {
		if r := hs.do("GET", q, nil); r.status != 422 || r.err(t).Error.Field != field {
			t.Errorf("GET %s: %d %s", q, r.status, r.body)
		}
	}
	if p := hs.bookmarks("/api/bookmarks"); p.Total != 0 {
		t.Errorf("bad requests kept %d bookmarks", p.Total)
	}
}

// TestBookmarksExportImport: the export is the seed's bookmarks.json; it
// imports back whole into an empty store, a second time is all skipped,
// and a bad file is refused, naming the field, with nothing kept.
func TestBookmarksExportImport(t *testing.T) {
	hs := newHarness(t, options{config: func(c *api.Config) { c.MaxImportBytes = 64 << 10 }})
	runID := hs.sparkRun("urban farming")
	for i := range 3 {
		if r, _ := hs.bookmark(runID, i, map[string]any{"tags": []string{"t"}}); r.status != 201 {
			t.Fatalf("bookmark %d: %s", i, r.body)
		}
	}
	r := hs.do("GET", "/api/bookmarks/export", nil)
	if r.status != 200 || !strings.Contains(r.header.Get("Content-Disposition"), `filename="bookmarks.json"`) {
		t.Fatalf("export: %d %v", r.status, r.header)
	}
	var file map[string]map[string]any
	r.json(t, &file)
	if len(file) != 3 {
		t.Fatalf("export has %d bookmarks", len(file))
	}
	for id, e := range file {
		for _, k := range []string{"id", "idea_text", "topic", "context", "score", "improved_score", "tags", "timestamp", "metadata"} {
			if _, ok := e[k]; !ok {
				t.Errorf("export entry %s lacks the seed's field %q: %v", id, k, e)
			}
		}
		if e["id"] != id {
			t.Errorf("entry %s has id %v", id, e["id"])
		}
		meta, _ := e["metadata"].(map[string]any)
		if meta["model_used"] != "mock-1" {
			t.Errorf("metadata %v", meta)
		}
	}

	other := newHarness(t, options{config: func(c *api.Config) { c.MaxImportBytes = 64 << 10 }})
	imp := func(h *harness, body []byte) (resp, api.ImportResult) {
		r := h.do("POST", "/api/bookmarks/import", body)
		var out api.ImportResult
		if r.status == 200 {
			r.json(t, &out)
		}
		return r, out
	}
	if r, res := imp(other, r.body); r.status != 200 || res.Imported != 3 || res.Skipped != 0 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if r, res := imp(other, r.body); res.Imported != 0 || res.Skipped != 3 {
		t.Fatalf("import again: %d %s", r.status, r.body)
	}
	again := other.do("GET", "/api/bookmarks/export", nil)
	var file2 map[string]map[string]any
	again.json(t, &file2)
	for id, e := range file {
		a, _ := json.Marshal(e)
		b, _ := json.Marshal(file2[id])
		if string(a) != string(b) {
			t.Errorf("bookmark %s changed through export and import:\n%s\n%s", id, a, b)
		}
	}
	// The seed's own shape, with a zone-less timestamp as Python writes it.
	seed := `{"b-1": {"id": "b-1", "idea_text": "Solar co-ops", "topic": "energy", "context": "", "score": 7.5, "improved_score": 8.0,
  "tags": ["sun"], "timestamp": "2025-08-06T10:30:00.123456", "metadata": {"model_used": "gemini-2.5-flash", "temperature": 0.9, "token_count": 1500}}}`
	if r, res := imp(other, []byte(seed)); r.status != 200 || res.Imported != 1 {
		t.Fatalf("seed file: %d %s", r.status, r.body)
	}
	if p := other.bookmarks("/api/bookmarks?tag=sun"); p.Total != 1 || p.Bookmarks[0].CreatedAt.Year() != 2025 || p.Bookmarks[0].Metadata.TokenCount != 1500 {
		t.Errorf("imported seed bookmark: %+v", p.Bookmarks)
	}
	for _, tc := range []struct {
		body   string
		status int
		field  string
	}{
		{`{"x": {"idea_text": "a", "score": 11}}`, 422, "x.score"},
		{`{"x": {"idea_text": ""}}`, 422, "x.idea_text"},
		{`{"x": {"id": "y", "idea_text": "a"}}`, 422, "x.id"},
		{`{"x": {"idea_text": "a", "timestamp": "yesterday"}}`, 422, "x.timestamp"},
		{`{"x": {"idea_text": "a", "colour": "red"}}`, 400, "x.colour"},
		{`{"x": {"idea_text": 3}}`, 400, "x.idea_text"},
		{`{"x": {"idea_text": "a\u001b]0;pwned\u0007"}}`, 422, "x.idea_text"},
		{`{"x": {"idea_text": "a", "tags": ["two\nlines"]}}`, 422, "x.tags[0]"},
		{`{"x\u001b[2J": {"idea_text": "a"}}`, 422, `x\x1b[2J`},
		{`[]`, 400, ""},
		{`{"x": {"idea_text": "` + strings.Repeat("a", 70<<10) + `"}}`, 413, ""},
	} {
		r, _ := imp(other, []byte(tc.body))
		if e := r.err(t); r.status != tc.status || e.Error.Field != tc.field {
			t.Errorf("import %.60s: %d %q %s; want %d %q", tc.body, r.status, e.Error.Field, e.Error.Message, tc.status, tc.field)
		}
	}
	if p := other.bookmarks("/api/bookmarks"); p.Total != 4 {
		t.Errorf("bad imports kept bookmarks: %d", p.Total)
	}
}

// TestRemix: a remix is a spark run seeded with the bookmarked ideas
// (improved when they were), on the first bookmark's topic unless given.
func TestRemix(t *testing.T) {
	hs := newHarness(t, options{workers: 2})
	runID := hs.sparkRun("urban farming")
	var bs []*madspark.Bookmark
	for i := range 2 {
		_, out := hs.bookmark(runID, i, nil)
		bs = append(bs, out.Bookmark)
	}
	r := hs.do("POST", "/api/bookmarks/remix", map[string]any{"bookmark_ids": []string{bs[0].ID, bs[1].ID},
		"params": map[string]any{"num_candidates": 4, "num_top_candidates": 2}, "tags": []string{"remix"}})
	if r.status != 202 {
		t.Fatalf("remix: %d %s", r.status, r.body)
	}
	var started api.StartRunResponse
	r.json(t, &started)
	run := hs.wait(started.RunID)
	var p struct {
		Topic         string   `json:"topic"`
		Context       string   `json:"context"`
		SeedIdeas     []string `json:"seed_ideas"`
		NumCandidates int      `json:"num_candidates"`
	}
	if err := json.Unmarshal(run.Params, &p); err != nil {
		t.Fatal(err)
	}
	if run.Status != madspark.RunSucceeded || p.Topic != "urban farming" || p.Context != "cheap" || p.NumCandidates != 4 ||
		!slices.Equal(p.SeedIdeas, []string{bs[0].ImprovedIdea, bs[1].ImprovedIdea}) || !slices.Equal(run.Tags, []string{"remix"}) {
		t.Fatalf("remix run: %+v params %s", run.RunSummary, run.Params)
	}
	if !strings.Contains(string(run.Result), "builds on the kept idea") {
		t.Errorf("the remix's ideas do not build on the bookmarks: %s", clip(run.Result))
	}
	// Another topic.
	r = hs.do("POST", "/api/bookmarks/remix", map[string]any{"bookmark_ids": []string{bs[1].ID}, "topic": "rural schools", "context": ""})
	r.json(t, &started)
	if err := json.Unmarshal(hs.run(started.RunID).Params, &p); err != nil || p.Topic != "rural schools" || p.Context != "cheap" {
		t.Errorf("remix with a topic: %+v", p)
	}
	for _, tc := range []struct {
		body   string
		status int
		field  string
	}{
		{`{"bookmark_ids": []}`, 422, "bookmark_ids"},
		{`{}`, 422, "bookmark_ids"},
		{`{"bookmark_ids": ["` + bs[0].ID + `", "nope"]}`, 404, "bookmark_ids[1]"},
		{`{"bookmark_ids": ["` + strings.Repeat(bs[0].ID+`","`, 10) + bs[0].ID + `"]}`, 422, "bookmark_ids"},
		{`{"bookmark_ids": ["` + bs[0].ID + `"], "params": {"seed_ideas": ["x"]}}`, 422, "params.seed_ideas"},
		{`{"bookmark_ids": ["` + bs[0].ID + `"], "params": {"num_candidates": 99}}`, 422, "params.num_candidates"},
		{`{"bookmark_ids": ["` + bs[0].ID + `"], "params": [1]}`, 400, "params"},
		{`{"bookmark_ids": "x"}`, 400, "bookmark_ids"},
	} {
		r := hs.do("POST", "/api/bookmarks/remix", tc.body)
		if e := r.err(t); r.status != tc.status || e.Error.Field != tc.field {
			t.Errorf("remix %.70s: %d %q %s; want %d %q", tc.body, r.status, e.Error.Field, e.Error.Message, tc.status, tc.field)
		}
	}
}
