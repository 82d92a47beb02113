// Package cmdline is what commands built with cobra share beyond their
// flags: errors that say what a flag or argument wants (as
// app.InputErrors, exit 2), a help command that refuses unknown names,
// unknown commands refused with the ones likely meant, and checks of
// common flags.
package cmdline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

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

// Suggest returns the names of cmd's subcommands that word is likely a
// slip of: a name within two edits of it (a letter missing, one too many,
// one typed for another, two swapped; one edit for names of up to three
// letters), or that it begins ("serv", "insp"). Case is ignored.
func Suggest(cmd *cobra.Command, word string) []string {
	word = strings.ToLower(word)
	var out []string
	for _, sub := range cmd.Commands() {
		if sub.Hidden {
			continue
		}
		name := sub.Name()
		if distance(word, name) <= max(1, min(2, len(name)-2)) || len(word) >= 3 && strings.HasPrefix(name, word) {
			out = append(out, name)
		}
	}
	return out
}

// distance is the optimal string alignment distance between a and b:
// the insertions, deletions, substitutions and swaps of two adjacent
// letters that turn one into the other.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// UnknownCommand is the InputError for word, given to cmd where one of
// its subcommands was expected: it names the word and the commands it is
// likely a slip of, and ends with tip, if any ("a spark run on a topic
// of one word: …").
func UnknownCommand(cmd *cobra.Command, word, tip string) error {
	msg := fmt.Sprintf("unknown command %q", input.Show(clipArg(word)))
	if cmd.HasParent() {
		msg = fmt.Sprintf("%s has no command %q", name(cmd), input.Show(clipArg(word)))
	}
	if s := Suggest(cmd, word); len(s) > 0 {
		for i, name := range s {
			s[i] = cmd.CommandPath() + " " + name
		}
		msg += "; did you mean " + orList(s) + "?"
	} else {
		msg += "; " + cmd.CommandPath() + " --help lists its commands"
	}
	if tip != "" {
		msg += " (" + tip + ")"
	}
	return app.InputError{Err: errors.New(msg)}
}

// name is cmd's path without the program's name ("runs list"), as a
// message that starts with the program's name says it.
func name(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// Group makes cmd, a command of subcommands only, refuse anything else
// with an InputError (exit 2): no subcommand, or a word that is none of
// them, named with the ones it is likely a slip of. Without it cobra
// prints cmd's help and succeeds.
func Group(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			return app.Inputf("%s needs a command: %s (%s --help says what each does)", name(cmd), strings.Join(names, ", "), cmd.CommandPath())
		}
		return UnknownCommand(cmd, args[0], "")
	}
}

// Guard walks root's commands and makes each one that has subcommands
// and no work of its own a Group.
func Guard(root *cobra.Command) {
	for _, sub := range root.Commands() {
		if sub.HasSubCommands() {
			if !sub.Runnable() {
				Group(sub)
			}
			Guard(sub)
		}
	}
}

// NotCommand refuses arg, the first argument of cmd, when cmd has
// subcommands and arg is one word that is likely a slip of one of their
// names ("synthesise" for synthesize), unless deliberate says it is
// meant as given (a file that exists). It returns nil otherwise.
func NotCommand(cmd *cobra.Command, arg string, deliberate bool) error {
	if deliberate || strings.ContainsFunc(strings.TrimSpace(arg), unicode.IsSpace) || len(Suggest(cmd, arg)) == 0 {
		return nil
	}
	return UnknownCommand(cmd, arg, "")
}

// Args checks a command's arguments with fn (one of cobra's counts) and
// says what is wrong in words, with the command's usage line: which
// argument is missing, or which ones are too many.
func Args(fn cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if fn(cmd, args) == nil {
			return nil
		}
		fits := -1 // the most arguments, fewer than given, that fn takes
		for k := len(args) - 1; k >= 0; k-- {
			if fn(cmd, args[:k]) == nil {
				fits = k
				break
			}
		}
		path, usage := name(cmd), cmd.UseLine()
		if fits < 0 {
			var missing []string
			for i, n := range placeholders(cmd.Use) {
				if i >= len(args) && !strings.HasPrefix(n, "[") {
					missing = append(missing, n)
				}
			}
			if len(missing) == 0 {
				return app.Inputf("%s needs more than %s; usage: %s", path, count(len(args), "argument"), usage)
			}
			return app.Inputf("%s needs %s; usage: %s", path, strings.Join(missing, " and "), usage)
		}
		extra := make([]string, len(args)-fits)
		for i, a := range args[fits:] {
			extra[i] = fmt.Sprintf("%q", input.Show(clipArg(a)))
		}
		if fits == 0 {
			return app.Inputf("%s takes no argument, got %s; usage: %s", path, strings.Join(extra, " "), usage)
		}
		return app.Inputf("%s takes %s, got %d (%s too many): quote a value of several words; usage: %s",
			path, count(fits, "argument"), len(args), strings.Join(extra, " "), usage)
	}
}

// placeholders are the arguments of a Use line ("chaos PROMPT" is
// PROMPT, "assess [IDEA]" [IDEA]), without its flags.
func placeholders(use string) []string {
	var out []string
	for _, f := range strings.Fields(use)[1:] {
		name := strings.Trim(f, "[]().…")
		if name == "" || strings.HasPrefix(name, "-") || strings.ToUpper(name) != name || strings.Contains(name, "|") {
			continue
		}
		if strings.HasPrefix(f, "[") {
			name = "[" + name + "]"
		}
		out = append(out, name)
	}
	return out
}

// count is "1 argument", "2 arguments".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
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

// NotHelp refuses the word help as the first argument of cmd, a command
// below the root, unless it follows "--": "madspark spark help" asks how
// to use spark, never for a run on the topic "help" (nor an idea or a file
// of that name), which is given as "madspark spark -- help".
func NotHelp(cmd *cobra.Command, args []string) error {
	if len(args) == 0 || !cmd.HasParent() || cmd.Name() == "help" || cmd.ArgsLenAtDash() == 0 || !strings.EqualFold(strings.TrimSpace(args[0]), "help") {
		return nil
	}
	return app.Inputf(`"%s" is a command word, not a value: %s --help says how to use %s; as a value it is given after "--" (%s -- %s)`,
		args[0], cmd.CommandPath(), name(cmd), cmd.CommandPath(), args[0])
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
