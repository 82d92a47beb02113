// Package redis is a response cache shared by processes: a
// madspark.CacheStore kept in Redis, through go-redis
// (github.com/redis/go-redis/v9).
//
// The cache is an optimisation, so Redis being unreachable or failing never
// fails a call: GetCache reports a miss and PutCache drops the value, both
// without an error. The first failure is logged as a warning, later ones at
// debug level, and when Redis answers again that is logged once at info
// level. While Redis is failing, the cache leaves it alone for a second
// after each failure, so that a server that is down costs a run almost
// nothing.
//
// Values are stored under "madspark:cache:" followed by the key (see
// Config.Prefix) and expire after a TTL, seven days unless configured.
package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/madspark/madspark"
)

// Compile-time check that *Cache satisfies the storage contract.
var _ madspark.CacheStore = (*Cache)(nil)

// Defaults of Config.
const (
	// DefaultPrefix is the default prefix of keys in Redis.
	DefaultPrefix = "madspark:cache:"
	// DefaultTTL is how long values live by default.
	DefaultTTL = 7 * 24 * time.Hour
	// DefaultTimeout bounds, by default, each dial, read and write.
	DefaultTimeout = 500 * time.Millisecond
)

// retryAfter is how long a failing Cache leaves Redis alone after a failure.
const retryAfter = time.Second

// Config configures a Cache opened with OpenConfig.
type Config struct {
	// URL locates the server, as in "redis://user:password@host:6379/0"
	// or "rediss://..." for TLS, with any of the query parameters that
	// go-redis's ParseURL accepts (such as dial_timeout).
	URL string
	// TTL is how long a stored value lives. Zero means DefaultTTL;
	// negative means values never expire.
	TTL time.Duration
	// Prefix is put before every key in Redis. Empty means DefaultPrefix.
	Prefix string
	// Timeout bounds each dial, read and write for which URL sets no
	// timeout of its own. Zero means DefaultTimeout.
	Timeout time.Duration
	// Logger receives the reports of failures and recoveries. Nil
	// discards them.
	Logger *slog.Logger
}

// Cache is a madspark.CacheStore kept in Redis. It is safe for concurrent
// use. Create one with Open or OpenConfig and release it with Close.
type Cache struct {
	client *goredis.Client
	prefix string
	ttl    time.Duration // 0: no expiry
	log    *slog.Logger
	addr   string

	retryAfter time.Duration
	mu         sync.Mutex
	down       bool      // the last operation failed
	retryAt    time.Time // while down, when to try Redis again
}

// Open returns a Cache on the Redis server at url, whose values live for ttl
// (zero means DefaultTTL), reporting to logger (nil discards). It is
// OpenConfig with the other settings at their defaults.
func Open(ctx context.Context, url string, ttl time.Duration, logger *slog.Logger) (*Cache, error) {
	return OpenConfig(ctx, Config{URL: url, TTL: ttl, Logger: logger})
}

// OpenConfig returns a Cache configured by cfg. It fails only if cfg.URL is
// malformed. It checks the server within ctx; a server that cannot be
// reached is not an error but the start of an outage: it is logged as a
// warning and the Cache reports misses until the server answers.
//
// go-redis writes some diagnostics of its own through a process-wide
// logger; OpenConfig routes them, once per process, to the debug level of
// slog's default logger, so that an outage is not reported on standard
// error on every failed dial.
func OpenConfig(ctx context.Context, cfg Config) (*Cache, error) {
	opts, err := goredis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("redis cache: open: %w", err)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = timeout
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = timeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = timeout
	}
	if opts.PoolTimeout == 0 {
		opts.PoolTimeout = timeout
	}
	// One attempt per call: the cache gives up rather than wait.
	if opts.MaxRetries == 0 {
		opts.MaxRetries = -1
	}
	if opts.DialerRetries == 0 {
		opts.DialerRetries = 1
	}
	// Plain Redis does not know the maintenance notifications of Redis
	// Enterprise; do not ask.
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	quietOnce.Do(func() { goredis.SetLogger(debugLogger{}) })

	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{
		client:     goredis.NewClient(opts),
		prefix:     cfg.Prefix,
		ttl:        cfg.TTL,
		log:        log,
		addr:       opts.Addr,
		retryAfter: retryAfter,
	}
	if c.prefix == "" {
		c.prefix = DefaultPrefix
	}
	switch {
	case c.ttl == 0:
		c.ttl = DefaultTTL
	case c.ttl < 0:
		c.ttl = 0
	}
	err = c.client.Ping(ctx).Err()
	if err != nil && ctx.Err() == nil {
		c.failed("open", err)
	}
	return c, nil
}

// Close closes the connections to Redis.
func (c *Cache) Close() error {
	if err := c.client.Close(); err != nil {
		return fmt.Errorf("redis cache: close: %w", err)
	}
	return nil
}

// GetCache returns the value stored under key, and whether there was one.
// When Redis cannot be asked, it reports a miss. The only error it returns
// is ctx's, when ctx is done.
func (c *Cache) GetCache(ctx context.Context, key string) ([]byte, bool, error) {
	if !c.try() {
		return nil, false, ctx.Err()
	}
	v, err := c.client.Get(ctx, c.prefix+key).Bytes()
	if errors.Is(err, goredis.Nil) {
		c.ok()
		return nil, false, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		c.failed("get", err)
		return nil, false, nil
	}
	c.ok()
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// PutCache stores value under key, replacing any earlier value, to expire
// after the Cache's TTL. When Redis cannot take it, the value is dropped.
// The only error it returns is ctx's, when ctx is done.
func (c *Cache) PutCache(ctx context.Context, key string, value []byte) error {
	if !c.try() {
		return ctx.Err()
	}
	if value == nil {
		value = []byte{}
	}
	if err := c.client.Set(ctx, c.prefix+key, value, c.ttl).Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.failed("put", err)
		return nil
	}
	c.ok()
	return nil
}

// try reports whether to send a command to Redis: always, unless Redis
// failed less than retryAfter ago.
// Ping reports whether Redis answers, for health checks: nil when it does,
// else the error (which names no password).
func (c *Cache) Ping(ctx context.Context) error {
	if err := c.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", c.addr, err)
	}
	return nil
}

func (c *Cache) try() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.down || !time.Now().Before(c.retryAt)
}

// failed records a failed command: the first of an outage is logged as a
// warning, later ones at debug level.
func (c *Cache) failed(op string, err error) {
	c.mu.Lock()
	first := !c.down
	c.down = true
	c.retryAt = time.Now().Add(c.retryAfter)
	c.mu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	c.log.Log(context.Background(), level, "redis cache unavailable; continuing without it",
		"op", op, "addr", c.addr, "error", err)
}

// ok records a command that succeeded, logging the end of an outage.
func (c *Cache) ok() {
	c.mu.Lock()
	recovered := c.down
	c.down = false
	c.mu.Unlock()
	if recovered {
		c.log.Info("redis cache available again", "addr", c.addr)
	}
}

// quietOnce installs debugLogger as go-redis's logger.
var quietOnce sync.Once

// debugLogger passes go-redis's own diagnostics to slog's default logger at
// debug level.
type debugLogger struct{}

// Printf implements go-redis's internal.Logging.
func (debugLogger) Printf(ctx context.Context, format string, v ...any) {
	slog.Default().Log(ctx, slog.LevelDebug, fmt.Sprintf(format, v...), "package", "go-redis")
}
