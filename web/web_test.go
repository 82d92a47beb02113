package web

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

func serve(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var testBuild = fstest.MapFS{
	"index.html":             {Data: []byte(`<!doctype html><script type="module" src="/assets/index-abc123.js"></script>`)},
	"favicon.svg":            {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`)},
	"assets/index-abc123.js": {Data: bytes.Repeat([]byte("console.log('madspark');\n"), 200)},
}

func newTest(t *testing.T) http.Handler {
	t.Helper()
	h, err := New(testBuild)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestIndexAndClientRoutes(t *testing.T) {
	h := newTest(t)
	for _, target := range []string{"/", "/index.html", "/runs", "/runs/0123456789abcdef", "/bookmarks?q=x&tag=a", "/settings/"} {
		res := serve(t, h, "GET", target, nil)
		b := body(t, res)
		if res.StatusCode != 200 || !strings.Contains(b, "/assets/index-abc123.js") {
			t.Fatalf("%s: %d %q", target, res.StatusCode, b)
		}
		if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
			t.Errorf("%s: Content-Type %q", target, got)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("%s: index.html must be revalidated, Cache-Control %q", target, got)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", target, csp)
		}
	}
}

func TestAssetsAreImmutableAndCompressed(t *testing.T) {
	h := newTest(t)
	plain := serve(t, h, "GET", "/assets/index-abc123.js", nil)
	want := string(testBuild["assets/index-abc123.js"].Data)
	if b := body(t, plain); plain.StatusCode != 200 || b != want {
		t.Fatalf("plain: %d, %d bytes", plain.StatusCode, len(b))
	}
	if got := plain.Header.Get("Cache-Control"); got != cacheImmutable {
		t.Errorf("Cache-Control %q", got)
	}
	if got := plain.Header.Get("Content-Type"); !strings.Contains(got, "javascript") {
		t.Errorf("Content-Type %q", got)
	}
	if plain.Header.Get("Content-Encoding") != "" || !strings.Contains(plain.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("no gzip without Accept-Encoding, and Vary set: %v", plain.Header)
	}

	gz := serve(t, h, "GET", "/assets/index-abc123.js", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	if gz.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip accepted but not used: %v", gz.Header)
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	un, _ := io.ReadAll(zr)
	if string(un) != want {
		t.Fatalf("gzip body decompresses to %d bytes, want %d", len(un), len(want))
	}
	if gz.Header.Get("ETag") == plain.Header.Get("ETag") {
		t.Errorf("the gzip and identity bodies share an ETag %s", gz.Header.Get("ETag"))
	}
	if refused := serve(t, h, "GET", "/assets/index-abc123.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); refused.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 refuses gzip")
	}

	etag := plain.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{24}"$`).MatchString(etag) {
		t.Fatalf("ETag %q", etag)
	}
	again := serve(t, h, "GET", "/assets/index-abc123.js", map[string]string{"If-None-Match": etag})
	if again.StatusCode != http.StatusNotModified || body(t, again) != "" {
		t.Fatalf("If-None-Match: %d", again.StatusCode)
	}
	head := serve(t, h, "HEAD", "/favicon.svg", nil)
	if head.StatusCode != 200 || body(t, head) != "" || head.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("HEAD: %d %v", head.StatusCode, head.Header)
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	h := newTest(t)
	cases := []struct {
		method, target string
		status         int
		typ            string
	}{
		{"GET", "/assets/index-missing.js", 404, "not_found"},
		{"GET", "/robots.txt", 404, "not_found"},
		{"GET", "/api/nothing-here", 404, "not_found"},
		{"POST", "/api/runs/x/y", 404, "not_found"},
		{"GET", "/api", 404, "not_found"},
		{"GET", "/ws/runs/abc/extra", 404, "not_found"},
		{"GET", "/v1/unknown", 404, "not_found"},
		{"POST", "/", 405, "invalid_request"},
		{"DELETE", "/runs/abc", 405, "invalid_request"},
	}
	for _, c := range cases {
		res := serve(t, h, c.method, c.target, nil)
		var e struct {
			Error struct{ Message, Type string }
		}
		if err := json.Unmarshal([]byte(body(t, res)), &e); err != nil || res.StatusCode != c.status || e.Error.Type != c.typ || e.Error.Message == "" {
			t.Errorf("%s %s: %d %+v %v", c.method, c.target, res.StatusCode, e, err)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", c.method, c.target, ct)
		}
		if c.status == 405 && res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", c.method, c.target, res.Header.Get("Allow"))
		}
	}
	// Dot segments cannot climb out of the build: what is left is a route
	// of the application.
	res := serve(t, h, "GET", "/assets/../../../etc/passwd", nil)
	if b := body(t, res); b != string(testBuild["index.html"].Data) {
		t.Fatalf("traversal: %d %q", res.StatusCode, b)
	}
}

func TestNewNeedsIndex(t *testing.T) {
	if _, err := New(fstest.MapFS{"assets/a.js": {Data: []byte("x")}}); err == nil || !strings.Contains(err.Error(), "npm run build") {
		t.Fatalf("got %v", err)
	}
}

// TestEmbeddedBuild checks the committed build: it has an index.html whose
// every script, style sheet and icon is a file of the build, served.
func TestEmbeddedBuild(t *testing.T) {
	h := Handler()
	res := serve(t, h, "GET", "/", nil)
	index := body(t, res)
	if res.StatusCode != 200 || !strings.Contains(index, `<div id="root">`) {
		t.Fatalf("embedded index.html: %d %q", res.StatusCode, index)
	}
	refs := regexp.MustCompile(`(?:src|href)="(/[^"]+)"`).FindAllStringSubmatch(index, -1)
	var scripts int
	for _, m := range refs {
		res := serve(t, h, "GET", m[1], nil)
		if res.StatusCode != 200 {
			t.Errorf("%s, named by index.html, is not served: %d", m[1], res.StatusCode)
		}
		if strings.HasSuffix(m[1], ".js") {
			scripts++
			if res.Header.Get("Cache-Control") != cacheImmutable {
				t.Errorf("%s: Cache-Control %q", m[1], res.Header.Get("Cache-Control"))
			}
		}
	}
	if scripts == 0 {
		t.Fatalf("index.html loads no script: %q", index)
	}
}

// TestConcurrentFirstRequests: the gzip body made on first request is made
// once, whatever the number of clients asking at the same time.
func TestConcurrentFirstRequests(t *testing.T) {
	h := newTest(t)
	want := string(testBuild["assets/index-abc123.js"].Data)
	errs := make(chan string, 16)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := httptest.NewRequest("GET", "/assets/index-abc123.js", nil)
			r.Header.Set("Accept-Encoding", "gzip")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			zr, err := gzip.NewReader(w.Body)
			if err != nil {
				errs <- err.Error()
				return
			}
			if b, _ := io.ReadAll(zr); string(b) != want {
				errs <- "wrong body"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
