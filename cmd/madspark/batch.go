package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/termui"
)

func (c *cli) batchCmd() *cobra.Command {
	var (
		output, exportDir, pipe string
		o                       app.BatchOptions
		noCache                 bool
	)
	cmd := &cobra.Command{
		Use:   "batch FILE",
		Short: "Run every row of a CSV or JSON file as a job, and collect the results",
		Long: fmt.Sprintf(`Runs each item of FILE as a job of the queue and waits for all of them.

FILE is a CSV file with a header row: topic (or the legacy theme),
context (or constraints), temperature_preset, num_candidates,
num_top_candidates, tags; another column refuses the file (a misspelt one
would run every item with its default) unless --ignore-unknown-columns, which
ignores it with a warning. Or a JSON
array of objects with the same fields; with --pipeline NAME, a JSON array of
NAME's parameters (and tags). A bad item is reported with its line and the
others still run. A file may hold up to %d items and %d MiB.

Items are worked in this process (--concurrency at once) unless --no-worker,
in which case madspark worker processes on the same database work them. The
results (per item: line, topic, run_id, status, error, result) go to
--output atomically, or to standard output. Exit status 1 when any item
failed. "madspark batch status ID" shows a batch from anywhere.`, batch.MaxRows, batch.MaxBytes>>20),
		Args: func(cmd *cobra.Command, args []string) error {
			// "madspark batch stauts ID" is a slip, not a file.
			if len(args) > 0 {
				if _, err := os.Stat(args[0]); err != nil {
					if err := cmdline.NotCommand(cmd, args[0], false); err != nil {
						return err
					}
				}
			}
			return cmdline.Args(cobra.ExactArgs(1))(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckTimeout(o.Timeout); err != nil {
				return err
			}
			if err := cmdline.CheckOutput(output); err != nil {
				return err
			}
			if o.NoWorker && cmd.Flags().Changed("concurrency") {
				return usagef("--concurrency sets the in-process worker; it does nothing with --no-worker")
			}
			data, err := app.ReadBatchFile(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.open(ctx, noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			var clear func()
			o.OnUpdate, clear = c.batchDisplay(nil)
			b, waitErr := a.BatchFile(ctx, args[0], data, pipe, o)
			clear()
			if b == nil {
				return waitErr
			}
			return c.finishBatch(ctx, b, output, exportDir, waitErr)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", "", "write the results to FILE (atomically) instead of standard output")
	fs.StringVar(&exportDir, "export-dir", "", "write each succeeded item's files to a directory of its own under DIR")
	fs.IntVar(&o.Concurrency, "concurrency", 0, "items worked at once in this process (default $MADSPARK_PROVIDER_CONCURRENCY, else 4)")
	fs.StringVar(&pipe, "pipeline", "spark", "the pipeline of every item (other than spark: JSON input of its parameters)")
	fs.BoolVar(&o.NoWorker, "no-worker", false, "only enqueue and wait: madspark worker processes on the same database work the items")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "give up on an item after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache (in-process worker)")
	fs.BoolVar(&o.Parse.IgnoreUnknownColumns, "ignore-unknown-columns", false, "run a CSV file whose header has columns that are not parameters, ignoring them")
	cmd.AddCommand(c.batchStatusCmd())
	return cmd
}

func (c *cli) batchStatusCmd() *cobra.Command {
	var (
		output, exportDir, format string
		wait                      bool
	)
	cmd := &cobra.Command{
		Use:   "status BATCH_ID",
		Short: "Show a batch's items and their runs; --wait for it to finish, --output its results",
		Args:  cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(format, "table", "json"); err != nil {
				return err
			}
			if err := cmdline.CheckOutput(output); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.open(ctx, false)
			if err != nil {
				return err
			}
			defer a.Close()
			b, err := a.OpenBatch(ctx, args[0])
			if err != nil {
				return err
			}
			var waitErr error
			if wait {
				show, clear := c.batchDisplay(nil)
				b, waitErr = a.WaitBatch(ctx, b, show)
				clear()
			}
			if output != "" || exportDir != "" || format == "json" {
				return c.finishBatch(ctx, b, output, exportDir, waitErr)
			}
			if err := batch.WriteTable(c.stdout, b.Batch); err != nil {
				return err
			}
			n := batch.CountsOf(b.Batch)
			failed := n.Failed + n.Rejected
			fmt.Fprintf(c.stderr, "madspark: batch %s (%s, %s): %d items, %d finished, %d failed, %d cancelled\n", b.ID, b.Pipeline, b.Source, n.Total, n.Finished(), failed, n.Cancelled)
			if waitErr == nil && failed > 0 {
				// As with --output: exit 1 when any item failed.
				return fmt.Errorf("batch %s: %d of %d items failed", b.ID, failed, n.Total)
			}
			return waitErr
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", "", "write the results to FILE (atomically)")
	fs.StringVar(&exportDir, "export-dir", "", "write each succeeded item's files to a directory of its own under DIR")
	fs.StringVar(&format, "output-format", "table", "table|json (the results)")
	fs.BoolVar(&wait, "wait", false, "wait until every item's run has finished")
	cmd.SetFlagErrorFunc(cmdline.FlagError)
	return cmd
}

// batchDisplay follows a batch: a progress bar on a terminal (clear
// erases it); else onItem, or by default a line (or a JSON object, with
// --progress json) for each item that finishes; nothing with --quiet.
func (c *cli) batchDisplay(onItem func(it madspark.BatchItem, done, total int)) (show func(*madspark.Batch), clear func()) {
	switch {
	case c.display == "none":
		return nil, func() {}
	case c.display == "json":
		enc := json.NewEncoder(c.stderr)
		return app.ItemsFinished(func(it madspark.BatchItem, done, total int) {
			_ = enc.Encode(map[string]any{"time": time.Now().UTC(), "type": "item", "line": it.Line, "run_id": it.RunID,
				"status": batch.ItemStatus(it), "error": it.Error, "done": done, "total": total})
		}), func() {}
	case c.display == "lines" && onItem == nil:
		return app.ItemsFinished(func(it madspark.BatchItem, done, total int) {
			fmt.Fprintf(c.stderr, "%s item %d/%d (line %d) %s%s\n", time.Now().Format("15:04:05"), done, total, it.Line, batch.ItemStatus(it), runNote(it.RunID))
		}), func() {}
	case c.display != "live":
		return app.ItemsFinished(onItem), func() {}
	}
	bar := termui.NewBatchBar(c.stderr)
	return func(b *madspark.Batch) {
		n := batch.CountsOf(b)
		bar.Draw(n.Finished(), n.Total, n.Failed+n.Rejected, n.Running)
	}, bar.Clear
}

// runNote is " (run ID)", or "" for no run.
func runNote(id string) string {
	if id == "" {
		return ""
	}
	return " (run " + id + ")"
}

// finishBatch writes the results document (to output, atomically, or to
// standard output) and the exports, and reports. The error is waitErr, or
// a failure when any item failed.
func (c *cli) finishBatch(ctx context.Context, b *app.Batch, output, exportDir string, waitErr error) error {
	res, err := b.Results(ctx, exportDir)
	if err != nil {
		return err
	}
	data, err := marshalIndent(res)
	if err != nil {
		return err
	}
	if err := c.writeOut(data, output); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "madspark: batch %s: %d succeeded, %d failed, %d cancelled, %d unfinished; results in %s\n", b.ID, res.Succeeded, res.Failed, res.Cancelled, res.Pending, cmp.Or(output, "standard output"))
	if exportDir != "" {
		fmt.Fprintf(c.stderr, "madspark: exports in %s\n", exportDir)
	}
	if waitErr != nil {
		return waitErr
	}
	return res.Err()
}

// shorten cuts s to n characters for a table.
func shorten(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
