package search

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"
)

// recorder is a Provider that records the searches it is asked for.
type recorder struct {
	name string
	err  error

	mu    sync.Mutex
	calls []string
}

func (r *recorder) Name() string { return r.name }

func (r *recorder) Search(_ context.Context, query string, max int) ([]Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, query)
	if r.err != nil {
		return nil, r.err
	}
	return []Result{{Title: query, URL: "https://example.org/" + query, Snippet: "about " + query, Score: 1}}, nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// TestCachedNoRequest checks that a second identical search through a real
// provider is answered from the store without a request.
func TestCachedNoRequest(t *testing.T) {
	f := newTavilyFake(t, "raft consensus", 2)
	f.reply(http.StatusOK, nil, tavilyOK)
	store := newMemStore()
	p := Cached(NewTavily(testKey, WithBaseURL(f.srv.URL)), store, time.Hour)
	if p.Name() != "tavily" {
		t.Errorf("name %q", p.Name())
	}
	first, err := p.Search(context.Background(), "raft consensus", 2)
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.Search(context.Background(), "raft consensus", 2)
	if err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() != 1 || store.puts != 1 || store.gets != 2 {
		t.Errorf("%d requests, %d puts, %d gets; want 1, 1, 2", f.calls.Load(), store.puts, store.gets)
	}
	if !reflect.DeepEqual(first, second) || len(second) != 2 {
		t.Errorf("cached results differ:\n%+v\n%+v", first, second)
	}
	// The stored value is JSON: the results and when they were stored.
	var e struct {
		Results  []Result  `json:"results"`
		StoredAt time.Time `json:"stored_at"`
	}
	if err := json.Unmarshal(store.m[cacheKey("tavily", "raft consensus", 2)], &e); err != nil ||
		!reflect.DeepEqual(e.Results, first) || time.Since(e.StoredAt) > time.Minute {
		t.Errorf("stored entry %+v: %v", e, err)
	}
}

func TestCachedKeys(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	r := &recorder{name: "one"}
	p := Cached(r, store, time.Hour)
	p.Search(ctx, "raft", 3)
	p.Search(ctx, "raft", 3)
	if r.count() != 1 {
		t.Fatalf("identical search: %d calls, want 1", r.count())
	}
	p.Search(ctx, "raft", 2)  // another max
	p.Search(ctx, "paxos", 3) // another query
	p.Search(ctx, "Raft", 3)  // queries are not folded
	if r.count() != 4 {
		t.Errorf("different max or query: %d calls, want 4", r.count())
	}
	other := &recorder{name: "two"}
	Cached(other, store, time.Hour).Search(ctx, "raft", 3)
	if other.count() != 1 {
		t.Errorf("another provider used the first one's entry")
	}
	if cacheKey("a", "b\x00c", 1) == cacheKey("a\x00b", "c", 1) {
		t.Error("keys are ambiguous")
	}
}

func TestCachedExpiry(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	r := &recorder{name: "r"}
	p := Cached(r, store, time.Hour).(*cached)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return now }
	p.Search(ctx, "q", 3)
	now = now.Add(59 * time.Minute)
	p.Search(ctx, "q", 3)
	if r.count() != 1 {
		t.Fatalf("fresh entry: %d calls, want 1", r.count())
	}
	now = now.Add(time.Minute)
	p.Search(ctx, "q", 3)
	if r.count() != 2 {
		t.Fatalf("expired entry: %d calls, want 2", r.count())
	}
	p.Search(ctx, "q", 3) // refetched results were stored again
	if r.count() != 2 {
		t.Errorf("after refetch: %d calls, want 2", r.count())
	}

	// ttl <= 0: entries never expire.
	forever := Cached(r, store, 0).(*cached)
	forever.now = func() time.Time { return now.Add(1000 * time.Hour) }
	forever.Search(ctx, "q", 3)
	if r.count() != 2 {
		t.Errorf("ttl 0: %d calls, want 2", r.count())
	}
}

func TestCachedStoreFailures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name             string
		failGet, failPut bool
	}{{"get", true, false}, {"put", false, true}, {"both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			store.set(func(s *memStore) { s.failGet, s.failPut = tc.failGet, tc.failPut })
			r := &recorder{name: "r"}
			p := Cached(r, store, time.Hour)
			for i := range 2 {
				res, err := p.Search(ctx, "q", 3)
				if err != nil || len(res) != 1 || res[0].Title != "q" {
					t.Fatalf("search %d: %v %+v", i, err, res)
				}
			}
			if r.count() != 2 {
				t.Errorf("%d calls, want 2: a failing store is a miss", r.count())
			}
		})
	}

	// An entry that does not decode is a miss, and is replaced.
	store := newMemStore()
	store.m[cacheKey("r", "q", 3)] = []byte("{not json")
	r := &recorder{name: "r"}
	p := Cached(r, store, time.Hour)
	for range 2 {
		if res, err := p.Search(ctx, "q", 3); err != nil || len(res) != 1 {
			t.Fatalf("corrupt entry: %v %+v", err, res)
		}
	}
	if r.count() != 1 {
		t.Errorf("corrupt entry: %d calls, want 1", r.count())
	}
}

func TestCachedErrorsNotStored(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	boom := errors.New("boom")
	r := &recorder{name: "r", err: boom}
	p := Cached(r, store, time.Hour)
	if _, err := p.Search(ctx, "q", 3); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the provider's", err)
	}
	if store.puts != 0 {
		t.Errorf("a failed search was stored")
	}
	r.mu.Lock()
	r.err = nil
	r.mu.Unlock()
	if res, err := p.Search(ctx, "q", 3); err != nil || len(res) != 1 || r.count() != 2 {
		t.Errorf("after a failure: %v %+v, %d calls", err, res, r.count())
	}
}

func TestCachedNil(t *testing.T) {
	r := &recorder{name: "r"}
	if p := Cached(r, nil, time.Hour); p != Provider(r) {
		t.Errorf("nil store: %#v, want the provider itself", p)
	}
	if p := Cached(nil, newMemStore(), time.Hour); p != nil {
		t.Errorf("nil provider: %#v, want nil", p)
	}
}
