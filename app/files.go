package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/madspark/madspark/atomicfile"
)

// OutputsDir is the one place where commands write their files unless
// told another: MADSPARK_OUTPUT_DIR, by default "outputs" in the working
// directory. Chaos and proposal runs get a directory of their own in it,
// assess its analyses/, logs/ and reports/ under assess/, and a PDF
// export its file.
func OutputsDir(getenv func(string) string) string {
	if d := strings.TrimSpace(getenv("MADSPARK_OUTPUT_DIR")); d != "" {
		return d
	}
	return "outputs"
}

// AssessDir is where assess writes unless told another directory:
// assess/ under the outputs directory, where its synthesis finds every
// judged analysis so far.
func AssessDir(getenv func(string) string) string {
	return filepath.Join(OutputsDir(getenv), "assess")
}

// MakeOutputDir creates dir, or, when it is empty, run_YYYYMMDD_HHMMSS
// under the outputs directory (with a suffix if a run in the same second
// took that name), and returns it.
func MakeOutputDir(getenv func(string) string, dir string) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("output directory: %w", err)
		}
		return dir, nil
	}
	root := OutputsDir(getenv)
	base := filepath.Join(root, "run_"+time.Now().Format("20060102_150405"))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("output directory: %w", err)
	}
	for i := 1; ; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s_%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("output directory: %w", err)
		}
	}
}

// writeFiles writes files (paths with slashes) under dir, each atomically.
func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		if err := atomicfile.Write(filepath.Join(dir, filepath.FromSlash(name)), data); err != nil {
			return err
		}
	}
	return nil
}
