package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/madspark/madspark/api"
)

// TestOpenAPIConformance checks the document against the handlers both
// ways: every route the server's mux has (the server's own and the API's)
// is documented, and every documented path and method answers (not 404 or
// 405) with an answer that the document describes — do checks each
// answer's status and JSON body against the documented schemas.
func TestOpenAPIConformance(t *testing.T) {
	hs := newHarness(t, options{workers: 1})
	r := hs.do("GET", "/api/openapi.json", nil)
	own, _ := hs.h.OpenAPI()
	if r.status != 200 || !bytes.Equal(r.body, own) || hs.doc.OpenAPI != "3.1.0" {
		t.Fatalf("GET /api/openapi.json: %d, version %q", r.status, hs.doc.OpenAPI)
	}

	// Every route is documented.
	var routes []string
	routes = append(routes, hs.srv.Routes()...)
	for _, rt := range hs.h.Routes() {
		routes = append(routes, rt.Method+" "+rt.Path)
	}
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt, " ")
		item := hs.doc.Paths.Find(path)
		if item == nil || item.GetOperation(method) == nil {
			t.Errorf("route %s is not in the OpenAPI document", rt)
		}
	}

	// Every documented operation answers.
	runID := hs.sparkRun("urban farming")
	_, b := hs.bookmark(runID, 0, nil)
	batchID := hs.batch("spark", "text/csv", "topic\nurban farming\n").BatchID
	values := map[string]string{"id": runID, "model": "madspark-spark"}
	var conv struct{ ID string }
	hs.do("POST", "/api/conversations", map[string]any{}).json(t, &conv)
	ev := hs.do("POST", "/api/evals", map[string]any{"pipeline": "spark", "topics": []any{"x"}})
	var started api.StartRunResponse
	if ev.status != 202 || json.Unmarshal(ev.body, &started) != nil {
		t.Fatalf("POST /api/evals: %d %s", ev.status, ev.body)
	}
	var ops []string
	for path, item := range hs.doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	sort.Slice(ops, func(i, j int) bool { // deletions last
		return !strings.HasPrefix(ops[i], "DELETE") && strings.HasPrefix(ops[j], "DELETE")
	})
	if len(ops) != len(routes) {
		t.Errorf("%d documented operations for %d routes", len(ops), len(routes))
	}
	for _, op := range ops {
		method, path, _ := strings.Cut(op, " ")
		url := path
		for k, v := range values {
			if strings.HasPrefix(path, "/api/bookmarks/") && k == "id" {
				v = b.Bookmark.ID
			}
			if strings.HasPrefix(path, "/api/batches/") && k == "id" {
				v = batchID
			}
			if strings.HasPrefix(path, "/api/conversations/") && k == "id" {
				v = conv.ID
			}
			if strings.HasPrefix(path, "/api/evals/") && k == "id" {
				v = started.RunID
			}
			url = strings.ReplaceAll(url, "{"+k+"}", v)
		}
		var body any
		switch op {
		case "POST /api/runs":
			body = map[string]any{"pipeline": "spark", "params": map[string]any{"topic": "x"}}
		case "POST /api/bookmarks":
			body = map[string]any{"run_id": runID, "candidate_index": 1}
		case "PATCH /api/bookmarks/{id}":
			body = map[string]any{"notes": "x"}
		case "POST /api/bookmarks/check":
			body = map[string]any{"idea_text": "x"}
		case "POST /api/bookmarks/remix":
			body = map[string]any{"bookmark_ids": []string{b.Bookmark.ID}}
		case "POST /api/bookmarks/import":
			body = map[string]any{}
		case "POST /api/batches":
			body = []map[string]any{{"topic": "x"}}
		case "POST /api/evals":
			body = map[string]any{"pipeline": "debate", "topics": "builtin", "limit": 1}
		case "POST /api/generate-ideas":
			body = map[string]any{"topic": "x", "num_candidates": 1}
		case "POST /v1/chat/completions":
			body = map[string]any{"model": "madspark-spark", "messages": []map[string]string{{"role": "user", "content": "x"}}}
		case "POST /v1/responses":
			body = map[string]any{"model": "madspark-spark", "input": "x"}
		case "POST /api/conversations/{id}/messages":
			body = map[string]any{"content": "What is a goroutine?"}
		case "POST /api/conversations/{id}/regenerate":
			body = map[string]any{}
		case "GET /api/bookmarks/search":
			url += "?q=x"
		}
		r := hs.do(method, url, body)
		if r.status == http.StatusNotFound || r.status == http.StatusMethodNotAllowed || r.status >= 500 {
			t.Errorf("documented %s answered %d: %s", op, r.status, clip(r.body))
		}
		if !validated.has(method + " " + path) {
			t.Errorf("the answer of %s was not checked against the document", op)
		}
	}
}

// TestOpenAPIWebUI: with the web UI mounted, GET / is documented too.
func TestOpenAPIWebUI(t *testing.T) {
	hs := newHarness(t, options{config: func(c *api.Config) { c.WebUI = true }})
	if item := hs.doc.Paths.Find("/"); item == nil || item.Get == nil {
		t.Error("GET / is not documented")
	}
	if !slices.Contains(hs.h.Documented(), api.Route{Method: "GET", Path: "/"}) {
		t.Error("Documented lacks GET /")
	}
	plain := newHarness(t, options{})
	if plain.doc.Paths.Find("/") != nil {
		t.Error("GET / is documented without the web UI")
	}
}
