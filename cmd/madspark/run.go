package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/pipeline"
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
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			// "madspark run list" is "madspark runs list" mistyped.
			if _, err := os.Stat(args[0]); err != nil {
				if sub, _, ferr := cmd.Root().Find([]string{"runs", args[0]}); ferr == nil && sub.Name() == args[0] {
					return usagef("no pipeline file %q: did you mean madspark runs? (madspark runs %s)", args[0], args[0])
				}
			}
			p, err := c.loadPipeline(args[0])
			if err != nil {
				return err
			}
			return c.runFile(cmd.Context(), p, inputs, format, timeout, !noCache)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&inputs, "input", nil, "an input, as name=value (repeatable)")
	fs.StringVar(&format, "output-format", "text", "what to print: text (each agent's output) or json (the result)")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	return cmd
}

// loadPipeline parses a pipeline file, printing every problem on stderr;
// the error, a usage error, is the first.
func (c *cli) loadPipeline(path string) (*flow.Pipeline, error) {
	p, err := flow.Load(path)
	if err != nil {
		c.printProblems(err)
		return nil, usageError{err}
	}
	return p, nil
}

// printProblems prints each problem of a pipeline file on its own line,
// when err has more than one.
func (c *cli) printProblems(err error) {
	var ps flow.Problems
	if errors.As(err, &ps) && len(ps) > 1 {
		for _, p := range ps {
			fmt.Fprintln(c.stderr, p)
		}
	}
}

func (c *cli) runFile(ctx context.Context, p *flow.Pipeline, inputs []string, format string, timeout time.Duration, useCache bool) error {
	reg := pipeline.NewRegistry()
	def := p.Definition()
	if err := reg.Register(def); err != nil {
		return err
	}
	raw, err := p.InputsJSON(inputs)
	if err != nil {
		return usageError{err}
	}
	params, err := reg.Decode(p.Name, raw)
	if err != nil {
		return usageError{err}
	}
	a, err := c.openApp(ctx, useCache)
	if err != nil {
		return err
	}
	defer a.Close()
	run, elapsed, err := c.execute(ctx, a, p.Name, params, timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		return def.Run(ctx, r, params)
	})
	if err != nil {
		// resume finds the pipeline in the file's directory.
		dir := shellQuote(filepath.Dir(p.File))
		if ie, ok := errors.AsType[*interruptedError](err); ok {
			ie.flags = " --pipelines " + dir
			return err
		}
		if run != nil {
			return fmt.Errorf("%w (with --pipelines %s)", err, dir)
		}
		return err
	}
	rec := run.Record()
	if format == "json" {
		var out any
		_ = json.Unmarshal(rec.Result, &out)
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, string(b))
		return nil
	}
	doc, err := p.Document(&rec)
	if err != nil {
		return err
	}
	fmt.Fprint(c.stdout, string(document.Markdown(doc)))
	fmt.Fprintf(c.stdout, "\nRun %s (%s, %s/%s): %s\n", run.ID(), a.info.Mode(), a.info.Name, a.info.Model, usageLine(run, elapsed))
	return nil
}
