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
	"strings"

	"github.com/google/renameio/v2"
)

// Write writes data to path atomically, creating path's directory. The
// temporary file is made in that directory, which is always on the same
// file system as path, so no probe for another place is needed. The
// directory is path's as the operating system resolves it (Dir), so that
// CheckTarget checked the very place. The error names path.
func Write(path string, data []byte) error {
	dir := Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(dir)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Dir is the directory of path as the operating system resolves it:
// everything before its last separator, as written. Unlike filepath.Dir it
// does not clean "a/missing/.." into "a", which the system reaches only
// through a/missing.
func Dir(path string) string {
	i := strings.LastIndex(path, string(filepath.Separator))
	switch {
	case i < 0:
		return "."
	case i == 0:
		return string(filepath.Separator)
	}
	return path[:i]
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
// creating a directory: path must not be a directory nor a device, pipe or
// socket, and its directory (Dir) must exist and take a new file, which
// CheckTarget finds out by creating there, and removing, the temporary
// file Write would make; so a path the system resolves otherwise than it
// reads ("out/missing/../x.json"), or a directory where no file can be
// made (/proc), is refused. Commands check their output paths with it
// before doing any work, so that a bad path costs nothing.
func CheckTarget(path string) error {
	if path == "" {
		return fmt.Errorf("empty path")
	}
	if fi, err := os.Stat(path); err == nil {
		switch {
		case fi.IsDir():
			return fmt.Errorf("%s is a directory; want a file path", path)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (a device, pipe or socket); want a file path", path)
		}
	}
	dir := Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	tmp, err := renameio.TempFile(dir, path)
	if err != nil {
		cause := err
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			cause = pe.Err
		}
		return fmt.Errorf("cannot write %s: no file can be created in %s (%v)", path, dir, cause)
	}
	if err := tmp.Cleanup(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
