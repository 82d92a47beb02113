package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/flow"
)

func (c *cli) runCmd() *cobra.Command {
	var (
		inputs  []string
		format  string
		timeout time.Duration
		noCache bool
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a pipeline defined in a YAML file",
		Long: `Runs the pipeline defined in FILE (see docs/pipeline-files.md), with its
inputs given as --input name=value (numbers, true/false, and lists as
comma-separated items). A file with problems is refused before any call,
each problem on its own line. The run is recorded like any other: madspark
runs lists it under the file's name.`,
		Args: cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(format, "text", "json"); err != nil {
				return err
			}
			if err := cmdline.CheckTimeout(timeout); err != nil {
				return err
			}
			// "madspark run list" is "madspark runs list" mistyped.
			if _, err := os.Stat(args[0]); err != nil && !strings.ContainsAny(args[0], "./") {
				if runs, _, ferr := cmd.Root().Find([]string{"runs"}); ferr == nil {
					if s := cmdline.Suggest(runs, args[0]); len(s) > 0 {
						return usagef("no pipeline file %q: did you mean madspark runs %s?", args[0], s[0])
					}
				}
			}
			p, err := app.LoadPipeline(args[0], c.stderr)
			if err != nil {
				return err
			}
			return c.runFile(cmd.Context(), p, inputs, format, timeout, noCache)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&inputs, "input", nil, "an input, as name=value (repeatable)")
	fs.StringVar(&format, "output-format", "text", "what to print: text (each agent's output) or json (the result)")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	return cmd
}

func (c *cli) runFile(ctx context.Context, p *flow.Pipeline, inputs []string, format string, timeout time.Duration, noCache bool) error {
	a, err := c.open(ctx, noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	run, elapsed, err := a.RunFile(ctx, p, inputs, timeout)
	if err != nil {
		return err
	}
	rec := run.Record()
	if format == "json" {
		return writeJSON(c, rec.Result)
	}
	doc, err := p.Document(&rec)
	if err != nil {
		return err
	}
	fmt.Fprint(c.stdout, string(document.Markdown(doc)))
	fmt.Fprintf(c.stdout, "\nrun %s · %s/%s · %s%s\n", run.ID(), a.Info.Name, a.Info.Model, app.UsageLine(run, elapsed), app.RepairNote(len(run.Repairs())))
	return nil
}
