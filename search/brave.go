package search

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/madspark/madspark/llm"
)

// BraveMax is the largest number of results Brave returns for one search.
const BraveMax = 20

// Brave searches the web with the Brave Search API. Make one with NewBrave;
// it is safe for concurrent use.
type Brave struct {
	key string
	o   options
}

// NewBrave returns a Brave provider that authenticates with apiKey. By
// default it sends requests to https://api.search.brave.com.
func NewBrave(apiKey string, opts ...Option) *Brave {
	return &Brave{key: apiKey, o: newOptions("https://api.search.brave.com", opts)}
}

// Name returns "brave".
func (b *Brave) Name() string { return "brave" }

// braveReply is the part of a web search reply that Search uses.
type braveReply struct {
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

// Search sends GET /res/v1/web/search for at most max results (capped to
// BraveMax) with the key in the X-Subscription-Token header. Brave gives no
// relevance, so scores follow the rank. A 429 reply without Retry-After
// takes its delay from X-RateLimit-Reset.
func (b *Brave) Search(ctx context.Context, query string, max int) ([]Result, error) {
	if err := checkQuery("brave", query); err != nil {
		return nil, err
	}
	max = capMax(max, BraveMax)
	q := url.Values{"q": {query}, "count": {strconv.Itoa(max)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.o.baseURL+"/res/v1/web/search?"+q.Encode(), nil)
	if err != nil {
		return nil, &llm.Error{Provider: "brave", Message: oneLine(err.Error(), b.key)}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.key)
	var reply braveReply
	if err := send(b.o.client, req, "brave", b.key, braveRetryAfter, &reply); err != nil {
		return nil, err
	}
	res := make([]Result, len(reply.Web.Results))
	for i, r := range reply.Web.Results {
		pub := r.PageAge
		if pub == "" {
			pub = r.Age
		}
		res[i] = Result{
			Title:     clean(r.Title, titleRunes),
			URL:       r.URL,
			Snippet:   clean(r.Description, snippetRunes),
			Published: pub,
		}
	}
	return finish(res, nil, max), nil
}

// braveRetryAfter reads Brave's rate-limit headers, lists with one entry
// per window (per second, per month): X-RateLimit-Reset "1, 1419704" holds
// the seconds until each window resets and X-RateLimit-Remaining "0, 9000"
// the requests each has left. The wait is the longest reset among the
// windows with none left, or the first reset when none is known to be.
func braveRetryAfter(h http.Header) time.Duration {
	resets := strings.Split(h.Get("X-RateLimit-Reset"), ",")
	remaining := strings.Split(h.Get("X-RateLimit-Remaining"), ",")
	var wait time.Duration
	for i, r := range resets {
		if i < len(remaining) && strings.TrimSpace(remaining[i]) == "0" {
			wait = max(wait, parseSeconds(r))
		}
	}
	if wait == 0 {
		wait = parseSeconds(resets[0])
	}
	return wait
}
