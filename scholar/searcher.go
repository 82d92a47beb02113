package scholar

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
)

// Work is one work a Searcher found: the search result that first named it,
// with what later results for the same work add (a missing year, authors,
// venue or DOI), and the number it is cited by. Its Score is the fused
// score the works are ranked by.
type Work struct {
	// ID numbers the works of one search from 1, best first.
	ID int `json:"id"`
	search.Result
	// Sources names the sources that returned the work, in the order
	// they were searched.
	Sources []string `json:"sources"`
}

// Attempt is one query sent to one source, and what came of it.
type Attempt struct {
	Query  string `json:"query"`
	Source string `json:"source"`
	// Found is the number of results returned.
	Found int `json:"found"`
	// Error is why the search failed, if it did.
	Error string `json:"error,omitempty"`
}

// Findings are the outcome of a Searcher's search.
type Findings struct {
	// Works are the works found, merged and ranked, numbered from 1.
	Works []Work `json:"works"`
	// Attempts lists every query sent to every source, in query order,
	// then source order.
	Attempts []Attempt `json:"attempts"`
}

// Work returns the work numbered id, and whether there is one.
func (f *Findings) Work(id int) (Work, bool) {
	if id < 1 || id > len(f.Works) {
		return Work{}, false
	}
	return f.Works[id-1], true
}

// Failed returns a one-line summary of the failed attempts, "" when none
// failed.
func (f *Findings) Failed() string {
	var parts []string
	for _, a := range f.Attempts {
		if a.Error != "" {
			parts = append(parts, fmt.Sprintf("%s for %q: %s", a.Source, a.Query, a.Error))
		}
	}
	return strings.Join(parts, "; ")
}

// Searcher sends several queries to several sources at once and merges the
// results: the same work returned by different queries or sources (the
// same DOI, the same address or the same title) is one Work, and works are
// ranked by reciprocal rank fusion, the sum over the searches that found a
// work of 1/(60 + its rank), so that a work found by many searches near
// the top comes first.
type Searcher struct {
	// Sources are searched in this order; each is typically a
	// search.Cached scholarly or web source.
	Sources []search.Provider
	// PerQuery is the number of results asked of each source for each
	// query; 0 means search.DefaultMax.
	PerQuery int
	// Limit caps the number of works kept; 0 means 30.
	Limit int
	// MaxRetryWait caps the wait before the one retry of a search that
	// failed transiently (429, 5xx, timeout), which otherwise waits what
	// the source asked for, or 1 s. 0 means 5 s; negative disables the
	// retry.
	MaxRetryWait time.Duration
}

// rrfK is reciprocal rank fusion's usual constant.
const rrfK = 60

// Search sends every query to every source concurrently. A source that
// fails is recorded in the findings' Attempts and the others are used; it
// is an error only when every search failed, or ctx ended.
func (s *Searcher) Search(ctx context.Context, queries []string) (*Findings, error) {
	if len(s.Sources) == 0 {
		return nil, errors.New("scholar: no sources to search")
	}
	if len(queries) == 0 {
		return nil, errors.New("scholar: no queries")
	}
	per := s.PerQuery
	if per <= 0 {
		per = search.DefaultMax
	}
	limit := s.Limit
	if limit <= 0 {
		limit = 30
	}
	n := len(queries) * len(s.Sources)
	results := make([][]search.Result, n)
	attempts := make([]Attempt, n)
	var wg sync.WaitGroup
	for qi, q := range queries {
		for si, src := range s.Sources {
			i := qi*len(s.Sources) + si
			attempts[i] = Attempt{Query: q, Source: src.Name()}
			wg.Go(func() {
				res, err := s.searchOne(ctx, src, q, per)
				if err != nil {
					attempts[i].Error = oneLine(err.Error())
					return
				}
				results[i], attempts[i].Found = res, len(res)
			})
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("literature search: %w", err)
	}
	f := &Findings{Attempts: attempts, Works: []Work{}}
	ok := false
	for _, a := range attempts {
		ok = ok || a.Error == ""
	}
	if !ok {
		return f, fmt.Errorf("literature search: every search failed: %s", firstErrors(attempts))
	}
	f.Works = merge(results, attempts, limit)
	return f, nil
}

// searchOne searches src, and once more after a pause when the failure is
// transient.
func (s *Searcher) searchOne(ctx context.Context, src search.Provider, q string, per int) ([]search.Result, error) {
	res, err := src.Search(ctx, q, per)
	if err == nil || s.MaxRetryWait < 0 || !llm.IsRetryable(err) || ctx.Err() != nil {
		return res, err
	}
	capWait := s.MaxRetryWait
	if capWait == 0 {
		capWait = 5 * time.Second
	}
	wait := llm.RetryAfterOf(err)
	if wait <= 0 {
		wait = time.Second
	}
	t := time.NewTimer(min(wait, capWait))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, err
	case <-t.C:
	}
	return src.Search(ctx, q, per)
}

// firstErrors returns the first error of each source, one line.
func firstErrors(attempts []Attempt) string {
	seen := map[string]bool{}
	var parts []string
	for _, a := range attempts {
		if a.Error != "" && !seen[a.Source] {
			seen[a.Source] = true
			parts = append(parts, a.Error)
		}
	}
	return strings.Join(parts, "; ")
}

// merge folds the results of every attempt into ranked, numbered works.
func merge(results [][]search.Result, attempts []Attempt, limit int) []Work {
	var works []*Work
	var score []float64
	index := map[string]int{}
	for i, res := range results {
		for rank, r := range res {
			keys := workKeys(r)
			at := -1
			for _, k := range keys {
				if j, ok := index[k]; ok {
					at = j
					break
				}
			}
			if at < 0 {
				at = len(works)
				works = append(works, &Work{Result: r})
				score = append(score, 0)
			} else {
				fill(&works[at].Result, r)
			}
			w := works[at]
			if !contains(w.Sources, attempts[i].Source) {
				w.Sources = append(w.Sources, attempts[i].Source)
			}
			score[at] += 1 / float64(rrfK+rank+1)
			for _, k := range keys {
				if _, ok := index[k]; !ok {
					index[k] = at
				}
			}
		}
	}
	order := make([]int, len(works))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	out := make([]Work, 0, min(len(works), limit))
	for _, i := range order[:min(len(order), limit)] {
		w := *works[i]
		w.ID = len(out) + 1
		w.Score = score[i]
		out = append(out, w)
	}
	return out
}

// fill completes w with what r knows and w does not. A journal venue
// replaces "arXiv".
func fill(w *search.Result, r search.Result) {
	if w.Year == 0 {
		w.Year = r.Year
	}
	if len(w.Authors) == 0 {
		w.Authors = r.Authors
	}
	if w.DOI == "" {
		w.DOI = r.DOI
	}
	if w.Venue == "" || (w.Venue == "arXiv" && r.Venue != "") {
		w.Venue = r.Venue
	}
	if w.Snippet == "" {
		w.Snippet = r.Snippet
	}
	if w.Published == "" {
		w.Published = r.Published
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var arXivVersion = regexp.MustCompile(`v\d+$`)

// workKeys returns the keys that identify r's work: its DOI, its address
// (scheme, "www." and an arXiv version dropped) and its title (letters and
// digits only, when long enough to be distinctive).
func workKeys(r search.Result) []string {
	var keys []string
	if r.DOI != "" {
		keys = append(keys, "doi:"+r.DOI)
	}
	if u, err := url.Parse(strings.TrimSpace(r.URL)); err == nil && u.Host != "" {
		host := strings.TrimPrefix(strings.ToLower(u.Host), "www.")
		path := strings.TrimSuffix(u.Path, "/")
		if host == "arxiv.org" {
			path = arXivVersion.ReplaceAllString(strings.Replace(path, "/pdf/", "/abs/", 1), "")
		}
		if host == "doi.org" || host == "dx.doi.org" {
			if d := normalizeDOI(path); d != "" {
				keys = append(keys, "doi:"+d)
			}
		}
		keys = append(keys, "url:"+host+path+queryOf(u))
	}
	t := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, r.Title)
	if len([]rune(t)) >= 16 {
		keys = append(keys, "title:"+t)
	}
	return keys
}

func queryOf(u *url.URL) string {
	if u.RawQuery == "" {
		return ""
	}
	return "?" + u.RawQuery
}
