package search

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFromEnvFallback: with both keys, Tavily answers while it works, and
// Brave when Tavily fails or runs out of time; the base URLs come from the
// environment.
func TestFromEnvFallback(t *testing.T) {
	tav := newTavilyFake(t, "raft consensus", 2)
	brave := newBraveFake(t, "raft consensus", 2)
	brave.reply(http.StatusOK, nil, braveOK)
	env := map[string]string{
		"TAVILY_API_KEY": testKey, "BRAVE_API_KEY": testKey,
		"TAVILY_BASE_URL": tav.srv.URL, "BRAVE_BASE_URL": brave.srv.URL,
	}
	p := FromEnv(func(k string) string { return env[k] })
	if p.Name() != "tavily+brave" {
		t.Fatalf("name = %q", p.Name())
	}

	tav.reply(http.StatusOK, nil, tavilyOK)
	res, err := p.Search(context.Background(), "raft consensus", 2)
	if err != nil || len(res) == 0 || res[0].URL != "https://raft.github.io/" || brave.calls.Load() != 0 {
		t.Fatalf("tavily healthy: %+v, %v, brave calls %d", res, err, brave.calls.Load())
	}

	tav.reply(http.StatusBadGateway, nil, `{"detail":{"error":"upstream down"}}`)
	res, err = p.Search(context.Background(), "raft consensus", 2)
	if err != nil || len(res) == 0 || brave.calls.Load() != 1 {
		t.Fatalf("tavily failing: %+v, %v, brave calls %d", res, err, brave.calls.Load())
	}

	// Tavily hangs past its time limit: Brave answers.
	tav.blockAll()
	slow := FromEnv(func(k string) string { return env[k] }).(fallback)
	slow[0] = NewTavily(testKey, WithBaseURL(tav.srv.URL), WithHTTPClient(&http.Client{Timeout: 200 * time.Millisecond}))
	if res, err = slow.Search(context.Background(), "raft consensus", 2); err != nil || len(res) == 0 || brave.calls.Load() != 2 {
		t.Fatalf("tavily timing out: %+v, %v, brave calls %d", res, err, brave.calls.Load())
	}

	// Both failing: one error naming both.
	brave.reply(http.StatusUnauthorized, nil, `{"error":"bad key"}`)
	_, err = slow.Search(context.Background(), "raft consensus", 2)
	if err == nil || !strings.Contains(err.Error(), "tavily") || !strings.Contains(err.Error(), "brave") || strings.Contains(err.Error(), testKey) {
		t.Fatalf("both failing: %v", err)
	}
}
