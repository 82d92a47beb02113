package search

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

const key = "tvly-SECRET-key-123"

func tavilyFake(t *testing.T, status int, header http.Header, reply string) (*httptest.Server, *int) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if r.Method != http.MethodPost || r.URL.Path != "/search" || r.Header.Get("Authorization") != "Bearer "+key ||
			body["query"] == nil || body["max_results"] == nil || body["search_depth"] != "basic" {
			t.Errorf("unexpected request %s %s %v %v", r.Method, r.URL.Path, r.Header, body)
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		w.Write([]byte(reply))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestTavily(t *testing.T) {
	srv, _ := tavilyFake(t, 200, nil, `{"query":"q","results":[
		{"title":"Raft &amp; Paxos","url":"https://a.example/raft","content":"Consensus <b>made</b> simple","score":0.91,"published_date":"2024-01-02"},
		{"title":"No URL","url":"","content":"dropped"},
		{"title":"Second","url":"https://b.example","content":"more","score":0.5},
		{"title":"Third","url":"https://c.example","content":"x","score":0.4}]}`)
	res, err := NewTavily(key, WithBaseURL(srv.URL)).Search(context.Background(), "raft consensus", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Title != "Raft & Paxos" || res[0].Snippet != "Consensus made simple" || res[0].Score != 0.91 || res[0].Published != "2024-01-02" || res[1].URL != "https://b.example" {
		t.Fatalf("results %+v", res)
	}
	out := FormatForContext(res)
	if !strings.Contains(out, "[1] Raft & Paxos — https://a.example/raft") || !strings.Contains(out, "[2] Second") {
		t.Fatalf("FormatForContext:\n%s", out)
	}
}

func TestBrave(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/res/v1/web/search" || r.URL.Query().Get("q") != "go generics" || r.URL.Query().Get("count") != "3" || r.Header.Get("X-Subscription-Token") != key {
			t.Errorf("unexpected request %s %v", r.URL, r.Header)
		}
		w.Write([]byte(`{"type":"search","web":{"results":[
			{"title":"Tutorial: <strong>Generics</strong>","url":"https://go.dev/doc/tutorial/generics","description":"Get started with <strong>generics</strong> in Go.","page_age":"2022-03-15T00:00:00"},
			{"title":"Blog","url":"https://go.dev/blog/intro-generics","description":"An introduction","age":"March 22, 2022"}]}}`))
	}))
	defer srv.Close()
	res, err := NewBrave(key, WithBaseURL(srv.URL)).Search(context.Background(), "go generics", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Title != "Tutorial: Generics" || res[0].Snippet != "Get started with generics in Go." || res[1].Published != "March 22, 2022" || res[0].Score != 1 || res[1].Score != 0.5 {
		t.Fatalf("results %+v", res)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	srv, calls := tavilyFake(t, 429, http.Header{"Retry-After": {"7"}}, `{"detail":{"error":"rate limited for key `+key+`"}}`)
	_, err := NewTavily(key, WithBaseURL(srv.URL)).Search(ctx, "q", 3)
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 429 || !le.Retryable || le.RetryAfter != 7*time.Second || le.Provider != "tavily" || *calls != 1 {
		t.Fatalf("429: %#v", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Fatalf("key leaked: %v", err)
	}
	srv, _ = tavilyFake(t, 401, nil, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`)
	if _, err := NewTavily(key, WithBaseURL(srv.URL)).Search(ctx, "q", 3); !errors.As(err, &le) || le.Status != 401 || le.Retryable {
		t.Fatalf("401: %v", err)
	}
	srv, _ = tavilyFake(t, 200, nil, `{"results": [`)
	if _, err := NewTavily(key, WithBaseURL(srv.URL)).Search(ctx, "q", 3); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := NewBrave(key, WithBaseURL(srv.URL)).Search(cctx, "q", 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if p := FromEnv(env(map[string]string{"TAVILY_API_KEY": "a", "BRAVE_API_KEY": "b"})); p == nil || p.Name() != "tavily" {
		t.Fatal("tavily first")
	}
	if p := FromEnv(env(map[string]string{"BRAVE_API_KEY": "b"})); p == nil || p.Name() != "brave" {
		t.Fatal("brave")
	}
	if FromEnv(env(nil)) != nil {
		t.Fatal("no key, no provider")
	}
}

type memStore struct {
	mu   sync.Mutex
	m    map[string][]byte
	fail bool
}

func (s *memStore) GetCache(_ context.Context, k string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return nil, false, errors.New("store down")
	}
	v, ok := s.m[k]
	return v, ok, nil
}

func (s *memStore) PutCache(_ context.Context, k string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("store down")
	}
	s.m[k] = v
	return nil
}

type countingProvider struct{ n int }

func (c *countingProvider) Name() string { return "count" }
func (c *countingProvider) Search(_ context.Context, q string, max int) ([]Result, error) {
	c.n++
	return []Result{{Title: q, URL: "https://x.example", Score: 1}}, nil
}

func TestCached(t *testing.T) {
	ctx := context.Background()
	store := &memStore{m: map[string][]byte{}}
	p := &countingProvider{}
	c := Cached(p, store, time.Hour)
	for range 3 {
		if res, err := c.Search(ctx, "raft", 3); err != nil || res[0].Title != "raft" {
			t.Fatal(err)
		}
	}
	c.Search(ctx, "raft", 2)
	c.Search(ctx, "paxos", 3)
	if p.n != 3 || c.Name() != "count" {
		t.Fatalf("searches %d, want 3 (one per distinct query and count)", p.n)
	}
	expired := Cached(p, store, 0)
	expired.Search(ctx, "raft", 3)
	store.fail = true
	if res, err := c.Search(ctx, "raft", 3); err != nil || len(res) != 1 || p.n != 5 {
		t.Fatalf("failing store: %v %d", err, p.n)
	}
}
