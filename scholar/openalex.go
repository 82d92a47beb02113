package scholar

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
)

// OpenAlex searches works in OpenAlex (https://openalex.org), the open
// catalogue of scholarly papers. Make one with NewOpenAlex; it is safe for
// concurrent use.
type OpenAlex struct {
	key, mailto string
	o           options
}

// NewOpenAlex returns an OpenAlex source. apiKey (free from openalex.org)
// and mailto (an address for OpenAlex's polite pool) may be empty. By
// default it sends requests to https://api.openalex.org.
func NewOpenAlex(apiKey, mailto string, opts ...Option) *OpenAlex {
	return &OpenAlex{key: apiKey, mailto: mailto, o: newOptions("https://api.openalex.org", 0, opts)}
}

// Name returns "openalex".
func (*OpenAlex) Name() string { return "openalex" }

// openAlexFields are the fields Search asks for.
const openAlexFields = "id,doi,display_name,publication_year,authorships,primary_location,abstract_inverted_index"

// openAlexReply is the part of a /works reply that Search uses.
type openAlexReply struct {
	Results []struct {
		ID              string `json:"id"`
		DOI             string `json:"doi"`
		DisplayName     string `json:"display_name"`
		PublicationYear int    `json:"publication_year"`
		Authorships     []struct {
			Author struct {
				DisplayName string `json:"display_name"`
			} `json:"author"`
		} `json:"authorships"`
		PrimaryLocation *struct {
			LandingPageURL string `json:"landing_page_url"`
			Source         *struct {
				DisplayName string `json:"display_name"`
			} `json:"source"`
		} `json:"primary_location"`
		AbstractInvertedIndex map[string][]int `json:"abstract_inverted_index"`
	} `json:"results"`
}

// Search sends GET /works?search=QUERY for at most max works (capped to
// MaxResults), with the key and mailto as query parameters when set. A
// work's URL is its DOI link, else its landing page, else its OpenAlex
// page; its snippet is the start of its abstract.
func (a *OpenAlex) Search(ctx context.Context, query string, max int) ([]search.Result, error) {
	if err := checkQuery("openalex", query); err != nil {
		return nil, err
	}
	max = capMax(max)
	q := url.Values{"search": {query}, "per-page": {strconv.Itoa(max)}, "select": {openAlexFields}}
	if a.key != "" {
		q.Set("api_key", a.key)
	}
	if a.mailto != "" {
		q.Set("mailto", a.mailto)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.o.baseURL+"/works?"+q.Encode(), nil)
	if err != nil {
		return nil, &llm.Error{Provider: "openalex", Message: llm.Redact(oneLine(err.Error()), a.key)}
	}
	req.Header.Set("Accept", "application/json")
	body, err := search.Fetch(a.o.client, req, "openalex", a.key, nil)
	if err != nil {
		return nil, err
	}
	var reply openAlexReply
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, malformed("openalex", err, a.key)
	}
	res := make([]search.Result, 0, len(reply.Results))
	for _, w := range reply.Results {
		r := search.Result{
			Title:   search.CleanTitle(w.DisplayName),
			Snippet: search.CleanSnippet(abstract(w.AbstractInvertedIndex)),
			Year:    w.PublicationYear,
			DOI:     normalizeDOI(w.DOI),
		}
		if w.PublicationYear > 0 {
			r.Published = strconv.Itoa(w.PublicationYear)
		}
		for _, au := range w.Authorships {
			if n := strings.TrimSpace(au.Author.DisplayName); n != "" {
				r.Authors = append(r.Authors, n)
			}
		}
		var landing string
		if pl := w.PrimaryLocation; pl != nil {
			landing = pl.LandingPageURL
			if pl.Source != nil {
				r.Venue = search.CleanTitle(pl.Source.DisplayName)
			}
		}
		switch {
		case r.DOI != "":
			r.URL = "https://doi.org/" + r.DOI
		case landing != "":
			r.URL = landing
		default:
			r.URL = w.ID
		}
		res = append(res, r)
	}
	return ranked(res, max), nil
}

// abstract rebuilds an abstract from OpenAlex's inverted index (each word
// with the positions it appears at).
func abstract(index map[string][]int) string {
	type at struct {
		pos  int
		word string
	}
	var words []at
	for w, positions := range index {
		for _, p := range positions {
			words = append(words, at{p, w})
		}
	}
	sort.Slice(words, func(i, j int) bool { return words[i].pos < words[j].pos })
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.word)
	}
	return b.String()
}
