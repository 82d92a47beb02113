package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
)

func (c *cli) batchCmd() *cobra.Command {
	var (
		output, exportDir, pipe string
		o                       batchOptions
		noCache                 bool
	)
	cmd := &cobra.Command{
		Use:   "batch FILE",
		Short: "Run every row of a CSV or JSON file as a job, and collect the results",
		Long: fmt.Sprintf(`Runs each item of FILE as a job of the queue and waits for all of them.

FILE is a CSV file with a header row: topic (or the legacy theme),
context (or constraints), temperature_preset, num_candidates,
num_top_candidates, tags; other columns are ignored with a warning. Or a JSON
array of objects with the same fields; with --pipeline NAME, a JSON array of
NAME's parameters (and tags). A bad item is reported with its line and the
others still run. A file may hold up to %d items and %d MiB.

Items are worked in this process (--concurrency at once) unless --no-worker,
in which case madspark worker processes on the same database work them. The
results (per item: line, topic, run_id, status, error, result) go to
--output atomically, or to standard output. Exit status 1 when any item
failed. "madspark batch status ID" shows a batch from anywhere.`, batch.MaxRows, batch.MaxBytes>>20),
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.timeout <= 0 {
				return usagef("--timeout must be positive, got %s", o.timeout)
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if o.noWorker && cmd.Flags().Changed("concurrency") {
				return usagef("--concurrency sets the in-process worker; it does nothing with --no-worker")
			}
			data, err := readBatchFile(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.openApp(ctx, !noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			reg, err := c.registry(a)
			if err != nil {
				return err
			}
			in, err := batch.Parse(reg, pipe, args[0], data)
			if err != nil {
				return usageError{err}
			}
			for _, w := range in.Warnings {
				fmt.Fprintf(c.stderr, "madspark: %s: %s\n", args[0], w)
			}
			for _, r := range in.Rows {
				if r.Err != nil {
					fmt.Fprintf(c.stderr, "madspark: %s: %s: %s\n", args[0], r.Where(), oneLine(r.Err.Error()))
				}
			}
			svc, b, waitErr, err := c.runBatch(ctx, a, reg, pipe, filepath.Base(args[0]), in, o)
			if err != nil {
				return err
			}
			return c.finishBatch(ctx, svc, b, output, exportDir, waitErr)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", "", "write the results to FILE (atomically) instead of standard output")
	fs.StringVar(&exportDir, "export-dir", "", "write each succeeded item's files to a directory of its own under DIR")
	fs.IntVar(&o.concurrency, "concurrency", 0, "items worked at once in this process (default $MADSPARK_PROVIDER_CONCURRENCY, else 4)")
	fs.StringVar(&pipe, "pipeline", "spark", "the pipeline of every item (other than spark: JSON input of its parameters)")
	fs.BoolVar(&o.noWorker, "no-worker", false, "only enqueue and wait: madspark worker processes on the same database work the items")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on an item after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache (in-process worker)")
	cmd.AddCommand(c.batchStatusCmd())
	return cmd
}

// readBatchFile reads a batch file, refusing one over batch.MaxBytes
// before reading it whole.
func readBatchFile(name string) ([]byte, error) {
	if st, err := os.Stat(name); err == nil && st.Size() > batch.MaxBytes {
		return nil, usagef("%s: the file is larger than %d bytes", name, batch.MaxBytes)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, usageError{fmt.Errorf("read batch file: %w", err)}
	}
	return data, nil
}

// batchOptions are how a batch command runs its batch.
type batchOptions struct {
	concurrency int
	noWorker    bool
	timeout     time.Duration
	// quiet leaves out the line saying where the batch is queued.
	quiet bool
	// onItem, if set, is told of each item that finishes (a display
	// without a terminal).
	onItem func(it madspark.BatchItem, done, total int)
}

// runBatch submits in as a batch of pipe, works it in this process unless
// o.noWorker, and waits for it with a display. waitErr says that the wait
// was interrupted.
func (c *cli) runBatch(ctx context.Context, a *app, reg *pipeline.Registry, pipe, source string, in *batch.Input, o batchOptions) (svc *batch.Service, b *madspark.Batch, waitErr, err error) {
	if a.info.Mock {
		fmt.Fprintf(c.stderr, "madspark: mock mode (%s): outputs are mock data, no model is called\n", a.info.Reason)
	}
	q, err := c.openQueue(ctx, a, reg, queueOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	svc = batch.New(reg, q, a.db)
	b, err = svc.Submit(ctx, pipe, source, in, o.timeout)
	if err != nil {
		return nil, nil, nil, err
	}
	if !o.quiet {
		n := batch.CountsOf(b)
		fmt.Fprintf(c.stderr, "madspark: batch %s: %d items queued, %d rejected (madspark batch status %s)\n", b.ID, n.Total-n.Rejected, n.Rejected, b.ID)
	}
	var stopWorker func()
	wf := &workerFlags{maxConcurrent: o.concurrency, lease: jobs.DefaultLeaseTTL, drain: 10 * time.Second}
	if !o.noWorker {
		w := *c
		if o.quiet {
			w.stderr = discard{}
		}
		if _, stopWorker, err = w.startWorker(ctx, a, reg, wf); err != nil {
			return nil, nil, nil, err
		}
	}
	b, waitErr = c.waitBatch(ctx, a, svc, b, o.onItem)
	if stopWorker != nil {
		if waitErr != nil {
			// Interrupted: the running runs go back to the queue at once.
			wf.drain = 0
		}
		stopWorker()
	}
	return svc, b, waitErr, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func (c *cli) batchStatusCmd() *cobra.Command {
	var (
		output, exportDir, format string
		wait                      bool
	)
	cmd := &cobra.Command{
		Use:   "status BATCH_ID",
		Short: "Show a batch's items and their runs; --wait for it to finish, --output its results",
		Args:  argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.openApp(ctx, true)
			if err != nil {
				return err
			}
			defer a.Close()
			reg, err := c.registry(a)
			if err != nil {
				return err
			}
			svc := batch.New(reg, nil, a.db)
			b, err := svc.Get(ctx, args[0])
			if errors.Is(err, madspark.ErrNotFound) {
				return usagef("no batch %s", args[0])
			}
			if err != nil {
				return err
			}
			var waitErr error
			if wait {
				b, waitErr = c.waitBatch(ctx, a, svc, b, nil)
			}
			if output != "" || exportDir != "" || format == "json" {
				return c.finishBatch(ctx, svc, b, output, exportDir, waitErr)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LINE\tSTATUS\tRUN ID\tTOPIC")
			for _, it := range b.Items {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Line, batch.ItemStatus(it), it.RunID, shorten(it.Topic, 48))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			n := batch.CountsOf(b)
			failed := n.Failed + n.Rejected
			fmt.Fprintf(c.stderr, "madspark: batch %s (%s, %s): %d items, %d finished, %d failed\n", b.ID, b.Pipeline, b.Source, n.Total, n.Finished(), failed)
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
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}

// waitBatch waits until every run of b has finished, drawing a progress bar
// on a terminal, or telling onItem of each item that finishes. It returns
// the batch as last read, and an error if ctx ended first.
func (c *cli) waitBatch(ctx context.Context, a *app, svc *batch.Service, b *madspark.Batch, onItem func(madspark.BatchItem, int, int)) (*madspark.Batch, error) {
	start := time.Now()
	hinted := false
	bar := newBatchBar(c.stderr)
	seen := make([]bool, len(b.Items))
	done := 0
	got, err := svc.Wait(ctx, b.ID, 100*time.Millisecond, func(b *madspark.Batch) {
		n := batch.CountsOf(b)
		if c.progress {
			bar.draw(n.Finished(), n.Total, n.Failed+n.Rejected, n.Running)
		} else if onItem != nil {
			for i, it := range b.Items {
				if i < len(seen) && !seen[i] && batch.ItemStatus(it) != string(madspark.RunQueued) && batch.ItemStatus(it) != string(madspark.RunRunning) {
					seen[i] = true
					done++
					onItem(it, done, n.Total)
				}
			}
		}
		if !hinted && n.Finished() == 0 && n.Running == 0 && time.Since(start) > 5*time.Second {
			hinted = true
			if leases, err := a.db.Leases(ctx); err == nil && !slices.ContainsFunc(leases, func(l madspark.WorkerLease) bool { return !l.Expired }) {
				fmt.Fprintf(c.stderr, "\r\033[Kmadspark: no worker is running on this database; start one for the %s queue (the same provider settings): madspark worker\n", a.info.Name)
			}
		}
	})
	if c.progress {
		bar.clear()
	}
	if got == nil {
		got = b
	}
	if err != nil && ctx.Err() != nil {
		return got, fmt.Errorf("batch %s interrupted: its unfinished runs stay queued; a worker finishes them (madspark worker), then: madspark batch status %s --wait --output FILE", b.ID, b.ID)
	}
	return got, err
}

// finishBatch writes the results document (to output, atomically, or to
// standard output) and the exports, and reports. The error is waitErr, or
// a failure when any item failed.
func (c *cli) finishBatch(ctx context.Context, svc *batch.Service, b *madspark.Batch, output, exportDir string, waitErr error) error {
	ctx = context.WithoutCancel(ctx)
	var put func(string, []byte) error
	if exportDir != "" {
		put = func(name string, data []byte) error {
			return writeFile(filepath.Join(exportDir, filepath.FromSlash(name)), data)
		}
	}
	res, err := c.batchResults(ctx, svc, b, put)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	where := "standard output"
	if output == "" {
		if _, err := c.stdout.Write(data); err != nil {
			return err
		}
	} else if err := writeFile(output, data); err != nil {
		return err
	} else {
		where = output
	}
	fmt.Fprintf(c.stderr, "madspark: batch %s: %d succeeded, %d failed, %d unfinished; results in %s\n", b.ID, res.Succeeded, res.Failed, res.Pending, where)
	if exportDir != "" {
		fmt.Fprintf(c.stderr, "madspark: exports in %s\n", exportDir)
	}
	if waitErr != nil {
		return waitErr
	}
	return res.Err()
}

// batchResults is the results document of b, with each succeeded item's
// files given to put when put is set.
func (c *cli) batchResults(ctx context.Context, svc *batch.Service, b *madspark.Batch, put func(string, []byte) error) (*batch.Results, error) {
	if put != nil {
		return svc.Files(ctx, b, put)
	}
	return svc.Results(ctx, b, nil)
}

// shorten cuts s to n characters for a table.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
