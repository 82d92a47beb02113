package sqlite

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/madspark/madspark/store/storetest"
)

// TestEarlierDatabases opens database files that the store wrote before
// its queries were written once for both databases (the store of commit
// 25c9c7f wrote testdata/schema*.db.gz; see storetest.CheckEarlier).
func TestEarlierDatabases(t *testing.T) {
	storetest.CheckEarlier(t, func(t *testing.T, name string) storetest.Store {
		path := filepath.Join(t.TempDir(), "madspark.db")
		if err := gunzip("testdata/"+name+".db.gz", path); err != nil {
			t.Fatal(err)
		}
		return openTest(t, path)
	})
}

// gunzip writes the gzip file src, uncompressed, to dst.
func gunzip(src, dst string) error {
	gz, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	z, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return err
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}
