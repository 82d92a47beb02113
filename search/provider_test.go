package search

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/llm"
)

// tavilyOK is a Tavily /search reply in the real shape.
const tavilyOK = `{
  "query": "raft consensus",
  "follow_up_questions": null,
  "answer": null,
  "images": [],
  "results": [
    {"url": "https://raft.github.io/", "title": "Raft Consensus Algorithm &amp; friends", "content": "Raft is a consensus algorithm that is designed to be <b>easy</b> to understand.", "score": 0.91, "raw_content": null, "published_date": "2024-01-02"},
    {"url": "", "title": "No URL", "content": "dropped", "score": 0.8, "raw_content": null},
    {"url": "https://en.wikipedia.org/wiki/Raft_(algorithm)", "title": "Raft (algorithm)", "content": "Raft  is\na consensus algorithm", "score": 1.7, "raw_content": null},
    {"url": "https://example.org/third", "title": "Third", "content": "not wanted", "score": 0.4, "raw_content": null}
  ],
  "response_time": 1.67,
  "request_id": "123e4567-e89b-12d3-a456-426614174111"
}`

func TestTavilySearch(t *testing.T) {
	f := newTavilyFake(t, "raft consensus", 2)
	f.reply(http.StatusOK, nil, tavilyOK)
	p := NewTavily(testKey, WithBaseURL(f.srv.URL+"/"))
	res, err := p.Search(context.Background(), "raft consensus", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Title: "Raft Consensus Algorithm & friends", URL: "https://raft.github.io/", Snippet: "Raft is a consensus algorithm that is designed to be easy to understand.", Score: 0.91, Published: "2024-01-02"},
		{Title: "Raft (algorithm)", URL: "https://en.wikipedia.org/wiki/Raft_(algorithm)", Snippet: "Raft is a consensus algorithm", Score: 1},
	}
	checkResults(t, res, want)
	if p.Name() != "tavily" || f.calls.Load() != 1 {
		t.Errorf("name %q, calls %d", p.Name(), f.calls.Load())
	}
}

func TestTavilyNoScoreAndNoResults(t *testing.T) {
	f := newTavilyFake(t, "q", 3)
	f.reply(http.StatusOK, nil, `{"query":"q","results":[{"url":"https://a.example","title":"A","content":"a"},{"url":"https://b.example","title":"B","content":"b"}]}`)
	p := NewTavily(testKey, WithBaseURL(f.srv.URL))
	res, err := p.Search(context.Background(), "q", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Score != 1 || res[1].Score != 0.5 {
		t.Errorf("rank scores: %+v", res)
	}
	f.reply(http.StatusOK, nil, `{"query":"q","results":[]}`)
	if res, err := p.Search(context.Background(), "q", 3); err != nil || res == nil || len(res) != 0 {
		t.Errorf("no results: %v %#v", err, res)
	}
}

// braveOK is a Brave web search reply in the real shape.
const braveOK = `{
  "type": "search",
  "query": {"original": "go generics", "more_results_available": true},
  "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
  "web": {
    "type": "search",
    "results": [
      {"title": "Tutorial: Getting started with <strong>generics</strong>", "url": "https://go.dev/doc/tutorial/generics", "is_source_local": false, "is_source_both": false,
       "description": "This tutorial introduces the basics of <strong>generics</strong> in Go. It&#x27;s short.", "page_age": "2022-03-15T00:00:00", "age": "March 15, 2022",
       "profile": {"name": "Go", "url": "https://go.dev"}, "language": "en", "family_friendly": true, "type": "search_result", "subtype": "generic",
       "meta_url": {"scheme": "https", "netloc": "go.dev", "hostname": "go.dev", "path": "› doc › tutorial › generics"}},
      {"title": "No URL", "description": "dropped", "type": "search_result"},
      {"title": "An Introduction To Generics - The Go Programming Language", "url": "https://go.dev/blog/intro-generics", "description": "Introduction", "age": "March 22, 2022", "type": "search_result"},
      {"title": "Third", "url": "https://example.org/3", "description": "three", "type": "search_result"},
      {"title": "Fourth", "url": "https://example.org/4", "description": "four", "type": "search_result"}
    ],
    "family_friendly": true
  }
}`

func TestBraveSearch(t *testing.T) {
	f := newBraveFake(t, "go generics & more?", 3)
	f.reply(http.StatusOK, nil, braveOK)
	p := NewBrave(testKey, WithBaseURL(f.srv.URL))
	res, err := p.Search(context.Background(), "go generics & more?", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Title: "Tutorial: Getting started with generics", URL: "https://go.dev/doc/tutorial/generics", Snippet: "This tutorial introduces the basics of generics in Go. It's short.", Score: 1, Published: "2022-03-15T00:00:00"},
		{Title: "An Introduction To Generics - The Go Programming Language", URL: "https://go.dev/blog/intro-generics", Snippet: "Introduction", Score: 0.5, Published: "March 22, 2022"},
		{Title: "Third", URL: "https://example.org/3", Snippet: "three", Score: 1.0 / 3},
	}
	checkResults(t, res, want)
	if p.Name() != "brave" {
		t.Errorf("name %q", p.Name())
	}
}

func TestBraveNoWebResults(t *testing.T) {
	f := newBraveFake(t, "zzzz", 3)
	f.reply(http.StatusOK, nil, `{"type":"search","query":{"original":"zzzz"},"mixed":{"type":"mixed","main":[]}}`)
	res, err := NewBrave(testKey, WithBaseURL(f.srv.URL)).Search(context.Background(), "zzzz", 3)
	if err != nil || len(res) != 0 {
		t.Errorf("%v %+v", err, res)
	}
}

func TestBraveLongSnippet(t *testing.T) {
	long := strings.Repeat("héllo wörld ", 100) // 1200 runes, multi-byte
	f := newBraveFake(t, "q", 1)
	f.reply(http.StatusOK, nil, `{"type":"search","web":{"results":[{"title":"T","url":"https://x.example","description":"<strong>`+long+`</strong>"}]}}`)
	res, err := NewBrave(testKey, WithBaseURL(f.srv.URL)).Search(context.Background(), "q", 1)
	if err != nil {
		t.Fatal(err)
	}
	s := res[0].Snippet
	if n := utf8.RuneCountInString(s); n > snippetRunes || n < snippetRunes-100 || !utf8.ValidString(s) ||
		!strings.HasSuffix(s, "…") || !strings.HasPrefix(s, "héllo wörld") || strings.Contains(s, "<") {
		t.Errorf("snippet of %d runes: %q", utf8.RuneCountInString(s), s)
	}
}

// TestMaxCapped checks the count each provider asks for: max as given up to
// the provider's limit, and DefaultMax for max <= 0.
func TestMaxCapped(t *testing.T) {
	for _, tc := range []struct{ max, want int }{{1, 1}, {3, 3}, {0, DefaultMax}, {-2, DefaultMax}, {20, 20}, {50, 20}} {
		ft := newTavilyFake(t, "q", tc.want)
		ft.reply(http.StatusOK, nil, `{"results":[]}`)
		if _, err := NewTavily(testKey, WithBaseURL(ft.srv.URL)).Search(context.Background(), "q", tc.max); err != nil {
			t.Errorf("tavily max %d: %v", tc.max, err)
		}
		fb := newBraveFake(t, "q", tc.want)
		fb.reply(http.StatusOK, nil, `{"web":{"results":[]}}`)
		if _, err := NewBrave(testKey, WithBaseURL(fb.srv.URL)).Search(context.Background(), "q", tc.max); err != nil {
			t.Errorf("brave max %d: %v", tc.max, err)
		}
	}
}

// providers makes each provider against its fake for query and max.
var providers = []struct {
	name    string
	newFake func(t *testing.T, query string, max int) *fake
	new     func(base string, opts ...Option) Provider
}{
	{"tavily", newTavilyFake, func(base string, opts ...Option) Provider {
		return NewTavily(testKey, append([]Option{WithBaseURL(base)}, opts...)...)
	}},
	{"brave", newBraveFake, func(base string, opts ...Option) Provider {
		return NewBrave(testKey, append([]Option{WithBaseURL(base)}, opts...)...)
	}},
}

func TestHTTPErrors(t *testing.T) {
	// Each reply echoes the key back, as a careless API might.
	long := strings.Repeat("x", messageRunes-10) + " " + testKey + " tail"
	for _, tc := range []struct {
		name       string
		status     int
		header     http.Header
		body       string
		retryable  bool
		retryAfter time.Duration
		msg        string // the error's message must contain this
	}{
		{"tavily 401", 401, nil, `{"detail":{"error":"Unauthorized: missing or invalid API key ` + testKey + `."}}`, false, 0, "Unauthorized: missing or invalid API key [redacted]."},
		{"tavily 429", 429, http.Header{"Retry-After": {"7"}}, `{"detail":{"error":"Rate limit exceeded for ` + testKey + `"}}`, true, 7 * time.Second, "Rate limit exceeded"},
		{"tavily 432", 432, nil, `{"detail":{"error":"This request exceeds your plan's set usage limit."}}`, false, 0, "usage limit"},
		{"brave 401", 401, nil, `{"type":"ErrorResponse","error":{"id":"c1","status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token ` + testKey + ` is invalid.","meta":{"component":"authentication"}},"time":1700000000}`, false, 0, "SUBSCRIPTION_TOKEN_INVALID: The provided subscription token [redacted] is invalid."},
		{"brave 429 reset", 429, http.Header{"X-Ratelimit-Limit": {"1, 15000"}, "X-Ratelimit-Remaining": {"0, 14000"}, "X-Ratelimit-Reset": {"1, 1419704"}}, `{"type":"ErrorResponse","error":{"id":"c2","status":429,"code":"RATE_LIMITED","detail":"Request rate limit exceeded for plan.","meta":{"plan":"Free","rate_limit":1,"rate_current":2,"quota_limit":15000,"quota_current":1000,"component":"rate_limiter"}}}`, true, time.Second, "RATE_LIMITED"},
		{"brave 429 quota", 429, http.Header{"X-Ratelimit-Remaining": {"1, 0"}, "X-Ratelimit-Reset": {"1, 3600"}}, `{"type":"ErrorResponse","error":{"code":"QUOTA_LIMITED","detail":"Quota exceeded"}}`, true, time.Hour, "QUOTA_LIMITED"},
		{"brave 429 retry-after wins", 429, http.Header{"Retry-After": {"3"}, "X-Ratelimit-Reset": {"1, 3600"}}, `{}`, true, 3 * time.Second, "Too Many Requests"},
		{"tavily 500 html", 500, nil, "<html><body><h1>Internal Server Error</h1>\n<p>key=" + testKey + "</p></body></html>", true, 0, "Internal Server Error key=[redacted]"},
		{"brave 503 plain", 503, nil, "upstream unavailable " + testKey, true, 0, "upstream unavailable [redacted]"},
		{"tavily long", 400, nil, `{"detail":{"error":"` + long + `"}}`, false, 0, "xxxx"},
		{"brave 403 string error", 403, nil, `{"error":"forbidden for ` + testKey + `"}`, false, 0, "forbidden for [redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prov := providers[0]
			if strings.HasPrefix(tc.name, "brave") {
				prov = providers[1]
			}
			f := prov.newFake(t, "q", 3)
			f.reply(tc.status, tc.header, tc.body)
			_, err := prov.new(f.srv.URL).Search(context.Background(), "q", 3)
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v, want *llm.Error", err, err)
			}
			if e.Provider != prov.name || e.Status != tc.status || e.Retryable != tc.retryable || e.RetryAfter != tc.retryAfter {
				t.Errorf("got provider %q status %d retryable %v retry after %v", e.Provider, e.Status, e.Retryable, e.RetryAfter)
			}
			if llm.IsRetryable(err) != tc.retryable || llm.RetryAfterOf(err) != tc.retryAfter {
				t.Errorf("llm.IsRetryable %v, llm.RetryAfterOf %v", llm.IsRetryable(err), llm.RetryAfterOf(err))
			}
			if !strings.Contains(e.Message, tc.msg) {
				t.Errorf("message %q, want it to contain %q", e.Message, tc.msg)
			}
			checkNoKey(t, err)
			if strings.ContainsAny(err.Error(), "\n\r") || utf8.RuneCountInString(e.Message) > messageRunes {
				t.Errorf("message not one short line: %q", e.Message)
			}
			if f.calls.Load() != 1 {
				t.Errorf("%d requests, want 1: no retries", f.calls.Load())
			}
		})
	}
}

func TestMalformedReply(t *testing.T) {
	for _, prov := range providers {
		for _, body := range []string{`{"results": [`, `<html>Bad gateway</html>`, `{"results": "none", "web": []}`} {
			f := prov.newFake(t, "q", 3)
			f.reply(http.StatusOK, nil, body)
			_, err := prov.new(f.srv.URL).Search(context.Background(), "q", 3)
			var e *llm.Error
			if !errors.As(err, &e) || e.Provider != prov.name || e.Retryable || !strings.Contains(err.Error(), "malformed reply") {
				t.Errorf("%s %q: %v", prov.name, body, err)
			}
			checkNoKey(t, err)
		}
	}
}

func TestContextCancel(t *testing.T) {
	for _, prov := range providers {
		t.Run(prov.name, func(t *testing.T) {
			f := prov.newFake(t, "q", 3)
			f.blockAll()
			p := prov.new(f.srv.URL)

			// Cancelled while the request is in flight.
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-f.arrived
				cancel()
			}()
			start := time.Now()
			_, err := p.Search(ctx, "q", 3)
			if !errors.Is(err, context.Canceled) || llm.IsRetryable(err) || time.Since(start) > 5*time.Second {
				t.Errorf("in flight: %v after %v", err, time.Since(start))
			}
			checkNoKey(t, err)

			// Cancelled before: no request at all.
			n := f.calls.Load()
			if _, err := p.Search(ctx, "q", 3); !errors.Is(err, context.Canceled) || f.calls.Load() != n {
				t.Errorf("before: %v, %d requests", err, f.calls.Load()-n)
			}

			// The caller's deadline.
			dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer dcancel()
			if _, err := p.Search(dctx, "q", 3); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("deadline: %v", err)
			}

			// The client's own time limit: a retryable failure without a
			// status.
			p = prov.new(f.srv.URL, WithHTTPClient(&http.Client{Timeout: 50 * time.Millisecond}))
			_, err = p.Search(context.Background(), "q", 3)
			var e *llm.Error
			if !errors.As(err, &e) || e.Status != 0 || !e.Retryable || e.Provider != prov.name {
				t.Errorf("client timeout: %v", err)
			}
			checkNoKey(t, err)
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	f := newTavilyFake(t, "q", 3)
	url := f.srv.URL
	f.srv.Close()
	_, err := NewTavily(testKey, WithBaseURL(url)).Search(context.Background(), "q", 3)
	var e *llm.Error
	if !errors.As(err, &e) || !e.Retryable || e.Status != 0 {
		t.Errorf("%v", err)
	}
	checkNoKey(t, err)
}

func TestEmptyQuery(t *testing.T) {
	for _, prov := range providers {
		f := prov.newFake(t, "", 3)
		if _, err := prov.new(f.srv.URL).Search(context.Background(), " \n", 3); err == nil || f.calls.Load() != 0 {
			t.Errorf("%s: %v, %d requests", prov.name, err, f.calls.Load())
		}
	}
}

func TestConcurrentSearches(t *testing.T) {
	f := newTavilyFake(t, "raft consensus", 3)
	f.reply(http.StatusOK, nil, tavilyOK)
	p := Cached(NewTavily(testKey, WithBaseURL(f.srv.URL)), newMemStore(), time.Hour)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if res, err := p.Search(context.Background(), "raft consensus", 3); err != nil || len(res) != 3 {
				t.Errorf("%v %d", err, len(res))
			}
		})
	}
	wg.Wait()
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	p := FromEnv(env(map[string]string{"TAVILY_API_KEY": "tk", "BRAVE_API_KEY": "bk"}))
	if f, ok := p.(fallback); !ok || len(f) != 2 || f[0].(*Tavily).key != "tk" || f[1].(*Brave).key != "bk" {
		t.Errorf("both keys: %#v, want Tavily then Brave", p)
	}
	p = FromEnv(env(map[string]string{"TAVILY_API_KEY": "  ", "BRAVE_API_KEY": " bk\n"}))
	if b, ok := p.(*Brave); !ok || b.key != "bk" {
		t.Errorf("Brave only: %#v, want Brave", p)
	}
	if p := FromEnv(env(nil)); p != nil {
		t.Errorf("no keys: %#v, want nil", p)
	}
}

func TestOptions(t *testing.T) {
	tv := NewTavily("k")
	if tv.o.baseURL != "https://api.tavily.com" || tv.o.client.Timeout != DefaultTimeout {
		t.Errorf("tavily defaults %q %v", tv.o.baseURL, tv.o.client.Timeout)
	}
	b := NewBrave("k", WithHTTPClient(nil))
	if b.o.baseURL != "https://api.search.brave.com" || b.o.client.Timeout != DefaultTimeout {
		t.Errorf("brave defaults %q %v", b.o.baseURL, b.o.client.Timeout)
	}
	c := &http.Client{}
	if b := NewBrave("k", WithHTTPClient(c), WithBaseURL("http://x/")); b.o.client != c || b.o.baseURL != "http://x" {
		t.Errorf("options not applied")
	}
}

func TestFormatForContext(t *testing.T) {
	got := FormatForContext([]Result{
		{Title: "Raft", URL: "https://raft.github.io/", Snippet: "Understandable\nconsensus."},
		{URL: "https://example.org/untitled"},
		{Title: "Go", URL: "https://go.dev", Snippet: "The Go language."},
	})
	want := "[1] Raft — https://raft.github.io/\n" +
		"    Understandable consensus.\n" +
		"[2] https://example.org/untitled\n" +
		"[3] Go — https://go.dev\n" +
		"    The Go language.\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if FormatForContext(nil) != "" {
		t.Error("no results should format as empty")
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<strong>Go</strong> &amp; <em>Rust</em>", "Go & Rust"},
		{"a < b and c > d", "a < b and c > d"},
		{"x &lt;b&gt; y", "x <b> y"},
		{"<a href=\"https://x\">link</a><br/>next<!-- note -->", "linknext"},
		{"cut by the provider <stro", "cut by the provider"},
		{"  lots \n\t of   space ", "lots of space"},
	} {
		if got := clean(tc.in, snippetRunes); got != tc.want {
			t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := truncate("ab€defghij", 5); got != "ab€d…" {
		t.Errorf("truncate on runes: %q", got)
	}
	if got := truncate("alpha beta gamma delta", 20); got != "alpha beta gamma…" {
		t.Errorf("truncate on words: %q", got)
	}
}

func checkResults(t *testing.T, got, want []Result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// checkNoKey fails if the key appears in err or anything it wraps.
func checkNoKey(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) || strings.Contains(e.Error(), testKey[:12]) {
			t.Errorf("key in error: %v", e)
		}
	}
	var le *llm.Error
	if errors.As(err, &le) && strings.Contains(le.Message, testKey[:12]) {
		t.Errorf("key in message: %q", le.Message)
	}
}
