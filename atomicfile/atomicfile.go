// Package atomicfile writes files whole or not at all. The data goes to a
// temporary file beside the target, is synced to disk and renamed over the
// target, so that a reader, a crash or Ctrl-C sees the old file or the new
// one, never a part of either (github.com/google/renameio).
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// Write writes data to path atomically, creating path's directory. The
// temporary file is made in that directory, which is always on the same
// file system as path, so no probe for another place is needed. The error
// names path.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(dir)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v to path as indented JSON ending with a newline, as
// Write does.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return Write(path, append(b, '\n'))
}

// CheckTarget reports whether Write could create or replace path without
// creating a directory: path must not be a directory, and its parent
// must be an existing directory. Commands check their output paths with
// it before doing any work, so that a bad path costs nothing.
func CheckTarget(path string) error {
	if path == "" {
		return fmt.Errorf("empty path")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; want a file path", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}
