// Package cmdline is what commands built with cobra share beyond their
// flags: errors that say what a flag or argument wants (as
// app.InputErrors, exit 2), a help command that refuses unknown names,
// the detection of a mistyped command, and checks of common flags.
package cmdline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/input"
)

// Help is the command "help [COMMAND]": the help of a command, and an
// InputError for a name that is none (cobra's own prints the root's help
// and succeeds).
func Help(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || target == nil {
				return app.Inputf("no command %q; the commands are listed by %s --help", strings.Join(args, " "), root.Name())
			}
			target.SetOut(cmd.OutOrStdout())
			return target.Help()
		},
	}
}

// NearCommand returns the name of root's command that word, one word of
// lower-case letters, is likely a typo of: a letter missing, one too many,
// or two swapped ("bookmark", "sparks", "sprak"); else "". A letter typed
// for another is not counted, as that makes words ("shark", "patch").
func NearCommand(root *cobra.Command, word string) string {
	if strings.ContainsFunc(word, func(r rune) bool { return r < 'a' || r > 'z' }) {
		return ""
	}
	for _, sub := range root.Commands() {
		if sub.IsAvailableCommand() && oneTypo(word, sub.Name()) {
			return sub.Name()
		}
	}
	return ""
}

// oneTypo reports whether a becomes b by inserting or deleting one byte,
// or by swapping two adjacent ones.
func oneTypo(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	switch len(b) - len(a) {
	case 1:
		return a[i:] == b[i+1:]
	case 0:
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	}
	return false
}

// Args turns cobra's argument-count errors into InputErrors that
// show the command's usage line.
func Args(fn cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return app.Inputf("%v; usage: %s", err, cmd.UseLine())
		}
		return nil
	}
}

// CheckInput checks every flag given on cmd's command line and every
// argument in args as input.Text checks text (valid UTF-8, no control
// character but tab and line breaks), so that a command refuses what the
// API refuses, before it opens anything. The error is an InputError that
// names the flag or the argument.
func CheckInput(cmd *cobra.Command, args []string) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if e := input.Text("--"+f.Name, v); e != nil {
				err = app.InputError{Err: e}
				return
			}
		}
	})
	if err != nil {
		return err
	}
	for i, a := range args {
		if err := input.Text(fmt.Sprintf("argument %d (%s)", i+1, input.Show(clipArg(a))), a); err != nil {
			return app.InputError{Err: err}
		}
	}
	return nil
}

// clipArg is the start of an argument, to name it in a message.
func clipArg(a string) string {
	if r := []rune(a); len(r) > 20 {
		return string(r[:20]) + "…"
	}
	return a
}

// CheckFormat checks an --output-format value.
func CheckFormat(format string, allowed ...string) error {
	if !slices.Contains(allowed, format) {
		return app.Inputf("unknown output format %q (want %s)", format, strings.Join(allowed, ", "))
	}
	return nil
}

// FlagError is a flag that cobra could not parse, as an InputError that
// says what the flag wants rather than how Go failed to parse it.
func FlagError(_ *cobra.Command, err error) error {
	if ive, ok := errors.AsType[*pflag.InvalidValueError](err); ok {
		f := ive.GetFlag()
		want := map[string]string{
			"int":      "a whole number",
			"int64":    "a whole number",
			"uint":     "a whole number, 0 or more",
			"uint64":   "a whole number, 0 or more",
			"float64":  "a number",
			"duration": "a duration such as 90s, 10m or 1h30m",
			"bool":     "true or false",
		}[f.Value.Type()]
		if want != "" {
			return app.Inputf("--%s wants %s, got %q", f.Name, want, ive.GetValue())
		}
	}
	return app.InputError{Err: err}
}

// CheckTimeout checks a --timeout value.
func CheckTimeout(d time.Duration) error {
	if d <= 0 {
		return app.Inputf("--timeout must be positive, got %s", d)
	}
	return nil
}

// CheckOutput checks an --output path before any work: empty (standard
// output) or a file whose directory exists. A directory, or a missing
// parent, is an InputError and nothing is created.
func CheckOutput(path string) error {
	if path == "" {
		return nil
	}
	if err := atomicfile.CheckTarget(path); err != nil {
		return app.Inputf("--output: %v", err)
	}
	return nil
}
