// Package search finds web pages for pipelines that cite the web: the
// debate's proposers now, a literature review or a market analyst later.
//
// Two providers are supported, Tavily (NewTavily) and Brave (NewBrave);
// FromEnv picks them from the environment, Brave as Tavily's fallback
// (Fallback) when both keys are set. Cached keeps results in the
// response cache's store, and FormatForContext renders them for a prompt.
//
// Providers never retry. A failed search returns an *llm.Error whose
// Retryable and RetryAfter fields let the caller decide; its message never
// contains the API key.
package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/llm"
)

// Result is one search hit.
type Result struct {
	// Title is the page's title, as plain text.
	Title string `json:"title"`
	// URL is the page's address; never empty.
	URL string `json:"url"`
	// Snippet is an extract of the page, as plain text of at most about
	// 500 characters.
	Snippet string `json:"snippet"`
	// Score is the provider's relevance, 0-1, when it gives one; otherwise
	// it is derived from the rank: 1, 1/2, 1/3, ...
	Score float64 `json:"score"`
	// Published is the page's date as the provider gives it, if any.
	Published string `json:"published,omitempty"`

	// Scholarly sources (package scholar) also fill in what they know of
	// the work: its authors, year of publication, venue (journal,
	// conference or repository) and DOI. Web providers leave them empty.
	Authors []string `json:"authors,omitempty"`
	Year    int      `json:"year,omitempty"`
	Venue   string   `json:"venue,omitempty"`
	DOI     string   `json:"doi,omitempty"`
}

// Provider searches the web.
type Provider interface {
	// Name names the provider, such as "tavily". It is part of cache keys.
	Name() string
	// Search returns at most max results for query, best first. Max is
	// capped to what the provider allows; max <= 0 means DefaultMax.
	Search(ctx context.Context, query string, max int) ([]Result, error)
}

// DefaultMax is the number of results a Provider returns when Search is
// asked for max <= 0.
const DefaultMax = 5

// DefaultTimeout is the time limit of a search when no *http.Client is
// given with WithHTTPClient.
const DefaultTimeout = 10 * time.Second

const (
	// snippetRunes is the length snippets are trimmed to.
	snippetRunes = 500
	// titleRunes is the length titles are trimmed to.
	titleRunes = 200
	// messageRunes is the length of error messages taken from a reply.
	messageRunes = 200
	// maxReply is the largest reply body read.
	maxReply = 4 << 20
)

// FromEnv returns the provider whose API key getenv returns: Tavily for
// TAVILY_API_KEY and Brave for BRAVE_API_KEY; with both, Tavily with Brave
// as its fallback (see Fallback); with neither, nil. TAVILY_BASE_URL and
// BRAVE_BASE_URL, when set, replace the providers' endpoints (a proxy, a
// self-hosted gateway).
func FromEnv(getenv func(string) string) Provider {
	var ps []Provider
	if k := strings.TrimSpace(getenv("TAVILY_API_KEY")); k != "" {
		ps = append(ps, NewTavily(k, baseFromEnv(getenv, "TAVILY_BASE_URL")...))
	}
	if k := strings.TrimSpace(getenv("BRAVE_API_KEY")); k != "" {
		ps = append(ps, NewBrave(k, baseFromEnv(getenv, "BRAVE_BASE_URL")...))
	}
	if len(ps) == 0 {
		return nil
	}
	return Fallback(ps...)
}

func baseFromEnv(getenv func(string) string, name string) []Option {
	if u := strings.TrimSpace(getenv(name)); u != "" {
		return []Option{WithBaseURL(u)}
	}
	return nil
}

// An Option configures a provider made by NewTavily or NewBrave.
type Option func(*options)

type options struct {
	baseURL string
	client  *http.Client
}

// WithBaseURL sends requests to u, such as an httptest.Server's URL, instead
// of the provider's API. Request paths are appended to u.
func WithBaseURL(u string) Option {
	return func(o *options) { o.baseURL = strings.TrimSuffix(u, "/") }
}

// WithHTTPClient sends requests with c instead of a client with a
// DefaultTimeout time limit. A nil c is ignored.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.client = c
		}
	}
}

func newOptions(baseURL string, opts []Option) options {
	o := options{baseURL: baseURL}
	for _, f := range opts {
		f(&o)
	}
	if o.client == nil {
		o.client = &http.Client{Timeout: DefaultTimeout}
	}
	return o
}

// capMax returns max limited to 1..limit, with DefaultMax for max <= 0.
func capMax(max, limit int) int {
	switch {
	case max <= 0:
		return min(DefaultMax, limit)
	case max > limit:
		return limit
	}
	return max
}

// checkQuery returns an error for an empty query, before any request.
func checkQuery(provider, query string) error {
	if strings.TrimSpace(query) == "" {
		return &llm.Error{Provider: provider, Message: "empty query"}
	}
	return nil
}

// send sends req and decodes a 2xx JSON reply into out; see Fetch.
func send(c *http.Client, req *http.Request, provider, key string, retryAfter func(http.Header) time.Duration, out any) error {
	body, err := Fetch(c, req, provider, key, retryAfter)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &llm.Error{Provider: provider, Message: "malformed reply: " + oneLine(err.Error(), key)}
	}
	return nil
}

// Fetch sends req with c and returns the body of a 2xx reply, read up to
// 4 MiB. Any failure is an *llm.Error for provider: transport failures and
// 429 and 5xx replies are retryable, with the delay a 429 or 503 asked for
// in Retry-After, or that retryAfter, if not nil, reads from the headers of
// a 429 without one; the message is one line taken from the reply (the
// usual JSON error fields, or the text with HTML tags stripped) with key,
// and anything shaped like a key, redacted. Providers in other packages
// (package scholar) share it.
func Fetch(c *http.Client, req *http.Request, provider, key string, retryAfter func(http.Header) time.Duration) ([]byte, error) {
	ctx := req.Context()
	resp, err := c.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cancelled(provider, cerr)
		}
		// The key may travel in the URL, which transport errors show;
		// redact it, also in the error kept for errors.As.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = llm.Redact(ue.URL, key)
		}
		return nil, &llm.Error{Provider: provider, Message: oneLine(err.Error(), key), Retryable: true, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cancelled(provider, cerr)
		}
		return nil, &llm.Error{Provider: provider, Status: resp.StatusCode,
			Message: "reading reply: " + oneLine(err.Error(), key), Retryable: true, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := oneLine(errorMessage(body), key)
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		e := &llm.Error{Provider: provider, Status: resp.StatusCode, Message: msg,
			Retryable: llm.RetryableStatus(resp.StatusCode), RetryAfter: llm.RetryAfterHeader(resp.Header)}
		if e.RetryAfter == 0 && retryAfter != nil && resp.StatusCode == http.StatusTooManyRequests {
			e.RetryAfter = retryAfter(resp.Header)
		}
		return nil, e
	}
	return body, nil
}

// cancelled is the error of a search whose context ended. Like
// llm.IsRetryable, it counts a deadline as retryable and a cancellation as
// not.
func cancelled(provider string, err error) error {
	return &llm.Error{Provider: provider, Message: err.Error(), Err: err,
		Retryable: errors.Is(err, context.DeadlineExceeded)}
}

// errorMessage returns the message of an error reply: the text of one of
// the fields providers put it in (Tavily's detail.error, Brave's
// error.code and error.detail, ...), "" for an empty JSON object, or else the
// body itself as text.
func errorMessage(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) == nil {
		for _, path := range [][]string{
			{"detail", "error"}, {"detail", "message"}, {"detail"},
			{"error", "detail"}, {"error", "message"}, {"error"},
			{"message"},
		} {
			if s, ok := lookupString(v, path); ok && strings.TrimSpace(s) != "" {
				if code, ok := lookupString(v, []string{"error", "code"}); ok && path[0] == "error" && code != "" {
					s = code + ": " + s
				}
				return s
			}
		}
		if m, ok := v.(map[string]any); v == nil || ok && len(m) == 0 {
			return "" // nothing to say: the status text stands in
		}
	}
	return stripTags(string(body))
}

// lookupString returns the string at path in a decoded JSON value.
func lookupString(v any, path []string) (string, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = m[k]
	}
	s, ok := v.(string)
	return s, ok
}

// oneLine makes s a single line of at most messageRunes runes with key, and
// anything shaped like a key, redacted. Redaction comes first, so that
// trimming never leaves part of a key behind.
func oneLine(s, key string) string {
	s = llm.Redact(strings.Join(strings.Fields(s), " "), key)
	return llm.Redact(truncate(s, messageRunes), key)
}

var (
	tagRE     = regexp.MustCompile(`(?s)<!--.*?-->|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>`)
	brokenTag = regexp.MustCompile(`</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?$`)
)

// stripTags removes HTML tags and comments from s.
func stripTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	return tagRE.ReplaceAllString(s, "")
}

// CleanTitle turns a title from a provider into plain text of at most 200
// runes: tags stripped, entities unescaped and white space collapsed.
func CleanTitle(s string) string { return clean(s, titleRunes) }

// CleanSnippet turns an extract from a provider into plain text of at most
// 500 runes, as CleanTitle does.
func CleanSnippet(s string) string { return clean(s, snippetRunes) }

// clean turns a title or snippet from a provider into plain text of at most
// n runes: tags stripped, entities unescaped and white space collapsed.
func clean(s string, n int) string {
	// A tag that the provider's own trimming cut in half ends the text;
	// drop it rather than show half a tag.
	s = html.UnescapeString(brokenTag.ReplaceAllString(stripTags(s), ""))
	return truncate(strings.Join(strings.Fields(s), " "), n)
}

// truncate trims s to at most n runes, at a word boundary when there is one
// near the end, and marks the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	if i := lastSpace(r); i >= len(r)*4/5 {
		r = r[:i]
	}
	return strings.TrimRight(string(r), " ,;:.-") + "…"
}

func lastSpace(r []rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == ' ' {
			return i
		}
	}
	return -1
}

// finish drops results without a URL, keeps at most max, clamps scores to
// 0-1 and derives missing ones from the rank.
func finish(res []Result, scored []bool, max int) []Result {
	out := make([]Result, 0, min(len(res), max))
	for i, r := range res {
		if len(out) == max {
			break
		}
		r.URL = strings.TrimSpace(r.URL)
		if r.URL == "" {
			continue
		}
		if i < len(scored) && scored[i] {
			r.Score = clamp01(r.Score)
		} else {
			r.Score = 1 / float64(len(out)+1)
		}
		out = append(out, r)
	}
	return out
}

// clamp01 returns s limited to 0-1, with 0 for NaN.
func clamp01(s float64) float64 {
	switch {
	case s > 1:
		return 1
	case s > 0:
		return s
	}
	return 0
}

// FormatForContext renders results for a prompt as a numbered list, one
// result per entry:
//
//	[1] Title — URL
//	    snippet
//
// A result without a title shows only its URL; one without a snippet has no
// second line. No results give "".
func FormatForContext(results []Result) string {
	var b strings.Builder
	for i, r := range results {
		title := strings.Join(strings.Fields(r.Title), " ")
		url := strings.TrimSpace(r.URL)
		switch {
		case title == "":
			fmt.Fprintf(&b, "[%d] %s\n", i+1, url)
		case url == "":
			fmt.Fprintf(&b, "[%d] %s\n", i+1, title)
		default:
			fmt.Fprintf(&b, "[%d] %s — %s\n", i+1, title, url)
		}
		if s := strings.Join(strings.Fields(r.Snippet), " "); s != "" {
			b.WriteString("    " + s + "\n")
		}
	}
	return b.String()
}

// parseSeconds returns v, a number of seconds, as a duration, or 0.
func parseSeconds(v string) time.Duration {
	s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
