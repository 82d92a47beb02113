package postgres

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/madspark/madspark/store/postgres/pgtest"
	"github.com/madspark/madspark/store/storetest"
)

// TestEarlierDatabases opens databases that the store wrote before its
// queries were written once for both databases (the store of commit
// 25c9c7f wrote schemas fx_v10 and fx_v5, dumped by pg_dump into
// testdata/schema*.sql; see storetest.CheckEarlier).
func TestEarlierDatabases(t *testing.T) { storetest.CheckEarlier(t, restore) }

// restore runs the dump testdata/name.sql into a new schema, leaving out
// the creation of its own schema and psql's commands, and opens the store
// there.
func restore(t *testing.T, name string) storetest.Store {
	url, schema := pgtest.Schema(t)
	dump, err := os.ReadFile(filepath.Join("testdata", name+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	var sql []string
	for _, line := range strings.Split(string(dump), "\n") {
		if !strings.HasPrefix(line, `\`) && !strings.HasPrefix(line, "CREATE SCHEMA ") {
			sql = append(sql, strings.ReplaceAll(line, "fx_v"+strings.TrimPrefix(name, "schema")+".", schema+"."))
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		_, err = conn.Exec(ctx, strings.Join(sql, "\n"))
		conn.Close(ctx)
	}
	if err != nil {
		t.Fatalf("restore %s: %v", name, err)
	}
	return openURL(t, url)
}
