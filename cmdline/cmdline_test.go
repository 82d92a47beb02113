package cmdline

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
)

// TestNearCommand: a letter missing, one too many or two swapped name the
// command; a letter typed for another, or another word, does not.
func TestNearCommand(t *testing.T) {
	root := &cobra.Command{Use: "madspark"}
	for _, name := range []string{"spark", "batch", "bookmarks"} {
		root.AddCommand(&cobra.Command{Use: name, Run: func(*cobra.Command, []string) {}})
	}
	for word, want := range map[string]string{
		"bookmark": "bookmarks", "sparks": "spark", "sprak": "spark", "btach": "batch",
		"shark": "", "patch": "", "spark": "", "Spark": "", "urban farming": "",
	} {
		if got := NearCommand(root, word); got != want {
			t.Errorf("NearCommand(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestChecksAreInputErrors: every check refuses bad input with an
// InputError (exit 2) and accepts good input.
func TestChecksAreInputErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "out.json")
	bad := map[string]error{
		"format":         CheckFormat("yaml", "text", "json"),
		"timeout":        CheckTimeout(0),
		"output dir":     CheckOutput(dir),
		"missing parent": CheckOutput(filepath.Join(dir, "no", "out.json")),
	}
	for what, err := range bad {
		if _, ok := errors.AsType[app.InputError](err); !ok {
			t.Errorf("%s: %v, want an InputError", what, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a checked output path created its parent: %v", err)
	}
	for what, err := range map[string]error{
		"format": CheckFormat("json", "text", "json"), "timeout": CheckTimeout(time.Second),
		"stdout": CheckOutput(""), "file": CheckOutput(file),
	} {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// TestFlagErrorSaysWhatTheFlagWants: a value cobra cannot parse is an
// InputError naming the flag and the kind of value it wants.
func TestFlagErrorSaysWhatTheFlagWants(t *testing.T) {
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.Flags().Duration("timeout", time.Minute, "")
	cmd.SetFlagErrorFunc(FlagError)
	cmd.SetArgs([]string{"--timeout", "soon"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if _, ok := errors.AsType[app.InputError](err); !ok || err.Error() != `--timeout wants a duration such as 90s, 10m or 1h30m, got "soon"` {
		t.Fatalf("%v", err)
	}
}
