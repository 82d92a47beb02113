package search

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"strconv"
	"time"

	"github.com/madspark/madspark"
)

// cacheKeyVersion changes whenever the key's encoding or cacheEntry does,
// so that old entries are never misread.
const cacheKeyVersion = "madspark/search/v1"

// cacheEntry is a search's results as stored.
type cacheEntry struct {
	Results  []Result  `json:"results"`
	StoredAt time.Time `json:"stored_at"`
}

// cacheKey returns the store key of a search: "search:" and the hex-encoded
// SHA-256 of an unambiguous encoding of the provider's name, max and query.
func cacheKey(provider, query string, max int) string {
	h := sha256.New()
	for _, f := range []string{cacheKeyVersion, provider, strconv.Itoa(max), query} {
		writeField(h, f)
	}
	return "search:" + hex.EncodeToString(h.Sum(nil))
}

// writeField writes s to h prefixed with its length, so that no two
// sequences of fields encode the same.
func writeField(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	h.Write([]byte(s))
}

// Cached returns a Provider that answers a search it has seen within ttl
// from store instead of asking p. Searches are the same when p's name, the
// query and max are; results are stored, JSON-encoded with the time they
// were stored, after every successful search. An entry older than ttl is a
// miss; ttl <= 0 means entries never expire.
//
// The cache never fails a search: a store that fails to read or write, or
// an entry that does not decode, is passed over silently. Errors from p are
// returned as they are and never stored. Concurrent identical misses each
// ask p.
//
// Cached returns p itself when store is nil, and nil when p is nil.
func Cached(p Provider, store madspark.CacheStore, ttl time.Duration) Provider {
	if p == nil || store == nil {
		return p
	}
	return &cached{p: p, store: store, ttl: ttl, now: time.Now}
}

type cached struct {
	p     Provider
	store madspark.CacheStore
	ttl   time.Duration
	now   func() time.Time
}

// Name returns the wrapped provider's name.
func (c *cached) Name() string { return c.p.Name() }

// Search returns stored results for a search seen within the TTL, and else
// asks the wrapped provider and stores its results.
func (c *cached) Search(ctx context.Context, query string, max int) ([]Result, error) {
	key := cacheKey(c.p.Name(), query, max)
	if res, ok := c.lookup(ctx, key); ok {
		return res, nil
	}
	res, err := c.p.Search(ctx, query, max)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(cacheEntry{Results: res, StoredAt: c.now().UTC()})
	if err == nil {
		// Not cancelled with the caller: the search has been paid for.
		_ = c.store.PutCache(context.WithoutCancel(ctx), key, data)
	}
	return res, nil
}

// lookup returns the results stored under key, if there are any that have
// not expired.
func (c *cached) lookup(ctx context.Context, key string) ([]Result, bool) {
	data, ok, err := c.store.GetCache(ctx, key)
	if err != nil || !ok {
		return nil, false
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.StoredAt.IsZero() {
		return nil, false
	}
	if c.ttl > 0 && c.now().Sub(e.StoredAt) >= c.ttl {
		return nil, false
	}
	if e.Results == nil {
		e.Results = []Result{}
	}
	return e.Results, true
}
