// Package scholar searches the scholarly literature for pipelines that must
// cite real work, such as a research proposal's literature review.
//
// Three sources are supported, each a search.Provider whose results carry
// the work's authors, year, venue and DOI: OpenAlex (NewOpenAlex) and arXiv
// (NewArXiv), which need no key, and Semantic Scholar
// (NewSemanticScholar), with an optional key. FromEnv returns all three,
// configured from the environment; search.Cached keeps their results in the
// response cache's store. Offline is a deterministic stand-in for mock
// mode, whose entries say that they are not real publications.
//
// Searcher runs several queries against several sources at once and merges
// what they return into one numbered list of Works, so that a model can
// cite a work by its number and the caller can check that the number is one
// a search returned.
//
// Like package search, sources never retry on their own: a failed search is
// an *llm.Error whose Retryable and RetryAfter fields let the caller decide
// (Searcher retries once). Error messages never contain an API key.
package scholar

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
)

// MaxResults is the largest number of results a source returns for one
// query; larger requests are capped to it.
const MaxResults = 25

// An Option configures a source.
type Option func(*options)

type options struct {
	baseURL  string
	client   *http.Client
	interval time.Duration
}

// WithBaseURL sends requests to u, such as an httptest.Server's URL, instead
// of the source's API. Request paths are appended to u.
func WithBaseURL(u string) Option {
	return func(o *options) { o.baseURL = strings.TrimSuffix(u, "/") }
}

// WithHTTPClient sends requests with c instead of a client with a
// search.DefaultTimeout time limit. A nil c is ignored.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.client = c
		}
	}
}

// WithInterval spaces the source's requests at least d apart, overriding
// the pause the source's terms ask for (3 s for arXiv, 1 s for Semantic
// Scholar); 0 sends requests as they come.
func WithInterval(d time.Duration) Option {
	return func(o *options) { o.interval = max(d, 0) }
}

func newOptions(baseURL string, interval time.Duration, opts []Option) options {
	o := options{baseURL: baseURL, interval: interval}
	for _, f := range opts {
		f(&o)
	}
	if o.client == nil {
		o.client = &http.Client{Timeout: search.DefaultTimeout}
	}
	return o
}

// pacer spaces requests: wait returns when the next request may go, or with
// the context's error. A zero interval never waits.
type pacer struct{ l *rate.Limiter }

func newPacer(interval time.Duration) pacer {
	if interval <= 0 {
		return pacer{}
	}
	return pacer{rate.NewLimiter(rate.Every(interval), 1)}
}

func (p pacer) wait(ctx context.Context, provider string) error {
	if p.l == nil {
		return nil
	}
	if err := p.l.Wait(ctx); err != nil {
		return &llm.Error{Provider: provider, Message: err.Error(), Err: err,
			Retryable: ctx.Err() == context.DeadlineExceeded}
	}
	return nil
}

// FromEnv returns the scholarly sources, in the order OpenAlex, arXiv,
// Semantic Scholar. OPENALEX_API_KEY (free; OpenAlex allows only a few
// searches a day without one) and OPENALEX_MAILTO (an e-mail address for
// its polite pool) configure OpenAlex; SEMANTIC_SCHOLAR_API_KEY gives
// Semantic Scholar's keyed rate limit. None is required.
func FromEnv(getenv func(string) string) []search.Provider {
	return []search.Provider{
		NewOpenAlex(strings.TrimSpace(getenv("OPENALEX_API_KEY")), strings.TrimSpace(getenv("OPENALEX_MAILTO"))),
		NewArXiv(),
		NewSemanticScholar(strings.TrimSpace(getenv("SEMANTIC_SCHOLAR_API_KEY"))),
	}
}

// checkQuery returns an error for an empty query, before any request.
func checkQuery(provider, query string) error {
	if strings.TrimSpace(query) == "" {
		return &llm.Error{Provider: provider, Message: "empty query"}
	}
	return nil
}

// capMax returns max limited to 1..MaxResults, with search.DefaultMax for
// max <= 0.
func capMax(max int) int {
	switch {
	case max <= 0:
		return search.DefaultMax
	case max > MaxResults:
		return MaxResults
	}
	return max
}

// malformed is the error of a 2xx reply that does not decode.
func malformed(provider string, err error, key string) error {
	return &llm.Error{Provider: provider, Message: "malformed reply: " + llm.Redact(oneLine(err.Error()), key)}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var doiRE = regexp.MustCompile(`(?i)\b10\.\d{4,9}/\S+`)

// normalizeDOI returns the bare DOI in s ("10.1234/abc"), lower-cased, or
// "" when s holds none; s may be a doi.org URL.
func normalizeDOI(s string) string {
	m := doiRE.FindString(strings.TrimSpace(s))
	return strings.ToLower(strings.TrimRight(m, ".,;"))
}

// ranked sets each result's score from its rank, 1, 1/2, 1/3, ..., and
// drops results with no URL or no title.
func ranked(res []search.Result, max int) []search.Result {
	out := make([]search.Result, 0, min(len(res), max))
	for _, r := range res {
		if len(out) == max {
			break
		}
		r.URL = strings.TrimSpace(r.URL)
		if r.URL == "" || r.Title == "" {
			continue
		}
		r.Score = 1 / float64(len(out)+1)
		out = append(out, r)
	}
	return out
}

// yearOf returns the year at the start of an ISO date such as
// "2021-03-04T00:00:00Z", or 0.
func yearOf(date string) int {
	if len(date) < 4 {
		return 0
	}
	y, err := strconv.Atoi(date[:4])
	if err != nil || y < 1000 {
		return 0
	}
	return y
}
