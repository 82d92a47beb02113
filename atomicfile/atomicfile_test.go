package atomicfile

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "f.txt")
	if err := Write(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "two" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if err := WriteJSON(filepath.Join(dir, "a", "v.json"), map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a", "v.json")); string(b) != "{\n  \"n\": 1\n}\n" {
		t.Fatalf("json %q", b)
	}
	// Only the files written are there: no temporary file is left.
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, d.Name())
		}
		return nil
	})
	if strings.Join(names, ",") != "f.txt,v.json" {
		t.Fatalf("files %v", names)
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file stands where the directory should be.
	bad := filepath.Join(file, "x.txt")
	if err := Write(bad, []byte("x")); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Write under a file: %v", err)
	}
	if err := WriteJSON(filepath.Join(dir, "v.json"), math.NaN()); err == nil || !strings.Contains(err.Error(), "v.json") {
		t.Errorf("WriteJSON of NaN: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "v.json")); !os.IsNotExist(err) {
		t.Errorf("a file was written for a value that does not encode: %v", err)
	}
}

func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	if err := CheckTarget(filepath.Join(dir, "out.json")); err != nil {
		t.Errorf("a new file in an existing directory: %v", err)
	}
	if err := CheckTarget(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	missing := filepath.Join(dir, "nope", "out.json")
	if err := CheckTarget(missing); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing parent: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Errorf("the missing parent was created: %v", err)
	}
}
