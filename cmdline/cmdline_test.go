package cmdline

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
)

// TestSuggest: a name within two edits (one for short names), or begun
// by the word, is suggested; other words are not.
func TestSuggest(t *testing.T) {
	root := &cobra.Command{Use: "madspark"}
	for _, name := range []string{"spark", "batch", "bookmarks", "help", "serve", "inspect", "run", "runs"} {
		root.AddCommand(&cobra.Command{Use: name, Run: func(*cobra.Command, []string) {}})
	}
	for word, want := range map[string]string{
		"bookmark": "bookmarks", "sparks": "spark", "sprak": "spark", "btach": "batch", "hlep": "help",
		"serv": "serve", "insp": "inspect", "Spark": "spark", "shark": "spark", "patch": "batch", "rn": "run runs",
		"urban farming": "", "zebra": "", "go": "", "x": "",
	} {
		if got := strings.Join(Suggest(root, word), " "); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestGroupsRefuseUnknownCommands: a group of commands given no command,
// or one it does not have, is an InputError naming the word and the
// likely ones; a known one runs.
func TestGroupsRefuseUnknownCommands(t *testing.T) {
	ran := ""
	root := &cobra.Command{Use: "madspark", SilenceErrors: true, SilenceUsage: true}
	runs := &cobra.Command{Use: "runs"}
	for _, name := range []string{"list", "show"} {
		runs.AddCommand(&cobra.Command{Use: name, RunE: func(cmd *cobra.Command, _ []string) error { ran = cmd.Name(); return nil }})
	}
	root.AddCommand(runs)
	Guard(root)
	for args, want := range map[string]string{
		"runs lst":  `runs has no command "lst"; did you mean madspark runs list?`,
		"runs zzz":  `runs has no command "zzz"; madspark runs --help lists its commands`,
		"runs":      "runs needs a command: list, show (madspark runs --help says what each does)",
		"runs list": "",
	} {
		ran = ""
		root.SetArgs(strings.Fields(args))
		err := root.Execute()
		if want == "" {
			if err != nil || ran != "list" {
				t.Errorf("%s: %v, ran %q", args, err, ran)
			}
			continue
		}
		if _, ok := errors.AsType[app.InputError](err); !ok || err.Error() != want || ran != "" {
			t.Errorf("%s: %v (ran %q), want %q", args, err, ran, want)
		}
	}
}

// TestArgsSayWhatIsWrong: a missing argument is named from the usage
// line, extra ones are shown; cobra's own wording never.
func TestArgsSayWhatIsWrong(t *testing.T) {
	for _, tt := range []struct {
		use  string
		fn   cobra.PositionalArgs
		args []string
		want string
	}{
		{"chaos PROMPT", cobra.ExactArgs(1), nil, "chaos needs PROMPT; usage: madspark chaos PROMPT"},
		{"chaos PROMPT", cobra.ExactArgs(1), []string{"a", "b"}, `chaos takes 1 argument, got 2 ("b" too many): quote a value of several words; usage: madspark chaos PROMPT`},
		{"list", cobra.NoArgs, []string{"x"}, `list takes no argument, got "x"; usage: madspark list`},
		{"assess [IDEA]", cobra.MaximumNArgs(1), []string{"a", "b", "c"}, `assess takes 1 argument, got 3 ("b" "c" too many): quote a value of several words; usage: madspark assess [IDEA]`},
		{"remove ID…", cobra.MinimumNArgs(1), nil, "remove needs ID; usage: madspark remove ID…"},
	} {
		root := &cobra.Command{Use: "madspark"}
		cmd := &cobra.Command{Use: tt.use, Args: Args(tt.fn), Run: func(*cobra.Command, []string) {}}
		root.AddCommand(cmd)
		err := cmd.Args(cmd, tt.args)
		if _, ok := errors.AsType[app.InputError](err); !ok || err.Error() != tt.want {
			t.Errorf("%s %q: %v\nwant %s", tt.use, tt.args, err, tt.want)
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
