package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/store/storetest"
)

// TestConformance runs the store conformance suite against a fresh database
// file per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "madspark.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() {
			if err := db.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return db
	})
}
