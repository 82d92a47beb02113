// Package web serves madspark's web UI: a React application, built by Vite
// into dist/ and embedded in the binary, so that `madspark serve` needs no
// npm step. Rebuild dist/ with `npm ci && npm run build` in this directory;
// the build is reproducible, and CI fails when the committed dist/ is not
// what the sources build.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed all:dist
var dist embed.FS

// Cache policies: Vite names every file under assets/ by its content's
// hash, so a name always means the same bytes; everything else, index.html
// first, must be revalidated so that a new build is picked up at once.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// contentSecurityPolicy allows the page only its own scripts, styles (and
// the inline style attributes the charts set), images and connections.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// reserved are the path prefixes of the server's own routes. A request
// under one of them that reaches the UI matched no route, so it is answered
// with a JSON 404, never with the application's HTML.
var reserved = []string{"/api", "/ws", "/v1"}

// minGzip is the smallest file worth compressing.
const minGzip = 1024

// file is one file of the build, ready to serve.
type file struct {
	body []byte
	etag string
	ct   string
	// immutable is true for content-hashed assets.
	immutable bool
	// compress is true when the file is worth serving gzipped; the
	// compressed body is made on first request, so that starting the
	// server costs nothing.
	compress bool
	gzOnce   sync.Once
	gz       []byte // nil when compression did not pay
}

// gzipped returns the gzip-compressed body, or nil.
func (f *file) gzipped() []byte {
	f.gzOnce.Do(func() {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
		_, werr := zw.Write(f.body)
		if cerr := zw.Close(); werr == nil && cerr == nil && b.Len() < len(f.body) {
			f.gz = b.Bytes()
		}
	})
	return f.gz
}

// Handler serves the embedded UI. See New.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err == nil {
		var h http.Handler
		if h, err = New(sub); err == nil {
			return h
		}
	}
	return unavailable{err}
}

// New returns a handler that serves the build in fsys (the contents of
// dist/):
//
//   - GET and HEAD only (others: 405 with Allow);
//   - a file of the build by its path, with a strong ETag, gzip when the
//     client accepts it, and Cache-Control "immutable" for the
//     content-hashed files under /assets/ and "no-cache" for the rest;
//   - index.html for any other path without a file extension, so that the
//     application's own routes (/runs/ID, /bookmarks) survive a reload;
//   - a JSON 404 in the API's error shape for a missing file, and for any
//     path under /api/, /ws/ or /v1/ (routes the server did not match).
//
// New fails when fsys has no index.html.
func New(fsys fs.FS) (http.Handler, error) {
	h := &handler{files: map[string]*file{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		h.files[name] = newFile(name, body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: reading the build: %w", err)
	}
	if h.files["index.html"] == nil {
		return nil, errors.New("web: the build has no index.html; run `npm ci && npm run build` in web/")
	}
	return h, nil
}

func newFile(name string, body []byte) *file {
	sum := sha256.Sum256(body)
	f := &file{
		body:      body,
		etag:      `"` + hex.EncodeToString(sum[:12]) + `"`,
		ct:        mime.TypeByExtension(path.Ext(name)),
		immutable: strings.HasPrefix(name, "assets/"),
	}
	if f.ct == "" {
		f.ct = http.DetectContentType(body)
	}
	f.compress = len(body) >= minGzip && compressible(f.ct)
	return f
}

func compressible(ct string) bool {
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "javascript") || strings.Contains(ct, "json") || strings.Contains(ct, "svg")
}

// IsReserved reports whether path belongs to the server's own routes (/api,
// /ws, /v1) rather than to the UI.
func IsReserved(path string) bool {
	for _, pre := range reserved {
		if path == pre || strings.HasPrefix(path, pre+"/") {
			return true
		}
	}
	return false
}

type handler struct {
	files map[string]*file
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if IsReserved(p) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("unknown URL: %s %s", r.Method, p))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request", fmt.Sprintf("method %s is not allowed on %s", r.Method, p))
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+p), "/")
	if name == "" {
		name = "index.html"
	}
	f := h.files[name]
	if f == nil {
		if path.Ext(name) != "" || strings.HasPrefix(name, "assets/") {
			writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no file %s", p))
			return
		}
		// A route of the application: it renders it.
		name, f = "index.html", h.files["index.html"]
	}
	hd := w.Header()
	hd.Set("Content-Type", f.ct)
	hd.Set("X-Content-Type-Options", "nosniff")
	if f.immutable {
		hd.Set("Cache-Control", cacheImmutable)
	} else {
		hd.Set("Cache-Control", cacheRevalidate)
	}
	if name == "index.html" {
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("Referrer-Policy", "same-origin")
	}
	body, etag := f.body, f.etag
	if f.compress {
		hd.Add("Vary", "Accept-Encoding")
		if gz := f.gzipped(); gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, etag = gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("ETag", etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(coding) != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// unavailable answers every request when the embedded build is unusable.
type unavailable struct{ err error }

func (u unavailable) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusServiceUnavailable, "internal", "the web UI is not available in this binary: "+u.err.Error())
}

// writeError writes the API's error shape: {"error": {"message", "type"}}.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg, "type": typ}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
