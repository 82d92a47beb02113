package scholar

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
)

// SemanticScholar searches papers with the Semantic Scholar Academic Graph
// API (https://api.semanticscholar.org). Make one with NewSemanticScholar;
// it is safe for concurrent use, and spaces its requests 1 s apart, the
// rate a key allows.
type SemanticScholar struct {
	key  string
	o    options
	pace pacer
}

// SemanticScholarInterval is the pause between two requests.
const SemanticScholarInterval = time.Second

// NewSemanticScholar returns a Semantic Scholar source. apiKey may be empty:
// the API then answers from a pool shared by every anonymous client, which
// often replies 429. By default it sends requests to
// https://api.semanticscholar.org.
func NewSemanticScholar(apiKey string, opts ...Option) *SemanticScholar {
	o := newOptions("https://api.semanticscholar.org", SemanticScholarInterval, opts)
	return &SemanticScholar{key: apiKey, o: o, pace: newPacer(o.interval)}
}

// Name returns "semanticscholar".
func (*SemanticScholar) Name() string { return "semanticscholar" }

// semanticScholarFields are the fields Search asks for.
const semanticScholarFields = "title,url,year,authors,abstract,venue,externalIds,publicationDate"

// semanticScholarReply is the part of a /graph/v1/paper/search reply that
// Search uses.
type semanticScholarReply struct {
	Data []struct {
		PaperID         string `json:"paperId"`
		Title           string `json:"title"`
		URL             string `json:"url"`
		Year            int    `json:"year"`
		Abstract        string `json:"abstract"`
		Venue           string `json:"venue"`
		PublicationDate string `json:"publicationDate"`
		Authors         []struct {
			Name string `json:"name"`
		} `json:"authors"`
		ExternalIDs map[string]any `json:"externalIds"`
	} `json:"data"`
}

// Search sends GET /graph/v1/paper/search for at most max papers (capped
// to MaxResults), with the key, when set, in the x-api-key header. Hyphens
// become spaces, as the API finds nothing for hyphenated terms.
func (s *SemanticScholar) Search(ctx context.Context, query string, max int) ([]search.Result, error) {
	if err := checkQuery("semanticscholar", query); err != nil {
		return nil, err
	}
	max = capMax(max)
	q := url.Values{"query": {strings.ReplaceAll(query, "-", " ")}, "limit": {strconv.Itoa(max)}, "fields": {semanticScholarFields}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.o.baseURL+"/graph/v1/paper/search?"+q.Encode(), nil)
	if err != nil {
		return nil, &llm.Error{Provider: "semanticscholar", Message: llm.Redact(oneLine(err.Error()), s.key)}
	}
	req.Header.Set("Accept", "application/json")
	if s.key != "" {
		req.Header.Set("x-api-key", s.key)
	}
	if err := s.pace.wait(ctx, "semanticscholar"); err != nil {
		return nil, err
	}
	body, err := search.Fetch(s.o.client, req, "semanticscholar", s.key, nil)
	if err != nil {
		return nil, err
	}
	var reply semanticScholarReply
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, malformed("semanticscholar", err, s.key)
	}
	res := make([]search.Result, 0, len(reply.Data))
	for _, p := range reply.Data {
		r := search.Result{
			Title:     search.CleanTitle(p.Title),
			URL:       p.URL,
			Snippet:   search.CleanSnippet(p.Abstract),
			Year:      p.Year,
			Venue:     search.CleanTitle(p.Venue),
			Published: p.PublicationDate,
		}
		if doi, ok := p.ExternalIDs["DOI"].(string); ok {
			r.DOI = normalizeDOI(doi)
		}
		if r.URL == "" && p.PaperID != "" {
			r.URL = "https://www.semanticscholar.org/paper/" + url.PathEscape(p.PaperID)
		}
		if r.Published == "" && p.Year > 0 {
			r.Published = strconv.Itoa(p.Year)
		}
		for _, au := range p.Authors {
			if n := oneLine(au.Name); n != "" {
				r.Authors = append(r.Authors, n)
			}
		}
		res = append(res, r)
	}
	return ranked(res, max), nil
}
