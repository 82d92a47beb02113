package search

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/madspark/madspark/llm"
)

// TavilyMax is the largest number of results Tavily returns for one search.
const TavilyMax = 20

// Tavily searches the web with the Tavily Search API. Make one with
// NewTavily; it is safe for concurrent use.
type Tavily struct {
	key string
	o   options
}

// NewTavily returns a Tavily provider that authenticates with apiKey. By
// default it sends requests to https://api.tavily.com.
func NewTavily(apiKey string, opts ...Option) *Tavily {
	return &Tavily{key: apiKey, o: newOptions("https://api.tavily.com", opts)}
}

// Name returns "tavily".
func (t *Tavily) Name() string { return "tavily" }

// tavilyRequest is the body of POST /search.
type tavilyRequest struct {
	Query         string `json:"query"`
	MaxResults    int    `json:"max_results"`
	SearchDepth   string `json:"search_depth"`
	IncludeAnswer bool   `json:"include_answer"`
}

// tavilyReply is the part of a /search reply that Search uses.
type tavilyReply struct {
	Results []struct {
		Title         string   `json:"title"`
		URL           string   `json:"url"`
		Content       string   `json:"content"`
		Score         *float64 `json:"score"`
		PublishedDate string   `json:"published_date"`
	} `json:"results"`
}

// Search sends POST /search with a basic-depth query for at most max
// results (capped to TavilyMax) and the key as a bearer token.
func (t *Tavily) Search(ctx context.Context, query string, max int) ([]Result, error) {
	if err := checkQuery("tavily", query); err != nil {
		return nil, err
	}
	max = capMax(max, TavilyMax)
	body, err := json.Marshal(tavilyRequest{Query: query, MaxResults: max, SearchDepth: "basic"})
	if err != nil {
		return nil, &llm.Error{Provider: "tavily", Message: "encoding request: " + err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.o.baseURL+"/search", bytes.NewReader(body))
	if err != nil {
		return nil, &llm.Error{Provider: "tavily", Message: oneLine(err.Error(), t.key)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.key)
	var reply tavilyReply
	if err := send(t.o.client, req, "tavily", t.key, nil, &reply); err != nil {
		return nil, err
	}
	res := make([]Result, len(reply.Results))
	scored := make([]bool, len(reply.Results))
	for i, r := range reply.Results {
		res[i] = Result{
			Title:     clean(r.Title, titleRunes),
			URL:       r.URL,
			Snippet:   clean(r.Content, snippetRunes),
			Published: r.PublishedDate,
		}
		if r.Score != nil {
			res[i].Score, scored[i] = *r.Score, true
		}
	}
	return finish(res, scored, max), nil
}
