// Package batch runs batches: the rows of a CSV or JSON file, each a run of
// one registered pipeline on the job queue, followed together. It owns
// what every surface (the CLI's batch and assess --batch, the REST API, the
// web UI through it) does with a batch file: reading it, checking each row
// with its line number, enqueueing the good rows and recording the batch
// with the rejected ones, its progress, its cancellation, and its results
// document.
//
// A bad row never stops the others: it is recorded with its line and the
// reason, and counted as rejected. A file that cannot be used as a whole
// (empty, no header, not a JSON array, over MaxBytes or MaxRows) is a
// *FileError before anything is enqueued.
package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
)

// Queue is what a batch needs of the job queue (*jobs.Queue).
type Queue interface {
	EnqueueMany(ctx context.Context, reqs []jobs.Request) ([]*madspark.Run, error)
	// Cancel returns an error wrapping jobs.ErrFinished for a finished
	// run.
	Cancel(ctx context.Context, runID string) (madspark.RunStatus, error)
}

// Store is what a batch reads and writes: batches and their runs.
type Store interface {
	madspark.BatchStore
	madspark.RunStore
}

// Service submits and follows batches. It is safe for concurrent use.
type Service struct {
	reg   *pipeline.Registry
	queue Queue
	store Store
}

// New returns a Service over a registry, a queue and a store.
func New(reg *pipeline.Registry, q Queue, s Store) *Service {
	return &Service{reg: reg, queue: q, store: s}
}

// Parse reads a batch file of pipeline pipe (see the package function
// Parse).
func (s *Service) Parse(pipe, name string, data []byte, opts Options) (*Input, error) {
	return Parse(s.reg, pipe, name, data, opts)
}

// Submit enqueues the good rows of in as runs of pipe, each bounded by
// timeout (0: the queue's default), and records the batch with every row,
// rejected ones included, in order. source names the file.
func (s *Service) Submit(ctx context.Context, pipe, source string, in *Input, timeout time.Duration) (*madspark.Batch, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	// Each row's run carries the batch as its parent, beside the row's tags.
	parent := madspark.ParentTag(madspark.ParentBatch, id.String())
	reqs := make([]jobs.Request, 0, len(in.Rows))
	for _, r := range in.Rows {
		if r.Err == nil {
			reqs = append(reqs, jobs.Request{Pipeline: pipe, Params: r.Params, Timeout: timeout, Tags: append(slices.Clip(r.Tags), parent)})
		}
	}
	runs, err := s.queue.EnqueueMany(ctx, reqs)
	if err != nil {
		return nil, fmt.Errorf("batch: enqueue: %w", err)
	}
	b := &madspark.Batch{ID: id.String(), Pipeline: pipe, Source: source, Items: make([]madspark.BatchItem, 0, len(in.Rows))}
	next := 0
	for _, r := range in.Rows {
		it := madspark.BatchItem{Line: r.Line, Topic: r.Topic, Tags: r.Tags}
		if r.Err != nil {
			it.Error = r.Reason()
		} else {
			it.RunID, it.Status = runs[next].ID, madspark.RunQueued
			next++
		}
		b.Items = append(b.Items, it)
	}
	if err := s.store.CreateBatch(ctx, b); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	return b, nil
}

// Get returns batch id with the current status of each item's run, or an
// error wrapping madspark.ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (*madspark.Batch, error) {
	return s.store.Batch(ctx, id)
}

// List returns batches, newest first.
func (s *Service) List(ctx context.Context, limit, offset int) ([]*madspark.Batch, error) {
	return s.store.Batches(ctx, limit, offset)
}

// Counts are a batch's items by state. A rejected item never ran; a
// cancelled one's run was cancelled on request, which is not a failure.
type Counts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Rejected  int `json:"rejected"`
}

// Done reports whether every item has finished (or was rejected).
func (c Counts) Done() bool { return c.Pending == 0 && c.Running == 0 }

// Finished counts the items that will not change any more.
func (c Counts) Finished() int { return c.Succeeded + c.Failed + c.Cancelled + c.Rejected }

// CountsOf counts b's items.
func CountsOf(b *madspark.Batch) Counts {
	c := Counts{Total: len(b.Items)}
	for _, it := range b.Items {
		switch st := ItemStatus(it); st {
		case StatusRejected:
			c.Rejected++
		case string(madspark.RunSucceeded):
			c.Succeeded++
		case string(madspark.RunRunning):
			c.Running++
		case string(madspark.RunQueued), string(madspark.RunInterrupted):
			// An interrupted item's job is still queued: a worker
			// resumes it.
			c.Pending++
		case string(madspark.RunCancelled):
			c.Cancelled++
		default:
			c.Failed++
		}
	}
	return c
}

// StatusRejected is the status of an item that was not run.
const StatusRejected = "rejected"

// ItemStatus is an item's status: its run's, or rejected. A run whose
// record is missing counts as failed.
func ItemStatus(it madspark.BatchItem) string {
	switch {
	case it.RunID == "":
		return StatusRejected
	case it.Status == "":
		return string(madspark.RunFailed)
	}
	return string(it.Status)
}

// Wait reads batch id every interval until every item has finished or ctx
// ends, calling progress (if not nil) with each reading. It returns the
// batch as last read, and ctx's error if it ended first.
func (s *Service) Wait(ctx context.Context, id string, interval time.Duration, progress func(*madspark.Batch)) (*madspark.Batch, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last *madspark.Batch
	for {
		b, err := s.store.Batch(ctx, id)
		switch {
		case err == nil:
			last = b
			if progress != nil {
				progress(b)
			}
			if CountsOf(b).Done() {
				return b, nil
			}
		case ctx.Err() == nil:
			return last, err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				return nil, ctx.Err()
			}
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}

// Cancel cancels every unfinished run of batch id and returns how many it
// cancelled (or is stopping). Runs that finished meanwhile are left as
// they are.
func (s *Service) Cancel(ctx context.Context, id string) (int, error) {
	b, err := s.store.Batch(ctx, id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, it := range b.Items {
		if it.RunID == "" || it.Status.Final() {
			continue
		}
		if _, err := s.queue.Cancel(ctx, it.RunID); err != nil {
			if errors.Is(err, jobs.ErrFinished) || errors.Is(err, jobs.ErrNotQueued) {
				continue
			}
			return n, fmt.Errorf("batch %s: cancel line %d: %w", id, it.Line, err)
		}
		n++
	}
	return n, nil
}

// Result is one item of a Results document.
type Result struct {
	Line   int             `json:"line"`
	Topic  string          `json:"topic"`
	Tags   []string        `json:"tags,omitempty"`
	RunID  string          `json:"run_id,omitempty"`
	Status string          `json:"status" jsonschema:"enum=queued,enum=running,enum=succeeded,enum=failed,enum=cancelled,enum=rejected,enum=missing"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Results is a batch's results document: per item its line, topic, run,
// status, error and result (the run's JSON result once it succeeded).
type Results struct {
	BatchID  string `json:"batch_id"`
	Pipeline string `json:"pipeline"`
	Source   string `json:"source"`
	// Mode is "mock" when any item ran on the mock provider, else "live".
	Mode   string `json:"mode"`
	Notice string `json:"notice,omitempty"`
	Total  int    `json:"total"`
	// Succeeded, Failed (rejected items included), Cancelled and Pending
	// (queued or running) count the items.
	Succeeded int      `json:"succeeded"`
	Failed    int      `json:"failed"`
	Cancelled int      `json:"cancelled"`
	Pending   int      `json:"pending"`
	Items     []Result `json:"items"`
}

// MockNotice is a Results' Notice when any item ran on the mock provider.
const MockNotice = "MOCK DATA: generated offline by the mock provider, not by a language model."

// FailedLines are the lines of the items that failed or were rejected.
func (r *Results) FailedLines() []int {
	var out []int
	for _, it := range r.Items {
		switch madspark.RunStatus(it.Status) {
		case madspark.RunSucceeded, madspark.RunQueued, madspark.RunRunning, madspark.RunCancelled:
		default:
			out = append(out, it.Line)
		}
	}
	return out
}

// Err is nil when every item succeeded, and otherwise an error naming the
// failed items' lines, or saying how many were cancelled.
func (r *Results) Err() error {
	if r.Failed == 0 {
		if r.Cancelled > 0 {
			return fmt.Errorf("batch %s: %d of %d items cancelled", r.BatchID, r.Cancelled, r.Total)
		}
		return nil
	}
	lines := make([]string, 0, r.Failed)
	for _, l := range r.FailedLines() {
		lines = append(lines, strconv.Itoa(l))
	}
	cancelled := ""
	if r.Cancelled > 0 {
		cancelled = fmt.Sprintf(", %d cancelled", r.Cancelled)
	}
	return fmt.Errorf("batch %s: %d of %d items failed (lines %s)%s", r.BatchID, r.Failed, r.Total, strings.Join(lines, ", "), cancelled)
}

// Results reads the results of b's runs into its results document. each,
// if not nil, is called with every item's run record (nil for a rejected
// or missing one), as the document is made; an error from it stops.
func (s *Service) Results(ctx context.Context, b *madspark.Batch, each func(madspark.BatchItem, *madspark.Run) error) (*Results, error) {
	out := &Results{BatchID: b.ID, Pipeline: b.Pipeline, Source: b.Source, Total: len(b.Items), Items: make([]Result, 0, len(b.Items))}
	for _, it := range b.Items {
		r := Result{Line: it.Line, Topic: it.Topic, Tags: it.Tags, RunID: it.RunID, Status: string(it.Status), Error: it.Error}
		var rec *madspark.Run
		if it.RunID == "" {
			r.Status = StatusRejected
		} else if got, err := s.store.Run(ctx, it.RunID); err != nil {
			r.Status, r.Error = "missing", oneLine(err.Error())
		} else {
			rec = got
			r.Status, r.Error, r.Result = string(rec.Status), rec.Error, rec.Result
			if out.Mode == "" || rec.Mode == "mock" {
				out.Mode = rec.Mode
			}
		}
		if each != nil {
			if err := each(it, rec); err != nil {
				return nil, err
			}
		}
		switch madspark.RunStatus(r.Status) {
		case madspark.RunSucceeded:
			out.Succeeded++
		case madspark.RunQueued, madspark.RunRunning, madspark.RunInterrupted:
			out.Pending++
		case madspark.RunCancelled:
			out.Cancelled++
		default:
			out.Failed++
		}
		out.Items = append(out.Items, r)
	}
	if out.Mode == "mock" {
		out.Notice = MockNotice
	}
	return out, nil
}

// Files calls put with every file of every succeeded item (the pipeline's
// Definition.Files), each under a directory of its own named after the
// item's line, topic and run (ItemDir), so that no two items share one.
func (s *Service) Files(ctx context.Context, b *madspark.Batch, put func(name string, data []byte) error) (*Results, error) {
	def, err := s.reg.Get(b.Pipeline)
	if err != nil {
		return nil, err
	}
	return s.Results(ctx, b, func(it madspark.BatchItem, rec *madspark.Run) error {
		if rec == nil || rec.Status != madspark.RunSucceeded || def.Files == nil {
			return nil
		}
		files, err := def.Files(rec)
		if err != nil {
			return fmt.Errorf("export line %d: %w", it.Line, err)
		}
		dir := ItemDir(it)
		for name, data := range files {
			if err := put(dir+"/"+name, data); err != nil {
				return err
			}
		}
		return nil
	})
}

// ItemDir names the directory of an item's files: its line, its topic's
// slug and the end of its run ID, such as line0002-urban-farming-9a8b7c6d5e4f.
func ItemDir(it madspark.BatchItem) string {
	return fmt.Sprintf("line%04d-%s-%s", it.Line, slug(it.Topic), it.RunID[max(0, len(it.RunID)-12):])
}

// slug is s in lower-case letters and digits joined by hyphens, at most 40
// characters.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) && r < unicode.MaxASCII || unicode.IsDigit(r) && r < unicode.MaxASCII {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			if b.Len() >= 40 {
				break
			}
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "item"
	}
	return b.String()
}

// WriteTable writes the items of b as a table for people: line, status,
// run ID and topic.
func WriteTable(w io.Writer, b *madspark.Batch) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tSTATUS\tRUN ID\tTOPIC")
	for _, it := range b.Items {
		topic := oneLine(it.Topic)
		if r := []rune(topic); len(r) > 48 {
			topic = string(r[:47]) + "…"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Line, ItemStatus(it), it.RunID, input.Show(topic))
	}
	return tw.Flush()
}
