package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

func randomName() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// postgresURL returns a URL to a fresh schema on the test server, or skips.
func postgresURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("MADSPARK_TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Skipf("PostgreSQL not reachable at %s: %v; set MADSPARK_TEST_DATABASE_URL", u.Host, err)
	}
	defer conn.Close(context.Background())
	schema := "madspark_cli_" + randomName()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestDatabaseURLSwitchesToPostgres(t *testing.T) {
	env := map[string]string{"MADSPARK_MODE": "mock", "DATABASE_URL": postgresURL(t), "MADSPARK_DB": filepath.Join(t.TempDir(), "unused.db")}
	rep := decode(t, invoke(t, env, "urban farming", "--output-format", "json"))
	list := invoke(t, env, "runs", "list", "--output-format", "json")
	if !strings.Contains(list.stdout, rep.RunID) {
		t.Fatalf("run not in PostgreSQL: %s", list.stdout)
	}
	if _, err := os.Stat(env["MADSPARK_DB"]); err == nil {
		t.Fatal("the SQLite file was used although DATABASE_URL is set")
	}
	again := decode(t, invoke(t, env, "urban farming", "--output-format", "json"))
	if again.Usage.CachedCalls != 6 {
		t.Fatalf("cache in PostgreSQL: %+v", again.Usage)
	}
}

func TestRedisSharesCacheBetweenProcesses(t *testing.T) {
	addr := os.Getenv("MADSPARK_TEST_REDIS_URL")
	if addr == "" {
		addr = "redis://127.0.0.1:6379/15"
	}
	opts, err := goredis.ParseURL(addr)
	if err != nil {
		t.Fatal(err)
	}
	rc := goredis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Skipf("Redis not reachable at %s: %v; set MADSPARK_TEST_REDIS_URL", opts.Addr, err)
	}
	rc.Close()
	topic := "shared cache " + randomName()
	// Two processes: separate SQLite files, one Redis.
	a := map[string]string{"MADSPARK_MODE": "mock", "REDIS_URL": addr, "MADSPARK_DB": filepath.Join(t.TempDir(), "a.db")}
	b := map[string]string{"MADSPARK_MODE": "mock", "REDIS_URL": addr, "MADSPARK_DB": filepath.Join(t.TempDir(), "b.db")}
	first := decode(t, invoke(t, a, topic, "--output-format", "json"))
	second := decode(t, invoke(t, b, topic, "--output-format", "json"))
	if first.Usage.LLMCalls != 6 || second.Usage.LLMCalls != 0 || second.Usage.CachedCalls != 6 {
		t.Fatalf("first %+v, second %+v", first.Usage, second.Usage)
	}
	// Redis down: the run still works, without cache, with one warning.
	down := map[string]string{"MADSPARK_MODE": "mock", "REDIS_URL": "redis://127.0.0.1:1/0", "MADSPARK_DB": filepath.Join(t.TempDir(), "c.db")}
	r := invoke(t, down, topic, "--output-format", "json")
	rep := decode(t, r)
	if rep.Usage.LLMCalls != 6 {
		t.Fatalf("with Redis down: %+v", rep.Usage)
	}
}
