package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/store/postgres/pgtest"
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

// TestTextRefusedBeforeRuns: invalid UTF-8, NUL and other control
// characters (a terminal's escape sequences), a line break in a tag, whole
// numbers beyond their type and numbers that are not finite are refused
// with a 4xx naming the problem, on /api and /v1 alike, and no run is
// started.
func TestTextRefusedBeforeRuns(t *testing.T) {
	hs := newHarness(t, options{})
	for _, body := range []string{
		`{"pipeline":"spark","params":{"topic":"caf` + "\xff" + `"}}`,
		`{"pipeline":"spark","params":{"topic":"a\u0000b"}}`,
		`{"pipeline":"spark","params":{"topic":"x"},"tags":["a\u0000"]}`,
		`{"pipeline":"spark","params":{"topic":"x"},"tags":["two\nlines"]}`,
		`{"pipeline":"spark","params":{"topic":"title\u001b]0;pwned\u0007"}}`,
		`{"pipeline":"spark","params":{"topic":"x","num_candidates":99999999999999999999}}`,
		`{"pipeline":"chaos","params":{"prompt":"x","iterations":1e400}}`,
	} {
		r := hs.do("POST", "/api/runs", body)
		if r.status != 400 && r.status != 422 {
			t.Errorf("%q: %d %s", body, r.status, r.body)
		}
	}
	for _, body := range []string{
		`{"model":"madspark-spark","messages":[{"role":"user","content":"caf` + "\xff" + `"}]}`,
		`{"model":"madspark-spark","messages":[{"role":"user","content":"a\u0000b"}]}`,
		`{"model":"madspark-spark","messages":[{"role":"user","content":"title\u001b]0;pwned\u0007 \u001b[2J"}]}`,
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

// TestStreamsRefusedToForeignPages: a run's progress is refused to a page
// of another origin over SSE as over the WebSocket, and an allowed https
// origin does not admit its http twin (the scheme counts); the allowed
// origin and the server's own page follow the run. On both stores.
func TestStreamsRefusedToForeignPages(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { streamsRefused(t, options{}) })
	t.Run("postgres", func(t *testing.T) { streamsRefused(t, options{postgres: pgtest.URL(t)}) })
}

func streamsRefused(t *testing.T, o options) {
	o.workers, o.origins = 1, []string{"https://ui.example.org"}
	hs := newHarness(t, o)
	id := hs.startRun("spark", map[string]any{"topic": "streams"})
	hs.wait(id)
	for _, h := range [][]string{
		{"Origin", "https://evil.example"},
		{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Origin", "http://ui.example.org", "Sec-Fetch-Site", "cross-site"},
	} {
		r := hs.do("GET", "/api/runs/"+id+"/events", nil, h...)
		if r.status != http.StatusForbidden || r.err(t).Error.Type != "forbidden" || strings.Contains(string(r.body), "event:") {
			t.Errorf("SSE with %v: %d %s", h, r.status, r.body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, origin := range []string{"http://ui.example.org", "https://ui.example.org:8443", "https://evil.example"} {
		if msgs, code, err := hs.ws(ctx, "/ws/runs/"+id, origin); err == nil || code != http.StatusForbidden || len(msgs) > 0 {
			t.Errorf("WebSocket from %s: %v, status %d, %d messages", origin, err, code, len(msgs))
		}
	}
	if msgs, _, err := hs.ws(ctx, "/ws/runs/"+id, "https://ui.example.org"); err != nil || len(msgs) == 0 {
		t.Errorf("WebSocket from the allowed origin: %v, %d messages", err, len(msgs))
	}
	for _, h := range [][]string{
		{"Origin", "https://ui.example.org", "Sec-Fetch-Site", "cross-site"},
		{"Origin", hs.url, "Sec-Fetch-Site", "same-origin"},
	} {
		if r := hs.do("GET", "/api/runs/"+id+"/events", nil, h...); r.status != http.StatusOK || !strings.Contains(string(r.body), "event: result") {
			t.Errorf("SSE with %v: %d %s", h, r.status, r.body)
		}
	}
}
