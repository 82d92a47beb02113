package app

import (
	"context"
	"strings"
	"testing"

	"github.com/madspark/madspark/provider"
)

// TestProposalSources checks which literature sources a run searches: the
// offline one in mock mode; else the scholarly ones and the web search
// whose key is set.
func TestProposalSources(t *testing.T) {
	names := func(vars map[string]string, mock bool) string {
		a := &App{cfg: Config{Getenv: func(k string) string { return vars[k] }}, Info: provider.Info{Mock: mock}, Cache: newMemCache()}
		var ns []string
		for _, s := range a.proposalSources() {
			ns = append(ns, s.Name())
		}
		return strings.Join(ns, ",")
	}
	if got := names(nil, true); got != "offline" {
		t.Errorf("mock: %s", got)
	}
	if got := names(nil, false); got != "openalex,arxiv,semanticscholar" {
		t.Errorf("live: %s", got)
	}
	if got := names(map[string]string{"BRAVE_API_KEY": "k"}, false); got != "openalex,arxiv,semanticscholar,brave" {
		t.Errorf("with Brave: %s", got)
	}
}

// memCache is a madspark.CacheStore in memory.
type memCache struct{ m map[string][]byte }

func newMemCache() *memCache { return &memCache{m: map[string][]byte{}} }

func (c *memCache) GetCache(_ context.Context, k string) ([]byte, bool, error) {
	v, ok := c.m[k]
	return v, ok, nil
}

func (c *memCache) PutCache(_ context.Context, k string, v []byte) error {
	c.m[k] = v
	return nil
}
