package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/madspark/madspark"
)

// Cached returns p with its results kept in store for ttl, keyed by
// provider, query and count. A store that fails is passed over: a search
// never fails because of its cache.
func Cached(p Provider, store madspark.CacheStore, ttl time.Duration) Provider {
	return &cached{p: p, store: store, ttl: ttl}
}

type cached struct {
	p     Provider
	store madspark.CacheStore
	ttl   time.Duration
}

type cacheEntry struct {
	Results  []Result  `json:"results"`
	StoredAt time.Time `json:"stored_at"`
}

func (c *cached) Name() string { return c.p.Name() }

func (c *cached) Search(ctx context.Context, query string, limit int) ([]Result, error) {
	sum := sha256.Sum256([]byte(fmt.Sprintf("madspark/search/v1\x00%s\x00%d\x00%s", c.p.Name(), limit, query)))
	key := "search:" + hex.EncodeToString(sum[:])
	if data, ok, err := c.store.GetCache(ctx, key); err == nil && ok {
		var e cacheEntry
		if json.Unmarshal(data, &e) == nil && time.Since(e.StoredAt) < c.ttl {
			return e.Results, nil
		}
	}
	res, err := c.p.Search(ctx, query, limit)
	if err != nil {
		return nil, err
	}
	if data, err := json.Marshal(cacheEntry{Results: res, StoredAt: time.Now().UTC()}); err == nil {
		_ = c.store.PutCache(context.WithoutCancel(ctx), key, data)
	}
	return res, nil
}
