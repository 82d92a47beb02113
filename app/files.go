package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/madspark/madspark/atomicfile"
)

// MakeOutputDir creates dir, or outputs/run_YYYYMMDD_HHMMSS (with a suffix
// if a run in the same second took that name), and returns it.
func MakeOutputDir(dir string) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("output directory: %w", err)
		}
		return dir, nil
	}
	base := filepath.Join("outputs", "run_"+time.Now().Format("20060102_150405"))
	if err := os.MkdirAll("outputs", 0o755); err != nil {
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
