package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/store/migration"
	"github.com/madspark/madspark/store/postgres/pgtest"
	"github.com/madspark/madspark/store/storetest"
)

// newSchema creates an empty schema, dropped when t ends, and returns the
// URL of the test database with search_path set to it.
func newSchema(t *testing.T) string { return pgtest.URL(t) }

// openURL opens the store at url, closed when t ends (before its schema is
// dropped).
func openURL(t *testing.T, url string) *DB {
	t.Helper()
	db, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openTest opens a store in a new, empty schema.
func openTest(t *testing.T) *DB {
	t.Helper()
	return openURL(t, newSchema(t))
}

func TestConformance(t *testing.T) {
	newSchema(t) // skip once, not in every subtest
	storetest.Run(t, func(t *testing.T) storetest.Store { return openTest(t) })
}

func TestTablesInSchema(t *testing.T) {
	url := newSchema(t)
	db := openURL(t, url)
	var schema string
	var n int
	if err := db.pool.QueryRow(context.Background(), `SELECT current_schema(), COUNT(*)
FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&schema, &n); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(schema, "madspark_test_") || n != 14 {
		t.Errorf("schema %q has %d tables, want 14 in a madspark_test_ schema", schema, n)
	}
}

func TestConcurrentOpen(t *testing.T) {
	ctx := context.Background()
	url := newSchema(t)
	dbs := storetest.OpenAtOnce(t, 6, func() (*DB, error) { return Open(ctx, url) })
	// And once more, later.
	db := openURL(t, url)

	ms, err := migration.Load(migrationFS, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var count, maxV int
	if err := db.pool.QueryRow(ctx, `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&count, &maxV); err != nil {
		t.Fatal(err)
	}
	if count != len(ms) || maxV != ms[len(ms)-1].Version {
		t.Errorf("schema_migrations has %d rows up to %d, want %d up to %d", count, maxV, len(ms), ms[len(ms)-1].Version)
	}
	// Every handle works on the same tables.
	if err := dbs[0].CreateRun(ctx, &madspark.Run{ID: "x", Pipeline: "p"}); err != nil {
		t.Fatal(err)
	}
	for i, db := range dbs {
		if _, err := db.Run(ctx, "x"); err != nil {
			t.Errorf("handle %d: %v", i, err)
		}
	}
}

func TestConcurrentSaveStepTwoHandles(t *testing.T) {
	ctx := context.Background()
	url := newSchema(t)
	dbs := []*DB{openURL(t, url), openURL(t, url)}
	if err := dbs[0].CreateRun(ctx, &madspark.Run{ID: "r", Pipeline: "p"}); err != nil {
		t.Fatal(err)
	}
	const goroutines, perG = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		db := dbs[g%2]
		wg.Go(func() {
			for j := range perG {
				for _, key := range []string{fmt.Sprintf("g%d-%02d", g, j), "common"} {
					s := &madspark.Step{RunID: "r", Key: key, Status: madspark.StepDone, Output: json.RawMessage(`{}`)}
					if err := db.SaveStep(ctx, s); err != nil {
						errs <- fmt.Errorf("goroutine %d: %w", g, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// seq runs 1..n without gaps or repeats.
	var n, distinct, lo, hi int
	if err := dbs[1].pool.QueryRow(ctx, `SELECT COUNT(*), COUNT(DISTINCT seq), MIN(seq), MAX(seq)
FROM steps WHERE run_id = 'r'`).Scan(&n, &distinct, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if want := goroutines*perG + 1; n != want || distinct != want || lo != 1 || hi != want {
		t.Errorf("steps: %d rows, %d distinct seq from %d to %d; want %d, 1..%d", n, distinct, lo, hi, want, want)
	}
}

func TestJSONKeptVerbatim(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	const doc = "{\"z\": 1,\n \"a\": [\"\\u0000\", \"\\u00e9\"], \"z\": 2}"
	r := &madspark.Run{ID: "r", Pipeline: "p", Params: json.RawMessage(doc), Result: json.RawMessage(doc)}
	if err := db.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveStep(ctx, &madspark.Step{RunID: "r", Key: "k", Output: json.RawMessage(doc)}); err != nil {
		t.Fatal(err)
	}
	if err := db.RememberIdeas(ctx, []madspark.RememberedIdea{{Memory: "m", Name: "n", Data: json.RawMessage(doc)}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Run(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := db.Steps(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	ideas, err := db.RememberedIdeas(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	for what, v := range map[string]json.RawMessage{
		"params": got.Params, "result": got.Result, "output": steps[0].Output, "data": ideas[0].Data,
	} {
		if string(v) != doc {
			t.Errorf("%s = %q, want %q", what, v, doc)
		}
	}
}

func TestTimePrecision(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	at := time.Date(2025, 1, 2, 3, 4, 5, 123456999, time.FixedZone("X", 3600))
	if err := db.CreateRun(ctx, &madspark.Run{ID: "r", Pipeline: "p", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Run(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2025, 1, 2, 2, 4, 5, 123456000, time.UTC)
	if got.CreatedAt != want {
		t.Errorf("created = %v, want %v (truncated, UTC)", got.CreatedAt, want)
	}
	d := &madspark.Run{ID: "d", Pipeline: "p"}
	if err := db.CreateRun(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Run(ctx, "d"); err != nil || got.CreatedAt != d.CreatedAt {
		t.Errorf("default created = %v, %v; want exactly %v", got.CreatedAt, err, d.CreatedAt)
	}
}

func TestErrorsArePrefixed(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.CreateRun(ctx, &madspark.Run{ID: "r", Pipeline: "p"}); err != nil {
		t.Fatal(err)
	}
	err := db.CreateRun(ctx, &madspark.Run{ID: "r", Pipeline: "p"})
	if err == nil || !strings.HasPrefix(err.Error(), `postgres: create run: "r": `) {
		t.Errorf("duplicate: err = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.Run(cctx, "r"); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "postgres: ") {
		t.Errorf("cancelled Run: err = %v", err)
	}
	if err := db.SaveStep(cctx, &madspark.Step{RunID: "r", Key: "k"}); !errors.Is(err, context.Canceled) ||
		!strings.HasPrefix(err.Error(), "postgres: save step: ") {
		t.Errorf("cancelled SaveStep: err = %v", err)
	}
}

// TestOpenErrors needs no server.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"postgres://x:y@127.0.0.1:notaport/db", "mysql://localhost/db", "host=127.0.0.1 port=1 connect_timeout=1 sslmode=disable"} {
		start := time.Now()
		db, err := Open(ctx, u)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if !strings.HasPrefix(err.Error(), "postgres: open: ") {
			t.Errorf("Open(%q): err = %q, want a postgres: open: prefix", u, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Open(%q) took %v", u, d)
		}
	}
	if _, err := Open(ctx, "postgres://u:secret@127.0.0.1:1/db?connect_timeout=1"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open with a password: err = %v", err)
	}
}
