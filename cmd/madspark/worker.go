package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/jobs"
)

// registerWorker registers the flags of a process that works jobs:
// madspark worker, and madspark serve unless --no-worker.
func registerWorker(cmd *cobra.Command, o *app.WorkerOptions) {
	fs := cmd.Flags()
	fs.IntVar(&o.MaxConcurrent, "max-concurrent", 0, "runs worked at once against this process's provider (default $MADSPARK_PROVIDER_CONCURRENCY, else 4)")
	fs.DurationVar(&o.Lease, "lease", jobs.DefaultLeaseTTL, "how long other workers wait before taking over the runs of this one if it dies")
	fs.DurationVar(&o.Drain, "drain-timeout", time.Minute, "on Ctrl-C, how long to let running runs finish before putting them back in the queue")
}

func (c *cli) workerCmd() *cobra.Command {
	var o app.WorkerOptions
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
		Args: cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.open(ctx, noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			if a.Info.Mock {
				fmt.Fprintf(c.stderr, "madspark: mock mode (%s): outputs are mock data, no model is called\n", a.Info.Reason)
			}
			reg, err := a.Registry(pipelinesDir)
			if err != nil {
				return err
			}
			w, err := a.StartWorker(ctx, reg, o)
			if err != nil {
				return err
			}
			<-ctx.Done()
			fmt.Fprintf(c.stderr, "madspark: draining (up to %s; Ctrl-C again to put the running runs back in the queue now)\n", o.Drain)
			w.Stop(o.Drain)
			fmt.Fprintln(c.stderr, "madspark: worker stopped")
			return nil
		},
	}
	registerWorker(cmd, &o)
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	cmd.Flags().StringVar(&pipelinesDir, "pipelines", "", "a directory of pipeline files (*.yaml, *.yml) whose queued runs this worker also works")
	return cmd
}
