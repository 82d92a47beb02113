package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/madspark/madspark/api"
)

// TestBodyLimits: every JSON body has a size limit, answered with a
// one-line JSON 413, and is decoded strictly (an unknown field is a 400
// naming it); an import holds a bounded number of bookmarks.
func TestBodyLimits(t *testing.T) {
	hs := newHarness(t, options{config: func(c *api.Config) {
		c.MaxBodyBytes, c.MaxImportBytes, c.MaxImportItems = 4096, 64<<10, 5
	}})
	big := strings.Repeat("x", 5000)
	huge := strings.Repeat("x", 1<<20+1) // the server's own limit on chat bodies
	for _, tc := range []struct{ path, tooLarge, unknown string }{
		{"/api/runs", `{"pipeline":"spark","params":{"topic":"` + big + `"}}`, `{"pipeline":"spark","bogus":1}`},
		{"/api/generate-ideas", `{"topic":"` + big + `"}`, `{"topic":"x","bogus":1}`},
		{"/api/bookmarks", `{"run_id":"r","notes":"` + big + `"}`, `{"run_id":"r","bogus":1}`},
		{"/api/bookmarks/check", `{"idea_text":"` + big + `"}`, `{"idea_text":"x","bogus":1}`},
		{"/api/bookmarks/remix", `{"bookmark_ids":["b"],"topic":"` + big + `"}`, `{"bookmark_ids":["b"],"bogus":1}`},
		{"/api/bookmarks/import", `{"x":{"idea_text":"` + strings.Repeat("x", 70<<10) + `"}}`, `{"x":{"idea_text":"a","bogus":1}}`},
		{"/v1/chat/completions", `{"model":"madspark-spark","messages":[{"role":"user","content":"` + huge + `"}]}`, `{"model":"madspark-spark","bogus":1}`},
	} {
		r := hs.do("POST", tc.path, tc.tooLarge)
		if e := r.err(t); r.status != 413 || !strings.Contains(e.Error.Message, "larger than") && !strings.Contains(e.Error.Message, "at most") {
			t.Errorf("POST %s with a body too large: %d %s", tc.path, r.status, clip(r.body))
		}
		r = hs.do("POST", tc.path, tc.unknown)
		if e := r.err(t); r.status != 400 || !strings.Contains(e.Error.Message, "bogus") {
			t.Errorf("POST %s with an unknown field: %d %s", tc.path, r.status, clip(r.body))
		}
	}

	entries := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"id%d":{"id":"id%d","idea_text":"idea number %d","topic":"t","context":"","score":5,"improved_score":5,"tags":[],"timestamp":"2025-08-06T10:30:00","metadata":{"model_used":"m","temperature":0.9,"token_count":1}}`, i, i, i)
		}
		return b.String() + "}"
	}
	r := hs.do("POST", "/api/bookmarks/import", entries(6))
	if e := r.err(t); r.status != 413 || e.Error.Type != "too_large" || !strings.Contains(e.Error.Message, "at most 5 bookmarks, got 6") {
		t.Errorf("import of 6 with a limit of 5: %d %s", r.status, r.body)
	}
	if p := hs.bookmarks("/api/bookmarks"); p.Total != 0 {
		t.Errorf("a refused import kept %d bookmarks", p.Total)
	}
	if r := hs.do("POST", "/api/bookmarks/import", entries(5)); r.status != 200 {
		t.Errorf("import of 5: %d %s", r.status, r.body)
	}
}
