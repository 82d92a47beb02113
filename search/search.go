// Package search finds web pages for pipelines that cite the web: a debate's
// proposers now, a literature review or a market analyst later. Tavily and
// Brave are supported; Cached keeps results in the response cache's store.
package search

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/llm"
)

// Result is one search hit.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
	// Score is the provider's relevance, 0-1, or derived from the rank.
	Score float64 `json:"score"`
	// Published is the page's date as the provider gives it, if any.
	Published string `json:"published,omitempty"`
}

// Provider searches the web.
type Provider interface {
	// Name names the provider, such as "tavily".
	Name() string
	// Search returns at most limit results for query, best first.
	Search(ctx context.Context, query string, limit int) ([]Result, error)
}

// FromEnv returns Tavily when TAVILY_API_KEY is set, else Brave when
// BRAVE_API_KEY is set, else nil.
func FromEnv(getenv func(string) string) Provider {
	if k := strings.TrimSpace(getenv("TAVILY_API_KEY")); k != "" {
		return NewTavily(k)
	}
	if k := strings.TrimSpace(getenv("BRAVE_API_KEY")); k != "" {
		return NewBrave(k)
	}
	return nil
}

// Option configures a provider.
type Option func(*options)

type options struct {
	baseURL string
	client  *http.Client
}

// WithBaseURL sends requests to u instead of the provider's API (for tests).
func WithBaseURL(u string) Option { return func(o *options) { o.baseURL = strings.TrimSuffix(u, "/") } }

// WithHTTPClient uses c for requests.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

func newOptions(base string, opts []Option) options {
	o := options{baseURL: base, client: &http.Client{Timeout: 10 * time.Second}}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Tavily is the Tavily search API.
type Tavily struct {
	key string
	o   options
}

// NewTavily returns a Tavily client for apiKey.
func NewTavily(apiKey string, opts ...Option) *Tavily {
	return &Tavily{key: apiKey, o: newOptions("https://api.tavily.com", opts)}
}

// Name returns "tavily".
func (t *Tavily) Name() string { return "tavily" }

// Search calls POST /search.
func (t *Tavily) Search(ctx context.Context, query string, limit int) ([]Result, error) {
	limit = min(max(limit, 1), 20)
	body, _ := json.Marshal(map[string]any{"query": query, "max_results": limit, "search_depth": "basic", "include_answer": false})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.o.baseURL+"/search", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.key)
	var out struct {
		Results []struct {
			Title         string  `json:"title"`
			URL           string  `json:"url"`
			Content       string  `json:"content"`
			Score         float64 `json:"score"`
			PublishedDate string  `json:"published_date"`
		} `json:"results"`
	}
	if err := do(t.o.client, req, "tavily", t.key, &out); err != nil {
		return nil, err
	}
	var res []Result
	for _, r := range out.Results {
		res = append(res, Result{Title: clean(r.Title), URL: r.URL, Snippet: clean(r.Content), Score: r.Score, Published: r.PublishedDate})
	}
	return finish(res, limit), nil
}

// Brave is the Brave Search API.
type Brave struct {
	key string
	o   options
}

// NewBrave returns a Brave client for apiKey.
func NewBrave(apiKey string, opts ...Option) *Brave {
	return &Brave{key: apiKey, o: newOptions("https://api.search.brave.com", opts)}
}

// Name returns "brave".
func (b *Brave) Name() string { return "brave" }

// Search calls GET /res/v1/web/search.
func (b *Brave) Search(ctx context.Context, query string, limit int) ([]Result, error) {
	limit = min(max(limit, 1), 20)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.o.baseURL+"/res/v1/web/search", nil)
	if err != nil {
		return nil, err
	}
	q := req.URL.Query()
	q.Set("q", query)
	q.Set("count", fmt.Sprint(limit))
	req.URL.RawQuery = q.Encode()
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.key)
	var out struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
				Age         string `json:"age"`
				PageAge     string `json:"page_age"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := do(b.o.client, req, "brave", b.key, &out); err != nil {
		return nil, err
	}
	var res []Result
	for _, r := range out.Web.Results {
		pub := r.PageAge
		if pub == "" {
			pub = r.Age
		}
		res = append(res, Result{Title: clean(r.Title), URL: r.URL, Snippet: clean(r.Description), Published: pub})
	}
	return finish(res, limit), nil
}

// do sends req and decodes a 200 reply into out; anything else is an
// *llm.Error with the key redacted.
func do(c *http.Client, req *http.Request, provider, key string, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		if req.Context().Err() != nil {
			return req.Context().Err()
		}
		return &llm.Error{Provider: provider, Message: llm.Redact(err.Error(), key), Retryable: true}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return &llm.Error{Provider: provider, Message: "read reply: " + llm.Redact(err.Error(), key), Retryable: true}
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.Join(strings.Fields(string(data)), " ")
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return &llm.Error{Provider: provider, Status: resp.StatusCode, Message: llm.Redact(msg, key),
			Retryable: llm.RetryableStatus(resp.StatusCode), RetryAfter: llm.RetryAfterHeader(resp.Header)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &llm.Error{Provider: provider, Status: resp.StatusCode, Message: "malformed reply: " + err.Error()}
	}
	return nil
}

var tags = regexp.MustCompile(`<[^>]*>`)

// clean strips HTML tags and entities and trims to 500 characters.
func clean(s string) string {
	s = html.UnescapeString(tags.ReplaceAllString(s, ""))
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 500 {
		s = string([]rune(s)[:500]) + "…"
	}
	return s
}

// finish drops results without a URL, caps the count and fills missing
// scores from the rank.
func finish(res []Result, limit int) []Result {
	out := []Result{}
	for _, r := range res {
		if r.URL == "" {
			continue
		}
		out = append(out, r)
	}
	if len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		if out[i].Score == 0 {
			out[i].Score = 1 / float64(i+1)
		}
	}
	return out
}

// FormatForContext renders results for a prompt: a numbered list of title,
// URL and snippet.
func FormatForContext(results []Result) string {
	var b strings.Builder
	for i, r := range results {
		fmt.Fprintf(&b, "[%d] %s — %s\n", i+1, r.Title, r.URL)
		if r.Snippet != "" {
			fmt.Fprintf(&b, "    %s\n", r.Snippet)
		}
	}
	return b.String()
}
