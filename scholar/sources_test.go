package scholar

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/search"
)

const openAlexKey = "oa-SECRET-0123456789abcdef"

// openAlexOK is a /works reply in the real shape (trimmed to the fields
// asked for with select).
const openAlexOK = `{
  "meta": {"count": 2, "db_response_time_ms": 41, "page": 1, "per_page": 3, "groups_count": null},
  "results": [
    {"id": "https://openalex.org/W2741809807", "doi": "https://doi.org/10.7717/PEERJ.4375",
     "display_name": "The state of OA: a large-scale analysis of the prevalence and impact of Open Access articles",
     "publication_year": 2018,
     "authorships": [{"author_position": "first", "author": {"id": "https://openalex.org/A1", "display_name": "Heather Piwowar"}},
                     {"author_position": "last", "author": {"id": "https://openalex.org/A2", "display_name": "Jason Priem"}}],
     "primary_location": {"is_oa": true, "landing_page_url": "https://peerj.com/articles/4375", "source": {"id": "https://openalex.org/S1", "display_name": "PeerJ"}},
     "abstract_inverted_index": {"Despite": [0], "growing": [1], "interest": [2], "in": [3], "Open": [4], "Access": [5]}},
    {"id": "https://openalex.org/W99", "doi": null, "display_name": "Études sur l'accès ouvert",
     "publication_year": 2020, "authorships": [],
     "primary_location": {"landing_page_url": "https://example.org/etudes", "source": null},
     "abstract_inverted_index": null},
    {"id": "https://openalex.org/W100", "doi": null, "display_name": "No location", "publication_year": null,
     "authorships": [], "primary_location": null, "abstract_inverted_index": null}
  ],
  "group_by": []
}`

func openAlexCheck(t *testing.T, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/works" {
		t.Errorf("request %s %s, want GET /works", r.Method, r.URL.Path)
	}
	q := r.URL.Query()
	if q.Get("search") != "open access" || q.Get("per-page") != "3" || q.Get("select") != openAlexFields {
		t.Errorf("query %v", q)
	}
	if q.Get("api_key") != openAlexKey || q.Get("mailto") != "me@example.org" {
		t.Errorf("api_key/mailto %v", q)
	}
}

func TestOpenAlexSearch(t *testing.T) {
	f := newFakeAPI(t, openAlexCheck, reply{body: openAlexOK})
	s := NewOpenAlex(openAlexKey, "me@example.org", WithBaseURL(f.srv.URL+"/"))
	res, err := s.Search(context.Background(), "open access", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []search.Result{
		{Title: "The state of OA: a large-scale analysis of the prevalence and impact of Open Access articles",
			URL: "https://doi.org/10.7717/peerj.4375", Snippet: "Despite growing interest in Open Access", Score: 1,
			Published: "2018", Authors: []string{"Heather Piwowar", "Jason Priem"}, Year: 2018, Venue: "PeerJ", DOI: "10.7717/peerj.4375"},
		{Title: "Études sur l'accès ouvert", URL: "https://example.org/etudes", Score: 0.5, Published: "2020", Year: 2020},
		{Title: "No location", URL: "https://openalex.org/W100", Score: 1.0 / 3},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("results:\n got %+v\nwant %+v", res, want)
	}
	if s.Name() != "openalex" {
		t.Errorf("name %q", s.Name())
	}
}

func TestOpenAlexWithoutKeySendsNone(t *testing.T) {
	f := newFakeAPI(t, nil, reply{body: `{"meta":{"count":0},"results":[]}`})
	res, err := NewOpenAlex("", "", WithBaseURL(f.srv.URL)).Search(context.Background(), "nothing here", 0)
	if err != nil || res == nil || len(res) != 0 {
		t.Fatalf("empty: %v %#v", err, res)
	}
	q := f.request(0).URL.Query()
	if _, ok := q["api_key"]; ok {
		t.Errorf("api_key sent without a key: %v", q)
	}
	if q.Get("per-page") != "5" {
		t.Errorf("per-page %q, want the default 5", q.Get("per-page"))
	}
}

func TestOpenAlexErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		rep       reply
		status    int
		retryable bool
		want      string
	}{
		{"rate limited", reply{status: 429, header: http.Header{"Retry-After": {"7"}}, body: `{"error":"Rate limit exceeded","message":"Daily budget used for api_key=` + openAlexKey + `"}`}, 429, true, "Rate limit exceeded"},
		{"server error", reply{status: 500, body: `<html><body><h1>Internal Server Error</h1></body></html>`, contentType: "text/html"}, 500, true, "Internal Server Error"},
		{"bad request", reply{status: 400, body: `{"error":"Invalid query parameters error.","message":"per-page is too big"}`}, 400, false, "Invalid query parameters"},
		{"malformed", reply{body: `{"results": [ {"id": 1`}, 0, false, "malformed reply"},
		{"wrong shape", reply{body: `{"results": {"id": "x"}}`}, 0, false, "malformed reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, nil, tc.rep)
			_, err := NewOpenAlex(openAlexKey, "", WithBaseURL(f.srv.URL)).Search(ctx, "open access", 3)
			e := checkLLMError(t, err, "openalex", tc.status, tc.retryable, tc.want, openAlexKey)
			if tc.status == 429 && e.RetryAfter != 7*time.Second {
				t.Errorf("RetryAfter %v, want 7s", e.RetryAfter)
			}
		})
	}
}

func TestOpenAlexUnreachableHidesKey(t *testing.T) {
	f := newFakeAPI(t, nil, reply{})
	f.srv.Close()
	_, err := NewOpenAlex(openAlexKey, "", WithBaseURL(f.srv.URL)).Search(context.Background(), "q", 1)
	checkLLMError(t, err, "openalex", 0, true, "api_key=[redacted]", openAlexKey)
}

// arXivOK is an Atom reply of /api/query in the real shape.
const arXivOK = `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3Dall%3Afederated%26id_list%3D%26start%3D0%26max_results%3D2" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=all:federated&amp;id_list=&amp;start=0&amp;max_results=2</title>
  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>
  <updated>2024-05-01T00:00:00-04:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">2</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">2</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/abs/1602.05629v4</id>
    <updated>2023-01-26T18:55:52Z</updated>
    <published>2016-02-17T19:00:02Z</published>
    <title>Communication-Efficient Learning of Deep Networks from
  Decentralized Data</title>
    <summary>  Modern mobile devices have access to a wealth of data
suitable for learning models.</summary>
    <author><name>H. Brendan McMahan</name></author>
    <author><name>Eider Moore</name></author>
    <arxiv:doi xmlns:arxiv="http://arxiv.org/schemas/atom">10.48550/arXiv.1602.05629</arxiv:doi>
    <link title="doi" href="http://dx.doi.org/10.48550/arXiv.1602.05629" rel="related"/>
    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">AISTATS 2017</arxiv:comment>
    <arxiv:journal_ref xmlns:arxiv="http://arxiv.org/schemas/atom">Proceedings of AISTATS 2017</arxiv:journal_ref>
    <link href="http://arxiv.org/abs/1602.05629v4" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/1602.05629v4" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/2001.00002v1</id>
    <published>2020-01-01T10:00:00Z</published>
    <title>Privacy in federated learning</title>
    <summary>Short.</summary>
    <author><name>Zoë Ångström</name></author>
    <link href="http://arxiv.org/abs/2001.00002v1" rel="alternate" type="text/html"/>
  </entry>
</feed>`

func arXivCheck(t *testing.T, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/api/query" {
		t.Errorf("request %s %s, want GET /api/query", r.Method, r.URL.Path)
	}
	q := r.URL.Query()
	want := map[string][]string{"search_query": {"all:federated AND all:learning AND all:privacy"}, "start": {"0"}, "max_results": {"2"}, "sortBy": {"relevance"}}
	if !reflect.DeepEqual(map[string][]string(q), want) {
		t.Errorf("query %v, want %v", q, want)
	}
}

func TestArXivSearch(t *testing.T) {
	f := newFakeAPI(t, arXivCheck, reply{body: arXivOK, contentType: "application/atom+xml"})
	s := NewArXiv(WithBaseURL(f.srv.URL), WithInterval(0))
	res, err := s.Search(context.Background(), "Federated learning and privacy?", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []search.Result{
		{Title: "Communication-Efficient Learning of Deep Networks from Decentralized Data", URL: "https://arxiv.org/abs/1602.05629v4",
			Snippet: "Modern mobile devices have access to a wealth of data suitable for learning models.", Score: 1,
			Published: "2016-02-17T19:00:02Z", Authors: []string{"H. Brendan McMahan", "Eider Moore"}, Year: 2016,
			Venue: "Proceedings of AISTATS 2017", DOI: "10.48550/arxiv.1602.05629"},
		{Title: "Privacy in federated learning", URL: "https://arxiv.org/abs/2001.00002v1", Snippet: "Short.", Score: 0.5,
			Published: "2020-01-01T10:00:00Z", Authors: []string{"Zoë Ångström"}, Year: 2020, Venue: "arXiv"},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("results:\n got %+v\nwant %+v", res, want)
	}
}

func TestArXivEmptyErrorsAndMalformed(t *testing.T) {
	ctx := context.Background()
	empty := `<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>ArXiv Query</title>
<opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:totalResults></feed>`
	f := newFakeAPI(t, nil, reply{body: empty})
	s := NewArXiv(WithBaseURL(f.srv.URL), WithInterval(0))
	if res, err := s.Search(ctx, "zzzz qqqq", 3); err != nil || res == nil || len(res) != 0 {
		t.Fatalf("empty: %v %#v", err, res)
	}

	errFeed := `<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom"><entry>
<id>http://arxiv.org/api/errors#incorrect_id_format_for_1234</id><title>Error</title>
<summary>incorrect id format for 1234</summary></entry></feed>`
	for _, tc := range []struct {
		name      string
		rep       reply
		status    int
		retryable bool
		want      string
	}{
		{"error entry", reply{body: errFeed}, 400, false, "incorrect id format"},
		{"rate limited", reply{status: 503, header: http.Header{"Retry-After": {"3"}}, body: "Rate exceeded.", contentType: "text/plain"}, 503, true, "Rate exceeded"},
		{"too many", reply{status: 429, body: ""}, 429, true, "Too Many Requests"},
		{"malformed", reply{body: `<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>cut`}, 0, false, "malformed reply"},
		{"not atom", reply{body: `{"json": true}`}, 0, false, "malformed reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, nil, tc.rep)
			_, err := NewArXiv(WithBaseURL(f.srv.URL), WithInterval(0)).Search(ctx, "federated learning", 3)
			checkLLMError(t, err, "arxiv", tc.status, tc.retryable, tc.want)
		})
	}

	// A query with nothing searchable asks nothing.
	g := newFakeAPI(t, nil, reply{body: empty})
	if res, err := NewArXiv(WithBaseURL(g.srv.URL)).Search(ctx, "the of and ???", 3); err != nil || len(res) != 0 || g.calls() != 0 {
		t.Errorf("stop words only: %v %v, %d calls", res, err, g.calls())
	}
}

func TestArXivSpacesRequests(t *testing.T) {
	f := newFakeAPI(t, nil, reply{body: arXivOK})
	s := NewArXiv(WithBaseURL(f.srv.URL), WithInterval(150*time.Millisecond))
	start := time.Now()
	for range 3 {
		if _, err := s.Search(context.Background(), "federated", 1); err != nil {
			t.Fatal(err)
		}
	}
	// Three requests need two pauses.
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("3 requests took %v; want at least 2 intervals", d)
	}
	// A request whose context ends while waiting for its turn is not sent.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Search(ctx, "federated", 1); err == nil {
		t.Error("no error for a context that ended while waiting")
	}
	if f.calls() != 3 {
		t.Errorf("%d requests, want 3", f.calls())
	}
}

func TestArXivQuery(t *testing.T) {
	for in, want := range map[string]string{
		"Federated learning and privacy?":            "all:federated AND all:learning AND all:privacy",
		`"deep" (learning) OR all:x ANDNOT y`:        "all:deep AND all:learning AND all:all",
		"a b c":                                      "",
		"one two three four five six seven eight":    "all:one AND all:two AND all:three AND all:four AND all:five AND all:six",
		"apprentissage fédéré et vie privée, privée": "all:apprentissage AND all:fédéré AND all:et AND all:vie AND all:privée",
	} {
		if got := ArXivQuery(in); got != want {
			t.Errorf("ArXivQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

const s2Key = "s2-SECRETkey0123456789abcdef"

// semanticScholarOK is a /graph/v1/paper/search reply in the real shape.
const semanticScholarOK = `{"total": 2, "offset": 0, "next": 2, "data": [
  {"paperId": "649def34f8be52c8b66281af98ae884c09aef38b", "externalIds": {"DBLP": "x", "DOI": "10.1145/3298981", "CorpusId": 1},
   "url": "https://www.semanticscholar.org/paper/649def34f8be52c8b66281af98ae884c09aef38b",
   "title": "Federated Machine Learning: Concept and Applications", "abstract": "Today's AI still faces two major challenges.",
   "venue": "ACM Transactions on Intelligent Systems and Technology", "year": 2019, "publicationDate": "2019-01-28",
   "authors": [{"authorId": "1", "name": "Qiang Yang"}, {"authorId": "2", "name": "Yang Liu"}]},
  {"paperId": "abc", "externalIds": {}, "url": null, "title": "Untitled venue", "abstract": null, "venue": "", "year": null,
   "publicationDate": null, "authors": []}
]}`

func s2Check(t *testing.T, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/graph/v1/paper/search" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	q := r.URL.Query()
	if q.Get("query") != "federated learning privacy preserving" || q.Get("limit") != "2" || q.Get("fields") != semanticScholarFields {
		t.Errorf("query %v", q)
	}
	if r.Header.Get("x-api-key") != s2Key {
		t.Errorf("x-api-key %q", r.Header.Get("x-api-key"))
	}
}

func TestSemanticScholarSearch(t *testing.T) {
	f := newFakeAPI(t, s2Check, reply{body: semanticScholarOK})
	s := NewSemanticScholar(s2Key, WithBaseURL(f.srv.URL), WithInterval(0))
	res, err := s.Search(context.Background(), "federated learning privacy-preserving", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []search.Result{
		{Title: "Federated Machine Learning: Concept and Applications", URL: "https://www.semanticscholar.org/paper/649def34f8be52c8b66281af98ae884c09aef38b",
			Snippet: "Today's AI still faces two major challenges.", Score: 1, Published: "2019-01-28",
			Authors: []string{"Qiang Yang", "Yang Liu"}, Year: 2019, Venue: "ACM Transactions on Intelligent Systems and Technology", DOI: "10.1145/3298981"},
		{Title: "Untitled venue", URL: "https://www.semanticscholar.org/paper/abc", Score: 0.5},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("results:\n got %+v\nwant %+v", res, want)
	}
}

func TestSemanticScholarEmptyAndErrors(t *testing.T) {
	ctx := context.Background()
	f := newFakeAPI(t, nil, reply{body: `{"total": 0, "offset": 0}`})
	s := NewSemanticScholar("", WithBaseURL(f.srv.URL), WithInterval(0))
	if res, err := s.Search(ctx, "nothing", 3); err != nil || res == nil || len(res) != 0 {
		t.Fatalf("empty: %v %#v", err, res)
	}
	if k := f.request(0).Header.Get("x-api-key"); k != "" {
		t.Errorf("x-api-key %q sent without a key", k)
	}
	for _, tc := range []struct {
		name      string
		rep       reply
		status    int
		retryable bool
		want      string
	}{
		{"rate limited", reply{status: 429, body: `{"message": "Too Many Requests. Please wait and try again or apply for a key for higher rate limits.", "code": "429"}`}, 429, true, "Too Many Requests"},
		{"forbidden key", reply{status: 403, body: `{"message": "Forbidden: key ` + s2Key + ` is not valid"}`}, 403, false, "Forbidden"},
		{"bad gateway", reply{status: 502, body: ""}, 502, true, "Bad Gateway"},
		{"malformed", reply{body: `{"data": [{"title": 5}]}`}, 0, false, "malformed reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, nil, tc.rep)
			_, err := NewSemanticScholar(s2Key, WithBaseURL(f.srv.URL), WithInterval(0)).Search(ctx, "q", 3)
			checkLLMError(t, err, "semanticscholar", tc.status, tc.retryable, tc.want, s2Key)
		})
	}
}

func TestEmptyQueryAsksNothing(t *testing.T) {
	f := newFakeAPI(t, nil, reply{body: "{}"})
	for _, s := range []search.Provider{
		NewOpenAlex("", "", WithBaseURL(f.srv.URL)), NewArXiv(WithBaseURL(f.srv.URL)),
		NewSemanticScholar("", WithBaseURL(f.srv.URL)), NewOffline(),
	} {
		if _, err := s.Search(context.Background(), "  ", 3); err == nil || !strings.Contains(err.Error(), "empty query") {
			t.Errorf("%s: empty query gave %v", s.Name(), err)
		}
	}
	if f.calls() != 0 {
		t.Errorf("%d requests for empty queries", f.calls())
	}
}

func TestOfflineIsDeterministicAndMarked(t *testing.T) {
	s := NewOffline()
	a, err := s.Search(context.Background(), "soil  microbiome", 4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Search(context.Background(), "soil microbiome", 4)
	if !reflect.DeepEqual(a, b) || len(a) != 4 {
		t.Fatalf("not deterministic or wrong count: %v", a)
	}
	c, _ := s.Search(context.Background(), "urban heat islands", 4)
	if a[0].Title == c[0].Title {
		t.Errorf("different queries, same title %q", a[0].Title)
	}
	for _, r := range a {
		if !strings.HasPrefix(r.Title, "[Mock] ") || !strings.HasPrefix(r.URL, "https://example.org/mock-literature/soil-microbiome/") ||
			!strings.Contains(r.Snippet, "not a real publication") || len(r.Authors) != 2 || r.Authors[0] == r.Authors[1] || r.Year < 2015 ||
			!strings.Contains(r.Title, "soil microbiome") {
			t.Errorf("entry not clearly mock or incomplete: %+v", r)
		}
	}
}

func TestFromEnv(t *testing.T) {
	env := map[string]string{"OPENALEX_API_KEY": " k1 ", "OPENALEX_MAILTO": "me@example.org", "SEMANTIC_SCHOLAR_API_KEY": "k2"}
	got := FromEnv(func(k string) string { return env[k] })
	var names []string
	for _, s := range got {
		names = append(names, s.Name())
	}
	if strings.Join(names, ",") != "openalex,arxiv,semanticscholar" {
		t.Fatalf("sources %v", names)
	}
	if oa := got[0].(*OpenAlex); oa.key != "k1" || oa.mailto != "me@example.org" {
		t.Errorf("openalex %+v", oa)
	}
	if s2 := got[2].(*SemanticScholar); s2.key != "k2" || s2.o.interval != SemanticScholarInterval {
		t.Errorf("semantic scholar %+v", s2)
	}
	if ax := got[1].(*ArXiv); ax.o.interval != ArXivInterval || ax.o.baseURL != "https://export.arxiv.org" {
		t.Errorf("arxiv %+v", ax.o)
	}
}
