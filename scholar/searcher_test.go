package scholar

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
)

// stubSource answers from a table keyed by query; a query it does not know
// fails with err (or succeeds with nothing when err is nil).
type stubSource struct {
	name    string
	answers map[string][]search.Result
	err     error
	// failFirst makes the first n calls fail with err.
	failFirst int32
	calls     atomic.Int32
}

func (s *stubSource) Name() string { return s.name }

func (s *stubSource) Search(ctx context.Context, q string, max int) ([]search.Result, error) {
	n := s.calls.Add(1)
	if n <= s.failFirst {
		return nil, s.err
	}
	if res, ok := s.answers[q]; ok {
		return res[:min(len(res), max)], nil
	}
	if s.err != nil {
		return nil, s.err
	}
	return []search.Result{}, nil
}

func TestSearcherMergesAndRanks(t *testing.T) {
	oa := &stubSource{name: "openalex", answers: map[string][]search.Result{
		"q1": {
			{Title: "Federated learning: a survey of methods", URL: "https://doi.org/10.1/fl", DOI: "10.1/fl", Year: 2021, Authors: []string{"A. Author"}, Venue: "Journal of FL"},
			{Title: "Only in OpenAlex", URL: "https://example.org/only"},
		},
		"q2": {
			{Title: "Federated learning: a survey of methods", URL: "https://doi.org/10.1/fl", DOI: "10.1/fl", Year: 2021},
		},
	}}
	ax := &stubSource{name: "arxiv", answers: map[string][]search.Result{
		"q1": {
			{Title: "Federated Learning: A Survey of Methods", URL: "https://arxiv.org/abs/2101.00001v2", Venue: "arXiv", Snippet: "abstract"},
			{Title: "A preprint", URL: "https://arxiv.org/abs/2202.00002v1", Year: 2022, Venue: "arXiv"},
		},
		"q2": {
			{Title: "A preprint, retitled", URL: "https://arxiv.org/pdf/2202.00002v3", DOI: "10.48550/arxiv.2202.00002"},
		},
	}}
	s := &Searcher{Sources: []search.Provider{oa, ax}, PerQuery: 5}
	f, err := s.Search(context.Background(), []string{"q1", "q2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Attempts) != 4 || f.Failed() != "" {
		t.Fatalf("attempts %+v", f.Attempts)
	}
	if f.Attempts[0] != (Attempt{Query: "q1", Source: "openalex", Found: 2}) || f.Attempts[3] != (Attempt{Query: "q2", Source: "arxiv", Found: 1}) {
		t.Errorf("attempts not in query, source order: %+v", f.Attempts)
	}
	var titles []string
	for i, w := range f.Works {
		if w.ID != i+1 {
			t.Errorf("work %d has ID %d", i, w.ID)
		}
		titles = append(titles, w.Title)
	}
	// The survey was found three times (by title across sources, by DOI
	// across queries), the preprint twice (by address, version and /pdf/
	// ignored), the OpenAlex-only work once.
	want := []string{"Federated learning: a survey of methods", "A preprint", "Only in OpenAlex"}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Fatalf("works %q, want %q", titles, want)
	}
	survey := f.Works[0]
	if survey.URL != "https://doi.org/10.1/fl" || survey.Snippet != "abstract" || survey.Venue != "Journal of FL" ||
		strings.Join(survey.Sources, ",") != "openalex,arxiv" {
		t.Errorf("merged survey %+v", survey)
	}
	preprint := f.Works[1]
	if preprint.DOI != "10.48550/arxiv.2202.00002" || preprint.Year != 2022 || preprint.URL != "https://arxiv.org/abs/2202.00002v1" {
		t.Errorf("merged preprint %+v", preprint)
	}
	if !(f.Works[0].Score > f.Works[1].Score && f.Works[1].Score > f.Works[2].Score) {
		t.Errorf("scores not decreasing: %v %v %v", f.Works[0].Score, f.Works[1].Score, f.Works[2].Score)
	}
	if w, ok := f.Work(2); !ok || w.Title != "A preprint" {
		t.Errorf("Work(2) = %+v %v", w, ok)
	}
	for _, id := range []int{0, 4, -1} {
		if _, ok := f.Work(id); ok {
			t.Errorf("Work(%d) found", id)
		}
	}
}

func TestSearcherLimit(t *testing.T) {
	var res []search.Result
	for i := range 10 {
		res = append(res, search.Result{Title: fmt.Sprintf("Distinct work number %02d", i), URL: fmt.Sprintf("https://example.org/%d", i)})
	}
	s := &Searcher{Sources: []search.Provider{&stubSource{name: "a", answers: map[string][]search.Result{"q": res}}}, PerQuery: 10, Limit: 4}
	f, err := s.Search(context.Background(), []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Works) != 4 || f.Works[3].Title != "Distinct work number 03" {
		t.Errorf("works %+v", f.Works)
	}
}

func TestSearcherToleratesAFailingSource(t *testing.T) {
	good := &stubSource{name: "openalex", answers: map[string][]search.Result{"q": {{Title: "A real finding here", URL: "https://example.org/a"}}}}
	bad := &stubSource{name: "semanticscholar", err: &llm.Error{Provider: "semanticscholar", Status: 403, Message: "Forbidden"}}
	s := &Searcher{Sources: []search.Provider{good, bad}, MaxRetryWait: time.Millisecond}
	f, err := s.Search(context.Background(), []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Works) != 1 || f.Attempts[1].Error == "" || !strings.Contains(f.Failed(), `semanticscholar for "q": semanticscholar: HTTP 403: Forbidden`) {
		t.Errorf("findings %+v, failed %q", f, f.Failed())
	}
	if bad.calls.Load() != 1 {
		t.Errorf("a permanent failure was retried: %d calls", bad.calls.Load())
	}
}

func TestSearcherRetriesTransientFailureOnce(t *testing.T) {
	flaky := &stubSource{name: "arxiv", failFirst: 1,
		err:     &llm.Error{Provider: "arxiv", Status: 503, Message: "Rate exceeded.", Retryable: true, RetryAfter: time.Hour},
		answers: map[string][]search.Result{"q": {{Title: "Found on the second try", URL: "https://arxiv.org/abs/1"}}}}
	s := &Searcher{Sources: []search.Provider{flaky}, MaxRetryWait: 10 * time.Millisecond}
	start := time.Now()
	f, err := s.Search(context.Background(), []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Works) != 1 || flaky.calls.Load() != 2 || f.Failed() != "" {
		t.Errorf("findings %+v, %d calls", f, flaky.calls.Load())
	}
	if time.Since(start) > time.Second {
		t.Errorf("the wait was not capped by MaxRetryWait: %v", time.Since(start))
	}

	// Still failing after the retry: the attempt records the error.
	down := &stubSource{name: "arxiv", failFirst: 99, err: flaky.err}
	good := &stubSource{name: "openalex", answers: flaky.answers}
	f, err = (&Searcher{Sources: []search.Provider{good, down}, MaxRetryWait: time.Millisecond}).Search(context.Background(), []string{"q"})
	if err != nil || down.calls.Load() != 2 || !strings.Contains(f.Attempts[1].Error, "Rate exceeded") {
		t.Errorf("err %v, %d calls, attempts %+v", err, down.calls.Load(), f.Attempts)
	}
	// No retry when disabled.
	once := &stubSource{name: "arxiv", failFirst: 99, err: flaky.err}
	_, _ = (&Searcher{Sources: []search.Provider{good, once}, MaxRetryWait: -1}).Search(context.Background(), []string{"q"})
	if once.calls.Load() != 1 {
		t.Errorf("retry disabled, %d calls", once.calls.Load())
	}
}

func TestSearcherAllFailedIsAnError(t *testing.T) {
	a := &stubSource{name: "openalex", err: &llm.Error{Provider: "openalex", Status: 429, Message: "Rate limit exceeded"}}
	b := &stubSource{name: "arxiv", err: &llm.Error{Provider: "arxiv", Status: 400, Message: "bad query"}}
	f, err := (&Searcher{Sources: []search.Provider{a, b}, MaxRetryWait: -1}).Search(context.Background(), []string{"q1", "q2"})
	if err == nil || !strings.Contains(err.Error(), "every search failed") || !strings.Contains(err.Error(), "Rate limit exceeded") || !strings.Contains(err.Error(), "bad query") {
		t.Fatalf("err %v", err)
	}
	// Each source's first error, once.
	if strings.Count(err.Error(), "Rate limit exceeded") != 1 {
		t.Errorf("repeated errors: %v", err)
	}
	if f == nil || len(f.Attempts) != 4 {
		t.Errorf("findings %+v", f)
	}

	// Nothing found is not a failure.
	f, err = (&Searcher{Sources: []search.Provider{&stubSource{name: "x"}}}).Search(context.Background(), []string{"q"})
	if err != nil || len(f.Works) != 0 || f.Works == nil {
		t.Errorf("nothing found: %v %+v", err, f)
	}
	if _, err := (&Searcher{}).Search(context.Background(), []string{"q"}); err == nil {
		t.Error("no sources: no error")
	}
	if _, err := (&Searcher{Sources: []search.Provider{a}}).Search(context.Background(), nil); err == nil {
		t.Error("no queries: no error")
	}
}

func TestSearcherRunsSearchesConcurrently(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	slow := search.Provider(slowSource{d: 50 * time.Millisecond, enter: func(d int) {
		mu.Lock()
		defer mu.Unlock()
		inFlight += d
		peak = max(peak, inFlight)
	}})
	start := time.Now()
	if _, err := (&Searcher{Sources: []search.Provider{slow, slow}}).Search(context.Background(), []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	if peak != 6 {
		t.Errorf("peak concurrency %d, want 6 (3 queries × 2 sources)", peak)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("6 searches of 50ms took %v", d)
	}
}

type slowSource struct {
	d     time.Duration
	enter func(int)
}

func (slowSource) Name() string { return "slow" }

func (s slowSource) Search(ctx context.Context, q string, max int) ([]search.Result, error) {
	s.enter(1)
	defer s.enter(-1)
	time.Sleep(s.d)
	return []search.Result{{Title: "Result for the query " + q, URL: "https://example.org/" + q}}, nil
}

func TestSearcherCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&Searcher{Sources: []search.Provider{NewOffline()}}).Search(ctx, []string{"q"})
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("err %v", err)
	}
}

// memCache is a madspark.CacheStore in memory.
type memCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *memCache) GetCache(_ context.Context, k string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok, nil
}

func (c *memCache) PutCache(_ context.Context, k string, v []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = v
	return nil
}

// TestThreeSourcesThroughTheCache searches the fakes of the three APIs
// through search.Cached: the second identical search asks no API, and
// the merged works are the same.
func TestThreeSourcesThroughTheCache(t *testing.T) {
	oa := newFakeAPI(t, nil, reply{body: openAlexOK})
	ax := newFakeAPI(t, nil, reply{body: arXivOK, contentType: "application/atom+xml"})
	s2 := newFakeAPI(t, nil, reply{body: semanticScholarOK})
	cache := &memCache{m: map[string][]byte{}}
	sources := []search.Provider{
		search.Cached(NewOpenAlex("", "", WithBaseURL(oa.srv.URL)), cache, 24*time.Hour),
		search.Cached(NewArXiv(WithBaseURL(ax.srv.URL), WithInterval(0)), cache, 24*time.Hour),
		search.Cached(NewSemanticScholar("", WithBaseURL(s2.srv.URL), WithInterval(0)), cache, 24*time.Hour),
	}
	s := &Searcher{Sources: sources, PerQuery: 3}
	first, err := s.Search(context.Background(), []string{"federated learning"})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Works) != 7 || first.Failed() != "" {
		t.Fatalf("%d works (want 3 + 2 + 2), failed %q", len(first.Works), first.Failed())
	}
	second, err := s.Search(context.Background(), []string{"federated learning"})
	if err != nil {
		t.Fatal(err)
	}
	if oa.calls()+ax.calls()+s2.calls() != 3 {
		t.Errorf("%d API requests for two identical searches, want 3", oa.calls()+ax.calls()+s2.calls())
	}
	if fmt.Sprint(first.Works) != fmt.Sprint(second.Works) {
		t.Error("cached search gave other works")
	}
	// The API's failure is not cached: a new query against a failing API
	// is an attempt with an error, and the others still answer.
	oa.mu.Lock()
	oa.replies = []reply{{status: http.StatusInternalServerError, body: `{"error":"boom"}`}}
	oa.mu.Unlock()
	third, err := (&Searcher{Sources: sources, PerQuery: 3, MaxRetryWait: time.Millisecond}).Search(context.Background(), []string{"another query"})
	if err != nil || third.Attempts[0].Error == "" || third.Attempts[1].Error != "" {
		t.Errorf("err %v attempts %+v", err, third.Attempts)
	}
}
