package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
)

// ReadBatchFile reads a batch file, refusing one over batch.MaxBytes
// before reading it whole.
func ReadBatchFile(name string) ([]byte, error) {
	if st, err := os.Stat(name); err == nil && st.Size() > batch.MaxBytes {
		return nil, Inputf("%s: the file is larger than %d bytes", name, batch.MaxBytes)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, Inputf("read batch file: %w", err)
	}
	return data, nil
}

// BatchOptions are how a batch is run.
type BatchOptions struct {
	// Concurrency is how many items this process works at once (0: the
	// provider's concurrency).
	Concurrency int
	// NoWorker only enqueues and waits: worker processes on the same
	// database work the items.
	NoWorker bool
	// Timeout bounds each item's run.
	Timeout time.Duration
	// Quiet leaves out the notices of the batch and of its worker.
	Quiet bool
	// OnUpdate, if set, is given the batch each time it is read.
	OnUpdate func(*madspark.Batch)
	// Parse are the options of reading the file (BatchFile).
	Parse batch.Options
}

// Batch is a batch submitted and followed by this process.
type Batch struct {
	Service *batch.Service
	*madspark.Batch
}

// RunBatch submits in (read from source) as a batch of pipe, works it in
// this process unless o.NoWorker, and waits until every item has
// finished. The error is an interruption of the wait (the batch's
// unfinished runs stay queued); a failed item is in the batch.
func (a *App) RunBatch(ctx context.Context, reg *pipeline.Registry, pipe, source string, in *batch.Input, o BatchOptions) (*Batch, error) {
	if a.Info.Mock {
		a.notice("mock mode (%s): outputs are mock data, no model is called", a.Info.Reason)
	}
	q, err := a.Queue(ctx, reg, 0, 0)
	if err != nil {
		return nil, err
	}
	svc := batch.New(reg, q, a.Store)
	b, err := svc.Submit(ctx, pipe, source, in, o.Timeout)
	if err != nil {
		return nil, err
	}
	if !o.Quiet {
		n := batch.CountsOf(b)
		a.notice("batch %s: %d items queued, %d rejected (madspark batch status %s)", b.ID, n.Total-n.Rejected, n.Rejected, b.ID)
	}
	var w *Worker
	if !o.NoWorker {
		wa := a
		if o.Quiet {
			quiet := *a
			quiet.cfg.Notices = discard{}
			wa = &quiet
		}
		if w, err = wa.StartWorker(ctx, reg, WorkerOptions{MaxConcurrent: o.Concurrency, Lease: jobs.DefaultLeaseTTL}); err != nil {
			return nil, err
		}
	}
	got, waitErr := a.WaitBatch(ctx, &Batch{svc, b}, o.OnUpdate)
	switch {
	case w != nil && waitErr != nil && ctx.Err() != nil:
		// Interrupted: the running runs are recorded interrupted, and
		// stay in the queue with the others.
		w.Interrupt(interruption(ctx))
	case w != nil:
		w.Stop(10 * time.Second)
	}
	return got, waitErr
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BatchFile runs the batch file name (its contents, data, read with
// ReadBatchFile) as a batch of pipe, as RunBatch does. The file's warnings
// and each rejected row, with its line, are told first; a file that cannot
// be used as a whole is an InputError.
func (a *App) BatchFile(ctx context.Context, name string, data []byte, pipe string, o BatchOptions) (*Batch, error) {
	reg, err := a.Registry("")
	if err != nil {
		return nil, err
	}
	in, err := batch.Parse(reg, pipe, name, data, o.Parse)
	if err != nil {
		return nil, InputError{err}
	}
	for _, w := range in.Warnings {
		a.notice("%s: %s", name, w)
	}
	for _, r := range in.Rows {
		if r.Err != nil {
			a.notice("%s: %s: %s", name, r.Where(), short(r.Err.Error(), 1<<20))
		}
	}
	return a.RunBatch(ctx, reg, pipe, filepath.Base(name), in, o)
}

// OpenBatch reads batch id; a missing one is an InputError.
func (a *App) OpenBatch(ctx context.Context, id string) (*Batch, error) {
	reg, err := a.Registry("")
	if err != nil {
		return nil, err
	}
	svc := batch.New(reg, nil, a.Store)
	b, err := svc.Get(ctx, id)
	if errNotFound(err) {
		return nil, Inputf("no batch %s", id)
	}
	if err != nil {
		return nil, err
	}
	return &Batch{svc, b}, nil
}

// WaitBatch waits until every run of b has finished, giving onUpdate the
// batch each time it is read. It returns the batch as last read, and an
// error if ctx ended first. A batch that nothing works for 5 s is told
// that no worker runs.
func (a *App) WaitBatch(ctx context.Context, b *Batch, onUpdate func(*madspark.Batch)) (*Batch, error) {
	start := time.Now()
	hinted := false
	got, err := b.Service.Wait(ctx, b.ID, 100*time.Millisecond, func(bb *madspark.Batch) {
		if onUpdate != nil {
			onUpdate(bb)
		}
		n := batch.CountsOf(bb)
		if !hinted && n.Finished() == 0 && n.Running == 0 && time.Since(start) > 5*time.Second {
			hinted = true
			if leases, err := a.Store.Leases(ctx); err == nil && !slices.ContainsFunc(leases, func(l madspark.WorkerLease) bool { return !l.Expired }) {
				fmt.Fprintf(a.cfg.Notices, "\r\033[Kmadspark: no worker is running on this database; start one for the %s queue (the same provider settings): madspark worker\n", a.Info.Name)
			}
		}
	})
	if got == nil {
		got = b.Batch
	}
	out := &Batch{b.Service, got}
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("batch %s %v: its unfinished runs stay in the queue, those that were running recorded interrupted; a worker finishes them without paying again for their finished steps (madspark worker), then: madspark batch status %s --wait --output FILE", b.ID, interruption(ctx), b.ID)
	}
	return out, err
}

// Results is the batch's results document; with exportDir, each
// succeeded item's files are written to a directory of its own under it.
func (b *Batch) Results(ctx context.Context, exportDir string) (*batch.Results, error) {
	ctx = context.WithoutCancel(ctx)
	if exportDir == "" {
		return b.Service.Results(ctx, b.Batch, nil)
	}
	return b.Service.Files(ctx, b.Batch, func(name string, data []byte) error {
		return atomicfile.Write(filepath.Join(exportDir, filepath.FromSlash(name)), data)
	})
}
