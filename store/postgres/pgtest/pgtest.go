// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema on the test server, dropped when the test ends. Tests skip, saying
// why, when no server is reachable.
//
// The server is $MADSPARK_TEST_DATABASE_URL, by default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that points at the test server.
const Env = "MADSPARK_TEST_DATABASE_URL"

// DefaultURL is the test server when Env is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// BaseURL returns the test server's URL.
func BaseURL() string {
	if u := os.Getenv(Env); u != "" {
		return u
	}
	return DefaultURL
}

// URL creates an empty schema with a unique name, dropped (with everything
// in it) when tb ends, and returns the test server's URL with search_path
// set to it. It skips tb if the server cannot be reached.
func URL(tb testing.TB) string {
	tb.Helper()
	u, _ := Schema(tb)
	return u
}

// Schema is URL, which it returns with the schema's name.
func Schema(tb testing.TB) (u, schema string) {
	tb.Helper()
	base := BaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Skipf("PostgreSQL not reachable at %s: %v; set %s", redact(base), err, Env)
	}
	defer conn.Close(context.Background())
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "madspark_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return WithSearchPath(tb, base, schema), schema
}

// WithSearchPath returns the connection string base with search_path set
// to schema.
func WithSearchPath(tb testing.TB, base, schema string) string {
	tb.Helper()
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			tb.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return base + " search_path=" + schema
}

// redact hides the password of a URL.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
