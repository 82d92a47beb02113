package rootfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/madspark/madspark/rootfs"
)

func TestOpenInside(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "pipelines")
	secret := filepath.Join(top, "secret.env")
	for _, f := range []struct{ name, text string }{{secret, "KEY=s3cret"}, {filepath.Join(dir, "shared", "a.md"), "inside"}} {
		if err := os.MkdirAll(filepath.Dir(f.name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.name, []byte(f.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"abs.md":       secret,
		"rel.md":       "../secret.env",
		"shared/up.md": "../../secret.env",
		"inner.md":     "shared/a.md",
		"nowhere.md":   "/no/such/file",
		"dirlink":      top,
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	fsys := rootfs.FS(dir)
	if b, err := fs.ReadFile(fsys, "inner.md"); err != nil || string(b) != "inside" {
		t.Errorf("a link inside the directory: %q, %v", b, err)
	}
	for _, name := range []string{"abs.md", "rel.md", "shared/up.md", "nowhere.md", "dirlink/secret.env"} {
		b, err := fs.ReadFile(fsys, name)
		if !errors.Is(err, rootfs.ErrOutside) || len(b) > 0 {
			t.Errorf("%s: %q, %v; want ErrOutside", name, b, err)
		}
	}
	if _, err := fs.ReadFile(fsys, "missing.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := fsys.Open("../secret.env"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("..: %v", err)
	}
	clean := t.TempDir()
	if err := os.MkdirAll(filepath.Join(clean, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clean, "sub", "a.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(rootfs.FS(clean), "sub/a.md"); err != nil {
		t.Error(err)
	}
}
