package scholar

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode"

	"github.com/madspark/madspark/search"
)

// Offline is a deterministic literature source for mock mode: it makes no
// network call and answers every query with invented works built from the
// query's words. Every entry says it is not a real publication: its title
// starts with "[Mock]", its venue and snippet say so, its authors are
// placeholders and its URL is under https://example.org/ (a domain reserved
// for examples).
type Offline struct{}

// NewOffline returns the offline source.
func NewOffline() *Offline { return &Offline{} }

// Name returns "offline".
func (*Offline) Name() string { return "offline" }

var (
	offlineKinds   = []string{"A systematic review of", "An empirical study of", "A mixed-methods evaluation of", "Design principles for", "Revisiting", "A longitudinal analysis of", "Measuring", "A framework for"}
	offlineAuthors = []string{"A. Placeholder", "B. Example", "C. Sample", "D. Mockridge", "E. Fictive", "F. Standin", "G. Dummett", "H. Proxy"}
)

// Search returns max entries (search.DefaultMax for max <= 0, capped to
// MaxResults) for query; the same query always gives the same entries.
func (*Offline) Search(ctx context.Context, query string, max int) ([]search.Result, error) {
	if err := checkQuery("offline", query); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	max = capMax(max)
	topic := strings.Join(strings.Fields(query), " ")
	slug := strings.Trim(strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return '-'
	}, topic), "-")
	res := make([]search.Result, 0, max)
	for i := range max {
		h := offlineHash(topic, i)
		authors := []string{offlineAuthors[h%8], offlineAuthors[(h%8+1+(h/8)%7)%8]}
		res = append(res, search.Result{
			Title:     fmt.Sprintf("[Mock] %s %s", offlineKinds[(h/64)%8], topic),
			URL:       fmt.Sprintf("https://example.org/mock-literature/%s/%d", slug, i+1),
			Snippet:   "Offline placeholder generated in mock mode; not a real publication. It stands where a search result about " + topic + " would be.",
			Score:     1 / float64(i+1),
			Authors:   authors,
			Year:      2015 + int(h%10),
			Published: fmt.Sprint(2015 + int(h%10)),
			Venue:     "Mock Proceedings (not a real venue)",
		})
	}
	return res, nil
}

func offlineHash(s string, i int) uint32 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%d", s, i)
	return h.Sum32()
}
