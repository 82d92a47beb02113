package api_test

import (
	"testing"

	"github.com/madspark/madspark/api"
)

// TestCrossSiteRequestsRefused: a page of another site cannot start a run,
// whatever the content type it sends, nor send a body that is not JSON;
// nothing is started and each answer is the documented JSON error.
func TestCrossSiteRequestsRefused(t *testing.T) {
	hs := newHarness(t, options{origins: []string{"https://ui.example.org"}})
	start := map[string]any{"pipeline": "spark", "params": map[string]any{"topic": "x"}}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json"} {
		r := hs.do("POST", "/api/runs", start, "Origin", "https://evil.example", "Content-Type", ct)
		if r.status != 403 || r.err(t).Error.Type != "forbidden" {
			t.Errorf("foreign origin, %s: %d %s", ct, r.status, r.body)
		}
		r = hs.do("POST", "/api/generate-ideas", start, "Sec-Fetch-Site", "cross-site", "Content-Type", ct)
		if r.status != 403 {
			t.Errorf("cross-site generate-ideas, %s: %d %s", ct, r.status, r.body)
		}
		r = hs.do("POST", "/v1/chat/completions", map[string]any{"model": "madspark-spark", "messages": []map[string]string{{"role": "user", "content": "x"}}},
			"Origin", "https://evil.example", "Content-Type", ct)
		if r.status != 403 {
			t.Errorf("cross-site chat completion, %s: %d %s", ct, r.status, r.body)
		}
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded"} {
		r := hs.do("POST", "/api/runs", start, "Content-Type", ct)
		if r.status != 415 || r.err(t).Error.Type != "unsupported_media_type" {
			t.Errorf("no origin, %s: %d %s", ct, r.status, r.body)
		}
	}
	if r := hs.do("DELETE", "/api/bookmarks/x", nil, "Origin", "https://evil.example"); r.status != 403 {
		t.Errorf("cross-site DELETE: %d %s", r.status, r.body)
	}
	var list api.RunList
	hs.do("GET", "/api/runs", nil, "Origin", "https://evil.example").json(t, &list)
	if len(list.Runs) != 0 {
		t.Fatalf("refused requests started %d runs", len(list.Runs))
	}
	// The allowed origin and the server's own page may.
	if r := hs.do("POST", "/api/runs", start, "Origin", "https://ui.example.org", "Sec-Fetch-Site", "cross-site"); r.status != 202 {
		t.Errorf("allowed origin: %d %s", r.status, r.body)
	}
	if r := hs.do("POST", "/api/runs", start, "Origin", hs.url, "Sec-Fetch-Site", "same-origin"); r.status != 202 {
		t.Errorf("own origin: %d %s", r.status, r.body)
	}
}

// TestTextRefusedBeforeRuns: invalid UTF-8, NUL characters and numbers
// that are not finite are refused with a 400 naming the problem, on /api
// and /v1 alike, and no run is started.
func TestTextRefusedBeforeRuns(t *testing.T) {
	hs := newHarness(t, options{})
	for _, body := range []string{
		`{"pipeline":"spark","params":{"topic":"caf` + "\xff" + `"}}`,
		`{"pipeline":"spark","params":{"topic":"a\u0000b"}}`,
		`{"pipeline":"spark","params":{"topic":"x"},"tags":["a\u0000"]}`,
	} {
		r := hs.do("POST", "/api/runs", body)
		if r.status != 400 && r.status != 422 {
			t.Errorf("%q: %d %s", body, r.status, r.body)
		}
	}
	for _, body := range []string{
		`{"model":"madspark-spark","messages":[{"role":"user","content":"caf` + "\xff" + `"}]}`,
		`{"model":"madspark-spark","messages":[{"role":"user","content":"a\u0000b"}]}`,
	} {
		if r := hs.do("POST", "/v1/chat/completions", body); r.status != 400 {
			t.Errorf("/v1 %q: %d %s", body, r.status, r.body)
		}
	}
	var list api.RunList
	hs.do("GET", "/api/runs", nil).json(t, &list)
	if len(list.Runs) != 0 {
		t.Fatalf("refused requests started %d runs", len(list.Runs))
	}
}
