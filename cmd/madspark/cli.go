package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"unicode"

	"github.com/joho/godotenv"
	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider"
	"github.com/madspark/madspark/termui"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the run failed: provider errors, storage errors
	exitUsage   = 2 // bad input, detected before any LLM call
	// exitInterrupted is a command stopped by Ctrl-C, as a shell reports
	// a process killed by SIGINT; SIGTERM is 143
	// (cmdline.Interruption.ExitCode).
	exitInterrupted = 130
)

// usageError is bad input from the user.
type usageError = app.InputError

func usagef(format string, a ...any) error { return app.Inputf(format, a...) }

// env is the process environment plus a .env file in the working directory;
// variables already set win over the file.
type env func(string) string

// osEnv reads the environment, then ./.env for what it does not set.
func osEnv() env {
	file, _ := godotenv.Read(".env")
	return func(k string) string {
		if v, ok := os.LookupEnv(k); ok {
			return v
		}
		return file[k]
	}
}

// cli holds what every command needs. It is built per invocation, so tests
// run many in one process.
type cli struct {
	env    env
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// display is how runs show their progress on stderr: a live display
	// (live, on a terminal), a line per event (lines), a JSON object per
	// event (json), or nothing (none); see setDisplay.
	display string
	logger  *slog.Logger
	// command is the command being run ("madspark resume"), which the
	// leases of its runs name.
	command string
}

// run is main, testable: it parses args, runs the command and returns the
// exit code. Errors are printed as one line on stderr.
func run(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) int {
	if termui.IsTerminal(stdout) {
		// What is printed holds text from the store and from models: the
		// terminal shows it rather than acts on it.
		esc := termui.Escaping(stdout)
		defer esc.Flush()
		stdout = esc
	}
	c := &cli{env: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	c.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(getenv("LOG_LEVEL")), ReplaceAttr: plainErrors}))
	root := c.rootCmd()
	var progress string
	var quiet bool
	root.PersistentFlags().StringVar(&progress, "progress", "auto", "how runs show their progress on stderr: auto (live on a terminal, else lines), live, lines (one per stage: time, stage, calls, tokens), json (one object per event) or none")
	root.PersistentFlags().BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr (--progress none)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		c.command = cmd.CommandPath()
		if err := cmdline.CheckInput(cmd, args); err != nil {
			return err
		}
		if err := cmdline.NotHelp(cmd, args); err != nil {
			return err
		}
		return c.setDisplay(progress, quiet)
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	msg := input.Show(c.words(err))
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		if _, ok := errors.AsType[*app.InterruptedError](err); !ok {
			msg = "interrupted"
		}
	}
	fmt.Fprintf(stderr, "madspark: %s\n", msg)
	var ue usageError
	switch {
	case ctx.Err() != nil:
		if i, ok := errors.AsType[cmdline.Interruption](context.Cause(ctx)); ok {
			return i.ExitCode()
		}
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// words is err as the one line the user reads (package failure): what
// happened, naming the thing, and what to do, without Go's wording; the
// provider's address is shown, since the user configured it.
func (c *cli) words(err error) string {
	if _, ok := errors.AsType[usageError](err); ok {
		return failure.Plain(oneLine(err.Error()))
	}
	if _, ok := errors.AsType[*app.InterruptedError](err); ok {
		return oneLine(err.Error()) // its own words, and how to resume
	}
	p := c.provider()
	if re, ok := errors.AsType[*app.RunError](err); ok {
		line := failure.Explain(oneLine(re.Err.Error()), p).Sentence()
		said := fmt.Sprintf("run %s (%s/%s) failed: %s Once the cause is fixed, madspark resume %s finishes it", re.RunID, re.Provider, re.Model, line, re.RunID)
		// What an error around the run's says stays ("synthesis: … (the
		// analysis is kept …)").
		return failure.Plain(strings.Replace(oneLine(err.Error()), oneLine(re.Error()), said, 1))
	}
	return failure.Words(err, p)
}

// provider is what messages may say of the provider in effect: all of it,
// to the user who configured it.
func (c *cli) provider() failure.Provider {
	info, err := provider.FromEnv(c.env).Choose()
	if err != nil {
		return failure.Provider{}
	}
	return failure.Provider{Name: info.Name, Endpoint: info.BaseURL, Local: info.Local}
}

// plainErrors says the errors in log lines in words (failure.Plain): the
// log goes to the user's terminal.
func plainErrors(_ []string, a slog.Attr) slog.Attr {
	if a.Key == "err" || a.Key == "error" {
		return slog.String(a.Key, failure.Plain(oneLine(a.Value.String())))
	}
	return a
}

func logLevel(s string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "DEBUG":
		return slog.LevelDebug
	case "INFO":
		return slog.LevelInfo
	case "ERROR":
		return slog.LevelError
	}
	return slog.LevelWarn
}

func (c *cli) rootCmd() *cobra.Command {
	sf := &sparkFlags{}
	root := &cobra.Command{
		Use:   "madspark [TOPIC [CONTEXT]]",
		Short: "Multi-agent LLM pipelines: ideas generated, critiqued, argued over and improved",
		Long: `madspark runs multi-agent LLM pipelines.

With a topic of several words (quoted) and an optional context it runs the
spark pipeline, exactly as "madspark spark TOPIC [CONTEXT]" does. A single
word is taken for a command, and refused when it is none: a topic of one
word is given as "madspark spark WORD" or "madspark -- WORD".`,
		Args:          topicArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && len(sf.remix) == 0 {
				cmd.SetOut(c.stderr)
				_ = cmd.Usage()
				return usagef("a topic is required: madspark TOPIC [CONTEXT]")
			}
			// A word is a command, never a paid run: only a topic of
			// several words, or one after "--", is taken as a topic here.
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 && strings.TrimSpace(args[0]) != "" && !strings.ContainsFunc(strings.TrimSpace(args[0]), unicode.IsSpace) {
				quoted := make([]string, len(args))
				for i, a := range args {
					quoted[i] = app.ShellQuote(a)
				}
				tip := "a spark run on a topic of one word: madspark spark " + strings.Join(quoted, " ")
				if len(args) == 2 {
					tip += "; on a topic of several words, quoted: madspark " + app.ShellQuote(args[0]+" "+args[1])
				}
				return cmdline.UnknownCommand(cmd, args[0], tip)
			}
			return c.runSpark(cmd.Context(), args, sf)
		},
	}
	sf.register(root)
	root.Version = versionString()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(cmdline.FlagError)
	root.AddCommand(c.sparkCmd(), c.chaosCmd(), c.debateCmd(), c.assessCmd(), c.proposalCmd(), c.serveCmd(), c.mcpCmd(), c.workerCmd(), c.batchCmd(), c.runsCmd(), c.resumeCmd(), c.exportCmd(), c.bookmarksCmd(), c.evalCmd(), c.configCmd(), c.runCmd(), c.pipelinesCmd(), c.parseCmd(), c.versionCmd(), c.inspectCmd())
	for _, sub := range root.Commands() {
		sub.SetFlagErrorFunc(cmdline.FlagError)
	}
	root.SetHelpCommand(cmdline.Help(root))
	root.InitDefaultCompletionCmd() // now, so that Guard sees it
	cmdline.Guard(root)
	return root
}

// topicArgs are spark's arguments, TOPIC [CONTEXT]: a topic of several
// words typed without quotes is the likely cause of more.
func topicArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 2 {
		return usagef("at most 2 arguments, TOPIC and CONTEXT, got %d: quote a topic of several words, as in %s %q", len(args), cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

// setDisplay sets how runs show their progress from --progress and
// --quiet: auto is a live display when stderr is a terminal, and a line
// per event otherwise.
func (c *cli) setDisplay(progress string, quiet bool) error {
	switch {
	case quiet && progress != "auto" && progress != "none":
		return usagef("--quiet turns progress off; drop it or --progress %s", progress)
	case quiet:
		progress = "none"
	case progress == "auto" && termui.IsTerminal(c.stderr):
		progress = "live"
	case progress == "auto":
		progress = "lines"
	case progress == "live" && !termui.IsTerminal(c.stderr):
		return usagef("--progress live draws on a terminal, and standard error is none; use lines or json")
	}
	if err := cmdline.CheckFormat(progress, "live", "lines", "json", "none"); err != nil {
		return usagef("--progress must be auto, live, lines, json or none, got %q", progress)
	}
	c.display = progress
	return nil
}

// open composes the system for this command (see package app).
func (c *cli) open(ctx context.Context, noCache bool) (*app.App, error) {
	return c.openWith(ctx, app.Config{NoCache: noCache})
}

// openWith is open with cfg's own settings (llama-server's model).
func (c *cli) openWith(ctx context.Context, cfg app.Config) (*app.App, error) {
	cfg.Getenv, cfg.Logger, cfg.Notices, cfg.Command = c.env, c.logger, c.stderr, c.command
	switch c.display {
	case "live":
		cfg.Progress = func(func() llm.Usage) (func(madspark.Event), func()) {
			p := termui.NewProgress(c.stderr)
			return p.Event, p.Stop
		}
	case "lines":
		cfg.Progress = func(usage func() llm.Usage) (func(madspark.Event), func()) {
			l := termui.NewLines(c.stderr, usage)
			return l.Event, l.Stop
		}
	case "json":
		cfg.Progress = func(usage func() llm.Usage) (func(madspark.Event), func()) {
			j := termui.NewJSONLines(c.stderr, usage)
			return j.Event, j.Stop
		}
	}
	return app.Open(ctx, cfg)
}

// writeOut writes data to path atomically, or to standard output when
// path is empty.
func (c *cli) writeOut(data []byte, path string) error {
	if path == "" {
		_, err := c.stdout.Write(data)
		return err
	}
	return atomicfile.Write(path, data)
}

// emit is writeOut, telling where a file went ("wrote PATH" and what).
func (c *cli) emit(data []byte, path, what string) error {
	if err := c.writeOut(data, path); err != nil || path == "" {
		return err
	}
	fmt.Fprintf(c.stderr, "madspark: wrote %s%s\n", path, what)
	return nil
}

// writeJSON prints v as indented JSON.
func writeJSON(c *cli, v any) error {
	data, err := marshalIndent(v)
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(data)
	return err
}

// marshalIndent is v as indented JSON with a final newline.
func marshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
