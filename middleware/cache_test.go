package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

// memStore is an in-memory madspark.CacheStore.
type memStore struct {
	mu     sync.Mutex
	data   map[string][]byte
	getErr error
	putErr error
	gets   int
	puts   int
}

func newMemStore() *memStore { return &memStore{data: map[string][]byte{}} }

func (s *memStore) GetCache(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.getErr != nil {
		return nil, false, s.getErr
	}
	v, ok := s.data[key]
	return v, ok, nil
}

func (s *memStore) PutCache(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	if s.putErr != nil {
		return s.putErr
	}
	s.data[key] = value
	return nil
}

func (s *memStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.data)
}

func newCache(cfg CacheConfig, resp *llm.Response) (llm.Client, *fakeClient) {
	if cfg.Provider == "" {
		cfg.Provider = "openai"
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = "gpt-4o-mini"
	}
	next := &fakeClient{fn: results(resp)}
	return Cache(cfg)(next), next
}

func TestCacheHit(t *testing.T) {
	c, next := newCache(CacheConfig{}, okResp(`{"score": 7}`))
	first, err := c.Generate(context.Background(), request("p"))
	if err != nil || first.Cached || first.Usage.LLMCalls != 1 {
		t.Fatalf("first = %+v, %v", first, err)
	}
	var deltas []string
	req := request("p")
	req.OnDelta = func(d string) { deltas = append(deltas, d) }
	second, err := c.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{Text: `{"score": 7}`, Provider: "openai", Model: "gpt-4o-mini", FinishReason: "stop",
		Cached: true, Usage: llm.Usage{CachedCalls: 1, CachedInputTokens: 10, CachedOutputTokens: 20}}
	if !reflect.DeepEqual(*second, want) {
		t.Errorf("hit = %+v, want %+v", *second, want)
	}
	if next.Calls() != 1 {
		t.Errorf("calls = %d, want 1", next.Calls())
	}
	if strings.Join(deltas, "") != want.Text {
		t.Errorf("OnDelta got %q, want the whole text", deltas)
	}
}

// TestCacheFresh: under Fresh a call goes to the model although its reply
// is cached, and the new reply replaces the cached one.
func TestCacheFresh(t *testing.T) {
	next := &fakeClient{fn: func(_ context.Context, n int, _ *llm.Request) (*llm.Response, error) {
		return okResp(fmt.Sprintf("reply %d", n)), nil
	}}
	store := newMemStore()
	c := Cache(CacheConfig{Provider: "openai", DefaultModel: "gpt-4o-mini", Store: store})(next)
	ctx := context.Background()
	if r, err := c.Generate(ctx, request("p")); err != nil || r.Text != "reply 1" {
		t.Fatalf("first = %+v, %v", r, err)
	}
	r, err := c.Generate(Fresh(ctx), request("p"))
	if err != nil || r.Cached || r.Text != "reply 2" || next.Calls() != 2 {
		t.Fatalf("fresh = %+v, %v (%d calls), want the model's second reply", r, err, next.Calls())
	}
	// The cache now holds the fresh reply, in both tiers.
	if r, err := c.Generate(ctx, request("p")); err != nil || !r.Cached || r.Text != "reply 2" {
		t.Fatalf("after fresh = %+v, %v", r, err)
	}
	again := Cache(CacheConfig{Provider: "openai", DefaultModel: "gpt-4o-mini", Store: store})(next)
	if r, err := again.Generate(ctx, request("p")); err != nil || !r.Cached || r.Text != "reply 2" {
		t.Fatalf("from the store after fresh = %+v, %v", r, err)
	}
}

func TestCacheKeyDifferences(t *testing.T) {
	base := func() *llm.Request {
		return &llm.Request{
			Agent:       "spark.evaluate",
			System:      "judge",
			Messages:    []llm.Message{{Role: llm.RoleUser, Content: "idea"}},
			Temperature: 0.7,
			MaxTokens:   500,
			Schema:      &llm.Schema{Name: "eval", JSON: []byte(`{"type": "object"}`)},
		}
	}
	variants := map[string]func(r *llm.Request){
		"temperature": func(r *llm.Request) { r.Temperature = 0.2 },
		"max tokens":  func(r *llm.Request) { r.MaxTokens = 501 },
		"system":      func(r *llm.Request) { r.System = "judge harshly" },
		"model":       func(r *llm.Request) { r.Model = "gpt-4o" },
		"message":     func(r *llm.Request) { r.Messages[0].Content = "other idea" },
		"role":        func(r *llm.Request) { r.Messages[0].Role = llm.RoleAssistant },
		"extra message": func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Content: ""})
		},
		"split content": func(r *llm.Request) {
			r.System = "judgeidea"
			r.Messages[0].Content = ""
		},
		"schema name": func(r *llm.Request) { r.Schema.Name = "eval2" },
		"schema json": func(r *llm.Request) { r.Schema.JSON = []byte(`{"type":"array"}`) },
		"no schema":   func(r *llm.Request) { r.Schema = nil },
		"strict":      func(r *llm.Request) { r.Schema.Strict = true },
		"top_p":       func(r *llm.Request) { p := 0.5; r.TopP = &p },
		"stop":        func(r *llm.Request) { r.Stop = []string{"END"} },
		"stops":       func(r *llm.Request) { r.Stop = []string{"EN", "D"} },
		"seed":        func(r *llm.Request) { s := int64(0); r.Seed = &s },
		"tools":       func(r *llm.Request) { r.Tools = []llm.Tool{{Name: "weather"}} },
		"tool description": func(r *llm.Request) {
			r.Tools = []llm.Tool{{Name: "weather", Description: "the weather"}}
		},
		"tool parameters": func(r *llm.Request) {
			r.Tools = []llm.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}}
		},
		"strict tool": func(r *llm.Request) { r.Tools = []llm.Tool{{Name: "weather", Strict: true}} },
		"tool choice": func(r *llm.Request) {
			r.Tools, r.ToolChoice = []llm.Tool{{Name: "weather"}}, &llm.ToolChoice{Mode: llm.ToolRequired}
		},
		"tool named": func(r *llm.Request) {
			r.Tools, r.ToolChoice = []llm.Tool{{Name: "weather"}}, &llm.ToolChoice{Mode: llm.ToolRequired, Name: "weather"}
		},
		"parallel tool calls": func(r *llm.Request) {
			no := false
			r.Tools, r.ParallelToolCalls = []llm.Tool{{Name: "weather"}}, &no
		},
		"tool call": func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: "{}"}}})
		},
		"tool call arguments": func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`}}})
		},
		"tool result": func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "sunny"})
		},
	}
	c, next := newCache(CacheConfig{}, okResp("r"))
	c.Generate(context.Background(), base())
	keys := map[string]string{CacheKey("openai", "gpt-4o-mini", base()): "base"}
	for name, change := range variants {
		r := base()
		change(r)
		before := next.Calls()
		resp, err := c.Generate(context.Background(), r)
		if err != nil || resp.Cached || next.Calls() != before+1 {
			t.Errorf("%s: served from cache", name)
		}
		k := CacheKey("openai", "gpt-4o-mini", r)
		if other, dup := keys[k]; dup {
			t.Errorf("%s: same key as %s", name, other)
		}
		keys[k] = name
	}
	if CacheKey("gemini", "gpt-4o-mini", base()) == CacheKey("openai", "gpt-4o-mini", base()) {
		t.Error("provider is not part of the key")
	}

	// Not part of the key: agent, timeout, streaming, input, schema whitespace,
	// and an empty model that means the default.
	same := base()
	same.Agent = "other"
	same.Timeout = time.Second
	same.OnDelta = func(string) {}
	same.Input = 42
	same.Model = "gpt-4o-mini"
	same.Schema.JSON = []byte("{\n  \"type\":\"object\"\n}")
	if CacheKey("openai", "gpt-4o-mini", same) != CacheKey("openai", "gpt-4o-mini", base()) {
		t.Error("key depends on fields it should ignore")
	}
	if k := CacheKey("openai", "gpt-4o-mini", base()); len(k) != 64 || strings.Trim(k, "0123456789abcdef") != "" {
		t.Errorf("key %q is not hex SHA-256", k)
	}
}

func TestCacheDurableStore(t *testing.T) {
	store := newMemStore()
	clock := newFakeClock()
	cfg := CacheConfig{Store: store, Now: clock.Now}
	c1, next1 := newCache(cfg, okResp("durable"))
	if _, err := c1.Generate(context.Background(), request("p")); err != nil {
		t.Fatal(err)
	}
	if store.len() != 1 {
		t.Fatalf("store has %d entries, want 1", store.len())
	}
	var stored map[string]any
	for _, v := range store.data {
		if err := json.Unmarshal(v, &stored); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]any{"text": "durable", "provider": "openai", "model": "gpt-4o-mini",
		"finish_reason": "stop", "created_at": clock.Now().Format(time.RFC3339)}
	for k, v := range want {
		if stored[k] != v {
			t.Errorf("stored %s = %v, want %v", k, stored[k], v)
		}
	}

	// A new process: a new middleware, an empty LRU, the same store.
	c2, next2 := newCache(cfg, okResp("fresh"))
	resp, err := c2.Generate(context.Background(), request("p"))
	if err != nil || !resp.Cached || resp.Text != "durable" || resp.Usage != (llm.Usage{CachedCalls: 1, CachedInputTokens: 10, CachedOutputTokens: 20}) {
		t.Fatalf("resp = %+v, %v; want the stored reply", resp, err)
	}
	if next1.Calls() != 1 || next2.Calls() != 0 {
		t.Errorf("calls = %d, %d; want 1, 0", next1.Calls(), next2.Calls())
	}
	// Now served from the LRU without asking the store.
	gets := store.gets
	c2.Generate(context.Background(), request("p"))
	if store.gets != gets {
		t.Error("LRU hit still read the store")
	}
}

func TestCacheStoreErrors(t *testing.T) {
	store := newMemStore()
	store.getErr = errors.New("disk on fire")
	store.putErr = errors.New("disk full")
	var logs logBuffer
	c, next := newCache(CacheConfig{Store: store, Logger: newLogger(&logs)}, okResp("ok"))
	for i := range 3 {
		resp, err := c.Generate(context.Background(), request("PROMPT-"+string(rune('a'+i))))
		if err != nil || resp.Text != "ok" {
			t.Fatalf("store error failed the call: %v", err)
		}
	}
	if next.Calls() != 3 {
		t.Errorf("calls = %d, want 3", next.Calls())
	}
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1: %s", n, out)
	}
	if !strings.Contains(out, "disk on fire") || !strings.Contains(out, "disk full") {
		t.Errorf("log lacks the errors: %s", out)
	}
	if strings.Contains(out, "SECRET-SYSTEM") || strings.Contains(out, "PROMPT-") {
		t.Errorf("log leaks the prompt: %s", out)
	}

	// The LRU still works without the store.
	resp, err := c.Generate(context.Background(), request("PROMPT-a"))
	if err != nil || !resp.Cached {
		t.Errorf("resp = %+v, %v; want an LRU hit", resp, err)
	}

	// An undecodable stored value is a miss.
	store = newMemStore()
	store.data[CacheKey("openai", "gpt-4o-mini", request("p"))] = []byte("{garbage")
	c, next = newCache(CacheConfig{Store: store}, okResp("ok"))
	if resp, err := c.Generate(context.Background(), request("p")); err != nil || resp.Cached || next.Calls() != 1 {
		t.Errorf("resp = %+v, %v, calls = %d; want a miss", resp, err, next.Calls())
	}
}

func TestCacheSkipsTruncatedAndFailed(t *testing.T) {
	store := newMemStore()
	for _, reason := range []string{"length", "max_tokens"} {
		truncated := okResp("half a rep")
		truncated.FinishReason = reason
		c, next := newCache(CacheConfig{Store: store}, truncated)
		for range 2 {
			resp, err := c.Generate(context.Background(), request("p"))
			if err != nil || resp.Cached {
				t.Fatalf("%s: resp = %+v, %v", reason, resp, err)
			}
		}
		if next.Calls() != 2 || store.len() != 0 {
			t.Errorf("%s: calls = %d, stored = %d; want 2, 0", reason, next.Calls(), store.len())
		}
	}

	e := status(503)
	next := &fakeClient{fn: results(okResp("ok"), e)}
	c := Cache(CacheConfig{Store: store})(next)
	if _, err := c.Generate(context.Background(), request("p")); err != e {
		t.Fatalf("err = %v, want the provider's", err)
	}
	if resp, err := c.Generate(context.Background(), request("p")); err != nil || resp.Cached || next.Calls() != 2 {
		t.Errorf("resp = %+v, %v; a failure was cached", resp, err)
	}
}

func TestCacheEviction(t *testing.T) {
	c, next := newCache(CacheConfig{Size: 1}, okResp("ok"))
	for _, p := range []string{"a", "b", "a"} {
		c.Generate(context.Background(), request(p))
	}
	if next.Calls() != 3 {
		t.Errorf("calls = %d, want 3 with a one-entry LRU", next.Calls())
	}
}

func TestCacheConcurrent(t *testing.T) {
	store := newMemStore()
	c, _ := newCache(CacheConfig{Store: store, Size: 4}, okResp("ok"))
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Generate(context.Background(), request(string(rune('a'+i%8))))
			if err != nil || resp.Text != "ok" {
				t.Errorf("resp = %+v, %v", resp, err)
			}
		}()
	}
	wg.Wait()
	if store.len() != 8 {
		t.Errorf("stored %d, want 8", store.len())
	}
}

// TestCacheDeferred: the reply of a Deferred request is stored only once
// the caller accepts it, so that an unusable reply is asked again.
func TestCacheDeferred(t *testing.T) {
	store := newMemStore()
	c, next := newCache(CacheConfig{Store: store}, okResp(`{"score": "high"}`))
	req := request("p")
	req.Deferred = true
	if _, err := c.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// Not accepted: the same request calls the model again.
	resp, err := c.Generate(context.Background(), req)
	if err != nil || resp.Cached || next.Calls() != 2 || store.len() != 0 {
		t.Fatalf("unaccepted reply was cached: resp %+v, calls %d, stored %d", resp, next.Calls(), store.len())
	}
	resp.Accept()
	resp.Accept() // twice is once
	if store.puts != 1 {
		t.Fatalf("puts = %d, want 1", store.puts)
	}
	hit, err := c.Generate(context.Background(), req)
	if err != nil || !hit.Cached || next.Calls() != 2 {
		t.Fatalf("accepted reply not served from the cache: %+v, calls %d", hit, next.Calls())
	}
	hit.Accept() // a hit has nothing to store
	if store.puts != 1 {
		t.Fatalf("puts = %d after accepting a hit", store.puts)
	}
}

func TestChunks(t *testing.T) {
	long := "The quick brown fox jumps over the lazy dog, and then it runs far away into the woods beyond the hill."
	got := chunks(long)
	if len(got) < 3 || strings.Join(got, "") != long {
		t.Fatalf("chunks = %q", got)
	}
	for _, s := range []string{"", "short", strings.Repeat("x", 100)} {
		if got := chunks(s); strings.Join(got, "") != s || len(got) != 1 {
			t.Errorf("chunks(%q) = %q", s, got)
		}
	}
}

// TestCacheKeyStable: the key of a request without the settings added
// later (top_p, stop, seed, strict) is what it was, so that durable
// entries made before stay found.
func TestCacheKeyStable(t *testing.T) {
	req := &llm.Request{System: "judge", Messages: []llm.Message{{Role: llm.RoleUser, Content: "idea"}}, Temperature: 0.7, MaxTokens: 500,
		Schema: &llm.Schema{Name: "eval", JSON: []byte(`{"type": "object"}`)}}
	const want = "64d22cd07e2d08cab82d11d46750dda4ac786a29b0ba517769defc5643006730"
	if got := CacheKey("openai", "gpt-4o-mini", req); got != want {
		t.Errorf("CacheKey = %s, want %s", got, want)
	}
}

// TestCacheToolCalls: a reply that calls tools is replayed with its
// calls, from memory and from the durable store.
func TestCacheToolCalls(t *testing.T) {
	store := newMemStore()
	reply := okResp("")
	reply.FinishReason = llm.FinishToolCalls
	reply.ToolCalls = []llm.ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_2", Name: "time", Arguments: `{}`}}
	req := func() *llm.Request {
		r := request("weather in Oslo?")
		r.Tools = []llm.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "time"}}
		return r
	}
	c, _ := newCache(CacheConfig{Store: store}, reply)
	if _, err := c.Generate(context.Background(), req()); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]llm.Client{"memory": c, "store": func() llm.Client { c, _ := newCache(CacheConfig{Store: store}, okResp("x")); return c }()} {
		resp, err := c.Generate(context.Background(), req())
		if err != nil || !resp.Cached || resp.FinishReason != llm.FinishToolCalls || !slices.Equal(resp.ToolCalls, reply.ToolCalls) {
			t.Errorf("%s: %+v, %v", name, resp, err)
		}
	}
}
