package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
)

// workerFlags are the flags of a process that works jobs: madspark worker,
// and madspark serve unless --no-worker.
type workerFlags struct {
	maxConcurrent int
	lease         time.Duration
	drain         time.Duration
}

func (f *workerFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntVar(&f.maxConcurrent, "max-concurrent", 0, "runs worked at once against this process's provider (default $MADSPARK_PROVIDER_CONCURRENCY, else 4)")
	fs.DurationVar(&f.lease, "lease", jobs.DefaultLeaseTTL, "how long other workers wait before taking over the runs of this one if it dies")
	fs.DurationVar(&f.drain, "drain-timeout", time.Minute, "on Ctrl-C, how long to let running runs finish before putting them back in the queue")
}

func (f *workerFlags) check() error {
	if f.lease < time.Second {
		return usagef("--lease must be at least 1s, got %s", f.lease)
	}
	if f.drain < 0 {
		return usagef("--drain-timeout must not be negative, got %s", f.drain)
	}
	return nil
}

// startWorker starts working the queue of the app's provider in this
// process. stop drains it: running runs may finish for --drain-timeout (a
// second Ctrl-C cuts that short), then go back to the queue.
func (c *cli) startWorker(ctx context.Context, a *app, reg *pipeline.Registry, f *workerFlags) (q *jobs.Queue, stop func(), err error) {
	n, err := c.concurrency(a.info.Name, f.maxConcurrent, "--max-concurrent")
	if err != nil {
		return nil, nil, err
	}
	q, err = c.openQueue(ctx, a, reg, queueOptions{concurrency: n, lease: f.lease})
	if err != nil {
		return nil, nil, err
	}
	if err := q.Start(ctx); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c.stderr, "madspark: worker %s working the %s queue (%s/%s, %s; at most %d runs at once)\n",
		q.WorkerID(), a.info.Name, a.info.Name, a.info.Model, a.info.Mode(), n)
	stop = func() {
		dctx, cancel := context.WithTimeout(context.Background(), f.drain)
		defer cancel()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		go func() {
			select {
			case <-sig:
				cancel()
			case <-dctx.Done():
			}
		}()
		if err := q.Stop(dctx); err != nil {
			c.logger.Warn("worker did not stop cleanly", "err", err)
		}
	}
	return q, stop, nil
}

func (c *cli) workerCmd() *cobra.Command {
	f := &workerFlags{}
	var noCache bool
	var pipelinesDir string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Work queued runs (batch items, server-side runs) until Ctrl-C",
		Long: `Works the runs queued for this process's provider, in the database that
DATABASE_URL (PostgreSQL: any number of workers on any number of machines) or
MADSPARK_DB (a SQLite file: the workers of one machine) points at.

A run whose worker dies is taken over by another worker once the dead one's
lease expires (--lease), or at once when the dead worker ran on the same
machine; it resumes from its journal without paying again for its finished
steps.

Ctrl-C drains: no new run is taken, running runs may finish for
--drain-timeout, then the rest go back to the queue for the next worker. A
second Ctrl-C stops at once.`,
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.openApp(ctx, !noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			if a.info.Mock {
				fmt.Fprintf(c.stderr, "madspark: mock mode (%s): outputs are mock data, no model is called\n", a.info.Reason)
			}
			reg, err := c.registry(a)
			if err != nil {
				return err
			}
			if err := c.registerDir(reg, pipelinesDir); err != nil {
				return err
			}
			_, stop, err := c.startWorker(ctx, a, reg, f)
			if err != nil {
				return err
			}
			<-ctx.Done()
			fmt.Fprintf(c.stderr, "madspark: draining (up to %s; Ctrl-C again to put the running runs back in the queue now)\n", f.drain)
			stop()
			fmt.Fprintln(c.stderr, "madspark: worker stopped")
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	cmd.Flags().StringVar(&pipelinesDir, "pipelines", "", "a directory of pipeline files (*.yaml, *.yml) whose queued runs this worker also works")
	return cmd
}
