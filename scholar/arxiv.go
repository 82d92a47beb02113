package scholar

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
)

// ArXiv searches preprints on arXiv through its Atom API
// (https://info.arxiv.org/help/api/). Make one with NewArXiv; it is safe for
// concurrent use, and spaces its requests 3 s apart as arXiv's terms ask.
type ArXiv struct {
	o    options
	pace pacer
}

// ArXivInterval is the pause arXiv asks for between two requests.
const ArXivInterval = 3 * time.Second

// NewArXiv returns an arXiv source. By default it sends requests to
// https://export.arxiv.org.
func NewArXiv(opts ...Option) *ArXiv {
	o := newOptions("https://export.arxiv.org", ArXivInterval, opts)
	return &ArXiv{o: o, pace: newPacer(o.interval)}
}

// Name returns "arxiv".
func (*ArXiv) Name() string { return "arxiv" }

// arXivFeed is the part of an Atom reply that Search uses.
type arXivFeed struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	Entries []struct {
		ID        string `xml:"http://www.w3.org/2005/Atom id"`
		Title     string `xml:"http://www.w3.org/2005/Atom title"`
		Summary   string `xml:"http://www.w3.org/2005/Atom summary"`
		Published string `xml:"http://www.w3.org/2005/Atom published"`
		Authors   []struct {
			Name string `xml:"http://www.w3.org/2005/Atom name"`
		} `xml:"http://www.w3.org/2005/Atom author"`
		Links []struct {
			Href string `xml:"href,attr"`
			Rel  string `xml:"rel,attr"`
			Type string `xml:"type,attr"`
		} `xml:"http://www.w3.org/2005/Atom link"`
		DOI        string `xml:"http://arxiv.org/schemas/atom doi"`
		JournalRef string `xml:"http://arxiv.org/schemas/atom journal_ref"`
	} `xml:"http://www.w3.org/2005/Atom entry"`
}

// Search sends GET /api/query for at most max entries (capped to
// MaxResults), sorted by relevance. The query's words are searched in all
// fields and must all appear (see ArXivQuery). An error entry in the feed
// (arXiv's way of reporting a bad query) is an error.
func (a *ArXiv) Search(ctx context.Context, query string, max int) ([]search.Result, error) {
	if err := checkQuery("arxiv", query); err != nil {
		return nil, err
	}
	sq := ArXivQuery(query)
	if sq == "" {
		return []search.Result{}, nil // nothing searchable: only stop words or symbols
	}
	max = capMax(max)
	q := url.Values{"search_query": {sq}, "start": {"0"}, "max_results": {strconv.Itoa(max)}, "sortBy": {"relevance"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.o.baseURL+"/api/query?"+q.Encode(), nil)
	if err != nil {
		return nil, &llm.Error{Provider: "arxiv", Message: oneLine(err.Error())}
	}
	req.Header.Set("Accept", "application/atom+xml")
	if err := a.pace.wait(ctx, "arxiv"); err != nil {
		return nil, err
	}
	body, err := search.Fetch(a.o.client, req, "arxiv", "", nil)
	if err != nil {
		return nil, err
	}
	var feed arXivFeed
	if err := xml.Unmarshal(body, &feed); err != nil {
		return nil, malformed("arxiv", err, "")
	}
	res := make([]search.Result, 0, len(feed.Entries))
	for _, e := range feed.Entries {
		if strings.Contains(e.ID, "/api/errors") {
			return nil, &llm.Error{Provider: "arxiv", Status: http.StatusBadRequest, Message: oneLine(e.Summary)}
		}
		r := search.Result{
			Title:     search.CleanTitle(e.Title),
			URL:       strings.TrimSpace(e.ID),
			Snippet:   search.CleanSnippet(e.Summary),
			Published: strings.TrimSpace(e.Published),
			Year:      yearOf(strings.TrimSpace(e.Published)),
			DOI:       normalizeDOI(e.DOI),
			Venue:     "arXiv",
		}
		if j := search.CleanTitle(e.JournalRef); j != "" {
			r.Venue = j
		}
		for _, l := range e.Links {
			if l.Rel == "alternate" && l.Href != "" {
				r.URL = l.Href
			}
		}
		r.URL = strings.Replace(r.URL, "http://arxiv.org/", "https://arxiv.org/", 1)
		for _, au := range e.Authors {
			if n := oneLine(au.Name); n != "" {
				r.Authors = append(r.Authors, n)
			}
		}
		res = append(res, r)
	}
	return ranked(res, max), nil
}

// arXivStop are words too common to narrow an arXiv search.
var arXivStop = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"for": true, "from": true, "how": true, "in": true, "into": true, "is": true, "it": true, "of": true,
	"on": true, "or": true, "the": true, "to": true, "what": true, "with": true, "does": true, "do": true,
	"its": true, "their": true, "this": true, "that": true, "these": true, "using": true, "via": true,
}

// maxArXivTerms caps how many words an arXiv query requires, so that long
// queries still find something.
const maxArXivTerms = 6

// ArXivQuery turns a free-text query into arXiv's search syntax: each
// significant word (stop words, operators and symbols dropped, at most 6)
// searched in all fields, joined by AND, such as
// "all:federated AND all:learning AND all:privacy". It returns "" when no
// word is left.
func ArXivQuery(query string) string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var terms []string
	seen := map[string]bool{}
	for _, w := range words {
		if arXivStop[w] || w == "andnot" || seen[w] || len([]rune(w)) < 2 {
			continue
		}
		seen[w] = true
		terms = append(terms, "all:"+w)
		if len(terms) == maxArXivTerms {
			break
		}
	}
	return strings.Join(terms, " AND ")
}
