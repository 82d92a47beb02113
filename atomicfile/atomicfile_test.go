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

// TestCheckTargetAsResolved: a path is checked as the system will resolve
// it, by making the temporary file where the output goes: a directory
// reached through a missing one, a directory where no file can be made
// and a file that is not a regular one are refused, and the check leaves
// nothing behind.
func TestCheckTargetAsResolved(t *testing.T) {
	dir := t.TempDir()
	through := filepath.Join(dir, "nosuchdir") + "/../x.json"
	if err := CheckTarget(through); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("%s: %v", through, err)
	}
	if err := Write(filepath.Join(dir, "sub")+"/../y.json", []byte("y")); err != nil {
		t.Errorf("Write through a directory it makes: %v", err)
	}
	if _, err := os.Stat("/proc/version"); err == nil {
		if err := CheckTarget("/proc/version"); err == nil || !strings.Contains(err.Error(), "no file can be created in /proc") {
			t.Errorf("/proc/version: %v", err)
		}
	}
	if _, err := os.Stat("/dev/null"); err == nil {
		if err := CheckTarget("/dev/null"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("/dev/null: %v", err)
		}
	}
	if err := CheckTarget(filepath.Join(dir, "z.json")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "sub,y.json" {
		t.Errorf("left in the directory: %v", names)
	}
	if rel := Dir("x.json"); rel != "." {
		t.Errorf("Dir(x.json) = %q", rel)
	}
}
