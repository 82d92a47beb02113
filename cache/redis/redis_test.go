package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/store/storetest"
)

// urlEnv names the Redis server the tests use. Every test stores its keys
// under a prefix of its own, which it deletes at the end.
const (
	urlEnv     = "MADSPARK_TEST_REDIS_URL"
	defaultURL = "redis://127.0.0.1:6379/15"
)

// server is the connection to the test server, set up once: if the server is
// not there, every test that needs it skips at once.
var server struct {
	once   sync.Once
	url    string
	client *goredis.Client
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.client != nil {
		_ = server.client.Close()
	}
	os.Exit(code)
}

// testServer returns a client of the test server and its URL, or skips t if
// the server cannot be reached.
func testServer(t *testing.T) (*goredis.Client, string) {
	t.Helper()
	server.once.Do(func() {
		quietOnce.Do(func() { goredis.SetLogger(debugLogger{}) })
		server.url = os.Getenv(urlEnv)
		if server.url == "" {
			server.url = defaultURL
		}
		opts, err := goredis.ParseURL(server.url)
		if err != nil {
			server.err = err
			return
		}
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = time.Second, time.Second, time.Second
		opts.MaxRetries, opts.DialerRetries = -1, 1
		client := goredis.NewClient(opts)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := client.Ping(ctx).Err(); err != nil {
			_ = client.Close()
			server.err = err
			return
		}
		server.client = client
	})
	if server.err != nil {
		t.Skipf("Redis not reachable at %s: %v; set %s", redact(server.url), server.err, urlEnv)
	}
	return server.client, server.url
}

// redact hides the password of a URL.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// testPrefix returns a key prefix of t's own; its keys are deleted when t
// ends.
func testPrefix(t *testing.T, client *goredis.Client) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "madspark:test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("scan %s*: %v", prefix, err)
		}
		if len(keys) > 0 {
			if err := client.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("delete %s*: %v", prefix, err)
			}
		}
	})
	return prefix
}

// logRecords is a slog.Handler that keeps what it is given.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

// count returns how many records of level were logged.
func (h *logRecords) count(level slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level == level {
			n++
		}
	}
	return n
}

// open opens a Cache configured by cfg, closed when t ends.
func open(t *testing.T, cfg Config) *Cache {
	t.Helper()
	c, err := OpenConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("OpenConfig: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// openTest opens a Cache on the test server under a prefix of t's own.
func openTest(t *testing.T, cfg Config) *Cache {
	t.Helper()
	client, u := testServer(t)
	cfg.URL = u
	if cfg.Prefix == "" {
		cfg.Prefix = testPrefix(t, client)
	}
	return open(t, cfg)
}

func TestConformance(t *testing.T) {
	testServer(t) // skip once, not in every subtest
	storetest.RunCacheStore(t, func(t *testing.T) madspark.CacheStore { return openTest(t, Config{}) })
}

func TestPrefixAndTTL(t *testing.T) {
	ctx := context.Background()
	client, _ := testServer(t)
	for _, tc := range []struct {
		ttl      time.Duration
		min, max time.Duration
	}{
		{0, DefaultTTL - time.Minute, DefaultTTL},
		{time.Hour, time.Hour - time.Minute, time.Hour},
		{1500 * time.Millisecond, time.Second, 1500 * time.Millisecond},
		{-1, -1, -1}, // no expiry
	} {
		prefix := testPrefix(t, client)
		c := openTest(t, Config{TTL: tc.ttl, Prefix: prefix})
		if err := c.PutCache(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		v, err := client.Get(ctx, prefix+"k").Result()
		if err != nil || v != "v" {
			t.Errorf("ttl %v: GET %sk = %q, %v", tc.ttl, prefix, v, err)
		}
		ttl, err := client.PTTL(ctx, prefix+"k").Result()
		if err != nil || ttl < tc.min || ttl > tc.max {
			t.Errorf("ttl %v: PTTL = %v, %v; want %v..%v", tc.ttl, ttl, err, tc.min, tc.max)
		}
		// Overwriting renews the TTL.
		if tc.ttl == 1500*time.Millisecond {
			time.Sleep(600 * time.Millisecond)
			if err := c.PutCache(ctx, "k", []byte("w")); err != nil {
				t.Fatal(err)
			}
			if ttl, _ := client.PTTL(ctx, prefix+"k").Result(); ttl < time.Second {
				t.Errorf("PTTL after overwrite = %v, want it renewed", ttl)
			}
		}
	}

	// The default prefix.
	c := openTest(t, Config{Prefix: DefaultPrefix})
	key := "madspark-redis-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	t.Cleanup(func() { client.Del(context.Background(), DefaultPrefix+key) })
	if err := c.PutCache(ctx, key, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Exists(ctx, "madspark:cache:"+key).Result(); err != nil || n != 1 {
		t.Errorf("EXISTS madspark:cache:%s = %d, %v", key, n, err)
	}
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	c := openTest(t, Config{TTL: 100 * time.Millisecond})
	if err := c.PutCache(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if v, ok, err := c.GetCache(ctx, "k"); err != nil || ok || v != nil {
		t.Errorf("expired entry = %q, %v, %v", v, ok, err)
	}
}

func TestSharedBetweenInstances(t *testing.T) {
	ctx := context.Background()
	client, _ := testServer(t)
	prefix := testPrefix(t, client)
	a := openTest(t, Config{Prefix: prefix})
	b := openTest(t, Config{Prefix: prefix})
	other := openTest(t, Config{})

	if err := a.PutCache(ctx, "k", []byte("from a")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.GetCache(ctx, "k"); err != nil || !ok || string(v) != "from a" {
		t.Errorf("b: %q, %v, %v", v, ok, err)
	}
	if err := b.PutCache(ctx, "k", []byte("from b")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := a.GetCache(ctx, "k"); err != nil || !ok || string(v) != "from b" {
		t.Errorf("a: %q, %v, %v", v, ok, err)
	}
	// Another prefix is another cache.
	if v, ok, err := other.GetCache(ctx, "k"); err != nil || ok {
		t.Errorf("other prefix: %q, %v, %v", v, ok, err)
	}
}

func TestContextDone(t *testing.T) {
	logs := &logRecords{}
	c := openTest(t, Config{Logger: slog.New(logs)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, err := c.GetCache(ctx, "k"); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("GetCache with a done context: %v, %v", ok, err)
	}
	if err := c.PutCache(ctx, "k", []byte("v")); !errors.Is(err, context.Canceled) {
		t.Errorf("PutCache with a done context: %v", err)
	}
	// The caller gave up; Redis did not fail.
	if n := logs.count(slog.LevelWarn); n != 0 {
		t.Errorf("%d warnings logged", n)
	}
	if err := c.PutCache(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.GetCache(context.Background(), "k"); !ok || err != nil {
		t.Errorf("GetCache after: %v, %v", ok, err)
	}
}

// TestUnreachable needs no server.
func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	logs := &logRecords{}
	start := time.Now()
	c := open(t, Config{URL: "redis://127.0.0.1:1/0", Logger: slog.New(logs)})
	for i := range 200 {
		if i == 100 { // from now on, every call tries Redis again
			c.mu.Lock()
			c.retryAfter, c.retryAt = 0, time.Time{}
			c.mu.Unlock()
		}
		if v, ok, err := c.GetCache(ctx, "k"); v != nil || ok || err != nil {
			t.Fatalf("GetCache = %q, %v, %v; want a miss", v, ok, err)
		}
		if err := c.PutCache(ctx, "k", []byte("v")); err != nil {
			t.Fatalf("PutCache = %v", err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("400 calls took %v", d)
	}
	if n := logs.count(slog.LevelWarn); n != 1 {
		t.Errorf("%d warnings logged, want 1", n)
	}
	if n := logs.count(slog.LevelInfo); n != 0 {
		t.Errorf("%d info lines logged, want 0", n)
	}
	if n := logs.count(slog.LevelDebug); n < 100 {
		t.Errorf("%d debug lines logged, want one per failure after the first", n)
	}
}

// TestOpenErrors needs no server.
func TestOpenErrors(t *testing.T) {
	for _, u := range []string{"", "http://127.0.0.1:6379", "redis://127.0.0.1:6379/notadb", "redis://[::1", "redis://127.0.0.1:6379/0?dial_timeout=soon"} {
		if c, err := Open(context.Background(), u, 0, nil); err == nil {
			_ = c.Close()
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}

// proxy forwards TCP connections to another address, and can be switched
// off, dropping its connections.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, addr, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			p.wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
	t.Cleanup(p.stop)
	return p
}

// stop closes the listener and every connection.
func (p *proxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

func TestOutageAndRecovery(t *testing.T) {
	ctx := context.Background()
	client, u := testServer(t)
	prefix := testPrefix(t, client)

	// An address where nothing listens, for now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	target := pu.Host
	pu.Host = addr

	logs := &logRecords{}
	c := open(t, Config{URL: pu.String(), Prefix: prefix, Logger: slog.New(logs)})
	c.mu.Lock()
	c.retryAfter, c.retryAt = 10*time.Millisecond, time.Time{}
	c.mu.Unlock()
	for range 20 {
		if _, ok, err := c.GetCache(ctx, "k"); ok || err != nil {
			t.Fatalf("GetCache while down = %v, %v", ok, err)
		}
		if err := c.PutCache(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if n := logs.count(slog.LevelWarn); n != 1 {
		t.Fatalf("down at start: %d warnings, want 1", n)
	}

	// Redis comes up.
	p := startProxy(t, addr, target)
	// A hit may take a moment (the retry interval, and go-redis may
	// back off dialling).
	hit := func() bool {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if err := c.PutCache(ctx, "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := c.GetCache(ctx, "k"); err != nil {
				t.Fatal(err)
			} else if ok && string(v) == "v" {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	}
	if !hit() {
		t.Fatal("no hit after Redis came up")
	}
	for range 20 {
		if !hit() {
			t.Fatal("miss after Redis came up")
		}
	}
	if n := logs.count(slog.LevelInfo); n != 1 {
		t.Errorf("after recovery: %d info lines, want 1", n)
	}
	if n := logs.count(slog.LevelWarn); n != 1 {
		t.Errorf("after recovery: %d warnings, want still 1", n)
	}

	// Redis goes down again: a new outage, a new warning.
	p.stop()
	for range 20 {
		if _, _, err := c.GetCache(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if err := c.PutCache(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if n := logs.count(slog.LevelWarn); n != 2 {
		t.Errorf("second outage: %d warnings in all, want 2", n)
	}
	if n := logs.count(slog.LevelInfo); n != 1 {
		t.Errorf("second outage: %d info lines in all, want 1", n)
	}
}

// TestPing: a server that answers is healthy, one that does not is not,
// and the error does not give the password away.
func TestPing(t *testing.T) {
	ctx := context.Background()
	down := open(t, Config{URL: "redis://user:s3cret@127.0.0.1:1/0"})
	err := down.Ping(ctx)
	if err == nil {
		t.Fatal("Ping of an unreachable server succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Ping error = %q, want the address and no password", err)
	}
	if err := openTest(t, Config{}).Ping(ctx); err != nil {
		t.Errorf("Ping of the test server: %v", err)
	}
}
