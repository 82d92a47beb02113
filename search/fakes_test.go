package search

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// testKey is the API key the fakes expect. Error replies echo it back, so
// that tests can check it never reaches an error.
const testKey = "tvly-dev-SECRETkey0123456789"

// fake is an in-process stand-in for a search API. It checks every request
// as the real service expects it and replies with status, header and body.
type fake struct {
	t *testing.T
	// check validates a request; it reports problems with t.Errorf.
	check func(t *testing.T, r *http.Request, body []byte)
	// wantQuery and wantMax are the query and result count the request
	// must carry.
	wantQuery string
	wantMax   int

	mu     sync.Mutex
	status int
	header http.Header
	body   string
	// block, when set, makes the handler wait until the request is
	// cancelled or the test ends.
	block bool

	calls   atomic.Int32
	arrived chan struct{} // receives once per request, if not full
	done    chan struct{}
	srv     *httptest.Server
}

func newFake(t *testing.T, query string, max int, check func(*testing.T, *http.Request, []byte)) *fake {
	f := &fake{t: t, check: check, wantQuery: query, wantMax: max, status: http.StatusOK, arrived: make(chan struct{}, 16), done: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.done)
		f.srv.Close()
	})
	return f
}

// reply sets the fake's next replies.
func (f *fake) reply(status int, header http.Header, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.header, f.body = status, header, body
}

// blockAll makes the fake hold every request until it is cancelled or the
// test ends.
func (f *fake) blockAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.block = true
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("reading request body: %v", err)
	}
	f.check(f.t, r, body)
	select {
	case f.arrived <- struct{}{}:
	default:
	}
	f.mu.Lock()
	status, header, reply, block := f.status, f.header, f.body, f.block
	f.mu.Unlock()
	if block {
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, reply)
}

// newTavilyFake returns a fake of POST https://api.tavily.com/search that
// expects query and max.
func newTavilyFake(t *testing.T, query string, max int) *fake {
	var f *fake
	f = newFake(t, query, max, func(t *testing.T, r *http.Request, body []byte) {
		if r.Method != http.MethodPost || r.URL.Path != "/search" || r.URL.RawQuery != "" {
			t.Errorf("request %s %s, want POST /search", r.Method, r.URL)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization %q, want the bearer key", got)
		}
		if got := r.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type %q", got)
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("body %q: %v", body, err)
		}
		want := map[string]any{
			"query":          f.wantQuery,
			"max_results":    float64(f.wantMax),
			"search_depth":   "basic",
			"include_answer": false,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body %v, want %v", got, want)
		}
	})
	return f
}

// newBraveFake returns a fake of GET
// https://api.search.brave.com/res/v1/web/search that expects query and max.
func newBraveFake(t *testing.T, query string, max int) *fake {
	var f *fake
	f = newFake(t, query, max, func(t *testing.T, r *http.Request, body []byte) {
		if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" {
			t.Errorf("request %s %s, want GET /res/v1/web/search", r.Method, r.URL.Path)
		}
		want := map[string][]string{"q": {f.wantQuery}, "count": {strconv.Itoa(f.wantMax)}}
		if got := map[string][]string(r.URL.Query()); !reflect.DeepEqual(got, want) {
			t.Errorf("query %v, want %v", got, want)
		}
		if got := r.Header.Get("X-Subscription-Token"); got != testKey {
			t.Errorf("X-Subscription-Token %q, want the key", got)
		}
		if got := r.Header.Get("Accept"); got != "application/json" {
			t.Errorf("Accept %q", got)
		}
		if r.Header.Get("Authorization") != "" || len(body) != 0 {
			t.Errorf("unexpected Authorization %q or body %q", r.Header.Get("Authorization"), body)
		}
	})
	return f
}

// memStore is a madspark.CacheStore in memory that can be made to fail.
type memStore struct {
	mu               sync.Mutex
	m                map[string][]byte
	failGet, failPut bool
	gets, puts       int
}

func newMemStore() *memStore { return &memStore{m: map[string][]byte{}} }

func (s *memStore) GetCache(_ context.Context, k string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.failGet {
		return nil, false, errors.New("store down")
	}
	v, ok := s.m[k]
	return v, ok, nil
}

func (s *memStore) PutCache(_ context.Context, k string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	if s.failPut {
		return errors.New("store down")
	}
	s.m[k] = v
	return nil
}

func (s *memStore) set(f func(s *memStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}
