// Package rootfs reads a directory as an fs.FS whose files are opened
// inside it: a name, or a symbolic link on the way to it, that leads out of
// the directory is refused, as os.Root refuses it, where os.DirFS would
// follow it. A pipeline folder cloned from a repository can hold a link to
// ~/.ssh or .env; read through rootfs, it is an error rather than a prompt.
package rootfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// FS is the directory it names, as an fs.FS. Each Open opens the directory
// as an os.Root and the file in it (os.OpenInRoot), so an FS holds no file
// descriptor between calls and needs no closing.
type FS string

// ErrOutside is wrapped by the error for a name that leads out of the
// directory.
var ErrOutside = errors.New("leads out of its directory (through a symbolic link)")

// Open opens name, a slash-separated path inside the directory
// (fs.ValidPath). A name that resolves outside the directory, or a link
// that points nowhere, is refused with an error wrapping ErrOutside.
func (d FS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := os.OpenInRoot(string(d), name)
	if err != nil {
		pe, ok := errors.AsType[*fs.PathError](err)
		if !ok {
			return nil, err
		}
		// os.Root's own refusal is not an errno; the system's errors
		// (not found, permission) are.
		if _, errno := errors.AsType[syscall.Errno](pe.Err); !errno {
			return nil, &fs.PathError{Op: "open", Path: name, Err: ErrOutside}
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: pe.Err}
	}
	return f, nil
}
