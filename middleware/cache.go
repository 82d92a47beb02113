package middleware

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// CacheConfig configures Cache.
type CacheConfig struct {
	// Provider is the name of the provider behind the wrapped Client, such
	// as "openai". It is part of every key, so that replies from different
	// providers never mix.
	Provider string
	// DefaultModel is the model the wrapped Client uses when a request does
	// not name one. It stands in for an empty Request.Model in keys.
	DefaultModel string
	// Size is the number of replies the in-memory tier keeps, least recently
	// used first out. Zero means 1024.
	Size int
	// Store, when not nil, is the durable tier behind the in-memory one, so
	// that replies survive the process.
	Store madspark.CacheStore
	// Logger receives a warning for the first failure of Store and debug
	// messages for later ones. Nil discards.
	Logger *slog.Logger
	// Now returns the current time, recorded with each stored reply. Nil
	// means time.Now.
	Now func() time.Time
}

// cacheKeyVersion changes whenever CacheKey's encoding does, so that old
// durable entries are never misread.
const cacheKeyVersion = "madspark/cache/v1"

// CacheKey returns the cache key of req sent to provider: the hex-encoded
// SHA-256 of an unambiguous encoding of provider, the model (req.Model, or
// defaultModel when that is empty), the temperature, the token limit, the
// system instruction, the role and content of every message, the
// schema's name and JSON (compacted, so that whitespace does not matter)
// and strictness, and top_p, the stop sequences, the seed, the tools (name,
// description, parameters, strictness), the tool choice, parallel tool
// calls and the messages' tool calls and results when set.
//
// Agent, Timeout, OnDelta and Input are not part of the key: two requests
// that differ only in them get the same reply.
func CacheKey(provider, defaultModel string, req *llm.Request) string {
	h := sha256.New()
	field := func(s string) { writeField(h, []byte(s)) }
	model := req.Model
	if req.Provider != "" && req.Provider != provider {
		// Routed to another provider (see provider.Router), whose default
		// model is its own.
		provider, defaultModel = req.Provider, "(default)"
	}
	if model == "" {
		model = defaultModel
	}
	field(cacheKeyVersion)
	field(provider)
	field(model)
	field(strconv.FormatFloat(req.Temperature, 'g', -1, 64))
	field(strconv.Itoa(req.MaxTokens))
	field(req.System)
	field(strconv.Itoa(len(req.Messages)))
	for _, m := range req.Messages {
		field(string(m.Role))
		field(m.Content)
		// A message's tool calls, or the call whose result it is, go in
		// only when it has them, so that the keys of plain messages stay
		// what they were.
		if m.ToolCallID != "" {
			field("tool_call_id")
			field(m.ToolCallID)
		}
		if len(m.ToolCalls) > 0 {
			field("tool_calls")
			toolCalls(field, m.ToolCalls)
		}
	}
	if req.Schema == nil {
		field("no-schema")
	} else {
		field("schema")
		field(req.Schema.Name)
		writeField(h, compact(req.Schema.JSON))
		if req.Schema.Strict {
			field("strict")
		}
	}
	// Settings most requests leave unset go in only when set, so that the
	// keys of the requests without them stay what they were.
	if req.TopP != nil {
		field("top_p")
		field(strconv.FormatFloat(*req.TopP, 'g', -1, 64))
	}
	if len(req.Stop) > 0 {
		field("stop")
		field(strconv.Itoa(len(req.Stop)))
		for _, s := range req.Stop {
			field(s)
		}
	}
	if req.Seed != nil {
		field("seed")
		field(strconv.FormatInt(*req.Seed, 10))
	}
	if len(req.Tools) > 0 {
		field("tools")
		field(strconv.Itoa(len(req.Tools)))
		for _, tool := range req.Tools {
			field(tool.Name)
			field(tool.Description)
			writeField(h, compact(tool.Parameters))
			field(strconv.FormatBool(tool.Strict))
		}
	}
	if c := req.ToolChoice; c != nil {
		field("tool_choice")
		field(c.Mode)
		field(c.Name)
	}
	if req.ParallelToolCalls != nil {
		field("parallel_tool_calls")
		field(strconv.FormatBool(*req.ParallelToolCalls))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// toolCalls writes calls as fields.
func toolCalls(field func(string), calls []llm.ToolCall) {
	field(strconv.Itoa(len(calls)))
	for _, c := range calls {
		field(c.ID)
		field(c.Name)
		field(c.Arguments)
	}
}

// compact is JSON without its insignificant white space, or b as it is
// when it is not JSON.
func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) == nil {
		return buf.Bytes()
	}
	return b
}

// writeField writes b to h prefixed with its length, so that no two
// sequences of fields encode the same.
func writeField(h hash.Hash, b []byte) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
	h.Write(b)
}

// cacheEntry is a cached reply, and its encoding in the durable store.
type cacheEntry struct {
	Text         string `json:"text"`
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	FinishReason string `json:"finish_reason"`
	// ToolCalls are the reply's tool calls.
	ToolCalls []llm.ToolCall `json:"tool_calls,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	// InputTokens and OutputTokens are what the reply took when it was
	// made.
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}

// Cache returns a Middleware that answers a request it has seen before from
// a cache instead of calling the wrapped Client. Requests are identified by
// CacheKey(cfg.Provider, cfg.DefaultModel, req).
//
// The cache has two tiers: an in-memory LRU of cfg.Size replies in front of
// the optional durable cfg.Store. A reply found in the store is copied into
// the LRU.
//
// A hit returns the stored Text, Provider, Model and FinishReason with Cached
// set and Usage{CachedCalls: 1}: no tokens and no cost, but the tokens the
// reply took when it was made as CachedInputTokens and CachedOutputTokens. If the request
// streams (OnDelta is not nil), OnDelta is called with the text in pieces of
// a few words, as a model streams it.
//
// A miss calls the wrapped Client and stores its reply if the call succeeded
// and the reply was not truncated (Response.Truncated); for a Deferred
// request, only once the caller calls the response's Accept, so that a reply
// the caller could not use is asked again next time rather than replayed. Cache failures
// never fail a call: a store error or an undecodable stored value is logged
// and treated as a miss or an unstored reply. Concurrent identical misses
// each call the wrapped Client.
//
// Each Client that the Middleware wraps gets its own in-memory tier.
func Cache(cfg CacheConfig) llm.Middleware {
	if cfg.Size <= 0 {
		cfg.Size = 1024
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = logger(cfg.Logger)
	return func(next llm.Client) llm.Client {
		mem, err := lru.New[string, cacheEntry](cfg.Size)
		if err != nil {
			panic("middleware: " + err.Error()) // only for size <= 0
		}
		return &cache{cfg: cfg, next: next, mem: mem}
	}
}

type cache struct {
	cfg       CacheConfig
	next      llm.Client
	mem       *lru.Cache[string, cacheEntry]
	storeWarn atomic.Bool // the first store failure was logged as a warning
}

// freshKey is the context key of Fresh.
type freshKey struct{}

// Fresh returns a context under which Cache answers no call from the
// cache: each goes to the model, and its reply replaces the cached one.
// A person asking for another answer (a chat's Regenerate) wants the
// model asked again, not the same reply replayed.
func Fresh(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshKey{}, true)
}

// isFresh reports whether ctx was made by Fresh.
func isFresh(ctx context.Context) bool {
	v, _ := ctx.Value(freshKey{}).(bool)
	return v
}

func (c *cache) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	key := CacheKey(c.cfg.Provider, c.cfg.DefaultModel, req)
	if isFresh(ctx) {
		// Asked again on purpose: the reply is stored, not read.
	} else if e, ok := c.lookup(ctx, req, key); ok {
		if req.OnDelta != nil {
			for _, chunk := range chunks(e.Text) {
				req.OnDelta(chunk)
			}
		}
		return &llm.Response{
			Text:         e.Text,
			ToolCalls:    e.ToolCalls,
			Provider:     e.Provider,
			Model:        e.Model,
			FinishReason: e.FinishReason,
			Cached:       true,
			Usage:        llm.Usage{CachedCalls: 1, CachedInputTokens: e.InputTokens, CachedOutputTokens: e.OutputTokens},
		}, nil
	}
	resp, err := c.next.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.Truncated() {
		return resp, nil
	}
	e := cacheEntry{
		Text:         resp.Text,
		ToolCalls:    resp.ToolCalls,
		Provider:     resp.Provider,
		Model:        resp.Model,
		FinishReason: resp.FinishReason,
		CreatedAt:    c.cfg.Now().UTC(),
		InputTokens:  resp.Usage.InputTokens,
		OutputTokens: resp.Usage.OutputTokens,
	}
	if !req.Deferred {
		c.save(ctx, req, key, e)
		return resp, nil
	}
	var once sync.Once
	stored := *resp
	stored.OnAccept = func() { once.Do(func() { c.save(ctx, req, key, e) }) }
	return &stored, nil
}

// chunks splits a cached reply for a streaming request into pieces of a
// few words each, as a model streams them, so that a client sees the same
// kind of stream whether the reply was cached or not.
func chunks(text string) []string {
	const size = 24 // bytes, ending at a space
	var out []string
	for len(text) > size {
		i := strings.IndexByte(text[size:], ' ')
		if i < 0 {
			break
		}
		out = append(out, text[:size+i+1])
		text = text[size+i+1:]
	}
	if text != "" || len(out) == 0 {
		out = append(out, text)
	}
	return out
}

// lookup finds key in the LRU, then in the store.
func (c *cache) lookup(ctx context.Context, req *llm.Request, key string) (cacheEntry, bool) {
	if e, ok := c.mem.Get(key); ok {
		return e, true
	}
	if c.cfg.Store == nil {
		return cacheEntry{}, false
	}
	data, ok, err := c.cfg.Store.GetCache(ctx, key)
	if err != nil {
		if ctx.Err() == nil { // else the caller gave up; not the store's fault
			c.storeFailed(req, "read", err)
		}
		return cacheEntry{}, false
	}
	if !ok {
		return cacheEntry{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(data, &e); err != nil {
		c.storeFailed(req, "decode", err)
		return cacheEntry{}, false
	}
	c.mem.Add(key, e)
	return e, true
}

// save puts e under key in both tiers. The store write is not cancelled with
// the caller's context: the reply has been paid for.
func (c *cache) save(ctx context.Context, req *llm.Request, key string, e cacheEntry) {
	c.mem.Add(key, e)
	if c.cfg.Store == nil {
		return
	}
	data, err := json.Marshal(e)
	if err == nil {
		err = c.cfg.Store.PutCache(context.WithoutCancel(ctx), key, data)
	}
	if err != nil {
		c.storeFailed(req, "write", err)
	}
}

// storeFailed logs a store failure: the first as a warning, later ones at
// debug level.
func (c *cache) storeFailed(req *llm.Request, op string, err error) {
	level := slog.LevelDebug
	if c.storeWarn.CompareAndSwap(false, true) {
		level = slog.LevelWarn
	}
	model := req.Model
	if model == "" {
		model = c.cfg.DefaultModel
	}
	c.cfg.Logger.Log(context.Background(), level, "response cache store failed; continuing without it",
		"op", op, "agent", req.Agent, "provider", c.cfg.Provider, "model", model, "error", err)
}
