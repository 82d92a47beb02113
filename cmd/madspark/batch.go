package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/spark"
)

// batchItem is one row of a batch file, parsed.
type batchItem struct {
	line int
	// item is the item's position (from 1) in a JSON array; 0 in a CSV
	// file, where the line says it all.
	item   int
	topic  string
	tags   []string
	params json.RawMessage
	err    error
}

// batchColumns are the columns of the seed's batch CSV; theme and
// constraints are the legacy names of topic and context.
var batchColumns = []string{"topic", "theme", "context", "constraints", "temperature_preset", "num_candidates", "num_top_candidates", "tags"}

func (c *cli) batchCmd() *cobra.Command {
	var (
		output, exportDir, pipe string
		concurrency             int
		noWorker, noCache       bool
		timeout                 time.Duration
	)
	cmd := &cobra.Command{
		Use:   "batch FILE",
		Short: "Run every row of a CSV or JSON file as a job, and collect the results",
		Long: `Runs each item of FILE as a job of the queue and waits for all of them.

FILE is a CSV file with a header row: topic (or the legacy theme),
context (or constraints), temperature_preset, num_candidates,
num_top_candidates, tags; other columns are ignored with a warning. Or a JSON
array of objects with the same fields; with --pipeline NAME, a JSON array of
NAME's parameters (and tags). A bad item is reported with its line and the
others still run.

Items are worked in this process (--concurrency at once) unless --no-worker,
in which case madspark worker processes on the same database work them. The
results (per item: line, topic, run_id, status, error, result) go to
--output atomically, or to standard output. Exit status 1 when any item
failed. "madspark batch status ID" shows a batch from anywhere.`,
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if noWorker && cmd.Flags().Changed("concurrency") {
				return usagef("--concurrency sets the in-process worker; it does nothing with --no-worker")
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return usageError{fmt.Errorf("read batch file: %w", err)}
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
			def, err := reg.Get(pipe)
			if err != nil {
				return usageError{err}
			}
			items, err := c.parseBatch(args[0], data, reg, def)
			if err != nil {
				return err
			}
			if a.info.Mock {
				fmt.Fprintf(c.stderr, "madspark: mock mode (%s): outputs are mock data, no model is called\n", a.info.Reason)
			}
			q, err := c.openQueue(ctx, a, reg, queueOptions{})
			if err != nil {
				return err
			}
			b, err := c.enqueueBatch(ctx, a, q, def, args[0], items, timeout)
			if err != nil {
				return err
			}
			var stopWorker func()
			wf := &workerFlags{maxConcurrent: concurrency, lease: jobs.DefaultLeaseTTL, drain: 10 * time.Second}
			if !noWorker {
				if _, stopWorker, err = c.startWorker(ctx, a, reg, wf); err != nil {
					return err
				}
			}
			b, waitErr := c.waitBatch(ctx, a, b)
			if stopWorker != nil {
				if waitErr != nil {
					// Interrupted: the running runs go back to the queue at once.
					wf.drain = 0
				}
				stopWorker()
			}
			return c.finishBatch(ctx, a, reg, b, output, exportDir, waitErr)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", "", "write the results to FILE (atomically) instead of standard output")
	fs.StringVar(&exportDir, "export-dir", "", "write each succeeded item's files to a directory of its own under DIR")
	fs.IntVar(&concurrency, "concurrency", 0, "items worked at once in this process (default $MADSPARK_PROVIDER_CONCURRENCY, else 4)")
	fs.StringVar(&pipe, "pipeline", "spark", "the pipeline of every item (other than spark: JSON input of its parameters)")
	fs.BoolVar(&noWorker, "no-worker", false, "only enqueue and wait: madspark worker processes on the same database work the items")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "give up on an item after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache (in-process worker)")
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
			b, err := a.db.Batch(ctx, args[0])
			if errors.Is(err, madspark.ErrNotFound) {
				return usagef("no batch %s", args[0])
			}
			if err != nil {
				return err
			}
			var waitErr error
			if wait {
				b, waitErr = c.waitBatch(ctx, a, b)
			}
			reg, err := c.registry(a)
			if err != nil {
				return err
			}
			if output != "" || exportDir != "" || format == "json" {
				return c.finishBatch(ctx, a, reg, b, output, exportDir, waitErr)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LINE\tSTATUS\tRUN ID\tTOPIC")
			for _, it := range b.Items {
				status := string(it.Status)
				if it.RunID == "" {
					status = "rejected"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Line, status, it.RunID, shorten(it.Topic, 48))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			done, failed, _ := batchCounts(b)
			fmt.Fprintf(c.stderr, "madspark: batch %s (%s, %s): %d items, %d finished, %d failed\n", b.ID, b.Pipeline, b.Source, len(b.Items), done, failed)
			if waitErr == nil && failed > 0 {
				// As with --output: exit 1 when any item failed.
				return fmt.Errorf("batch %s: %d of %d items failed", b.ID, failed, len(b.Items))
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

// parseBatch reads a batch file: a JSON array when it starts with "[",
// otherwise the seed's CSV. Problems with the file as a whole are usage
// errors; problems with one item are kept in the item.
func (c *cli) parseBatch(name string, data []byte, reg *pipeline.Registry, def pipeline.Definition) ([]batchItem, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var (
		items []batchItem
		err   error
	)
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{') || strings.EqualFold(filepath.Ext(name), ".json") {
		items, err = c.parseBatchJSON(name, data, reg, def)
	} else if def.Name != "spark" {
		return nil, usagef("%s: CSV is spark's batch format; give --pipeline %s a JSON array of its parameters", name, def.Name)
	} else {
		items, err = c.parseBatchCSV(name, data, reg)
	}
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, usagef("%s: no items", name)
	}
	for _, it := range items {
		if it.err != nil {
			fmt.Fprintf(c.stderr, "madspark: %s: %s: %s\n", name, it.where(), oneLine(it.err.Error()))
		}
	}
	return items, nil
}

func (c *cli) parseBatchCSV(name string, data []byte, reg *pipeline.Registry) ([]batchItem, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err == io.EOF {
		return nil, usagef("%s: empty file", name)
	}
	if err != nil {
		return nil, usagef("%s: header: %v", name, err)
	}
	col := map[string]int{}
	var unknown []string
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := col[h]; dup && h != "" {
			return nil, usagef("%s: column %q appears twice in the header", name, h)
		}
		col[h] = i
		if !slices.Contains(batchColumns, h) {
			unknown = append(unknown, strconv.Quote(h))
		}
	}
	_, hasTopic := col["topic"]
	_, hasTheme := col["theme"]
	if !hasTopic && !hasTheme {
		return nil, usagef("%s: the first line must be a header naming the columns (topic, context, temperature_preset, num_candidates, tags), got %q", name, strings.Join(header, ","))
	}
	if len(unknown) > 0 {
		fmt.Fprintf(c.stderr, "madspark: %s: ignoring unknown columns %s\n", name, strings.Join(unknown, ", "))
	}
	var items []batchItem
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			items = append(items, batchItem{line: pe.StartLine, err: fmt.Errorf("malformed CSV: %v", pe.Err)})
			continue
		}
		if err != nil {
			return nil, usagef("%s: %v", name, err)
		}
		line, _ := r.FieldPos(0)
		if err := checkFields(rec); err != nil {
			items = append(items, batchItem{line: line, err: err})
			continue
		}
		// Missing trailing fields are empty; extra ones are a mistake.
		if len(rec) > len(header) {
			items = append(items, batchItem{line: line, err: fmt.Errorf("%d fields, but the header has %d", len(rec), len(header))})
			continue
		}
		for len(rec) < len(header) {
			rec = append(rec, "")
		}
		get := func(names ...string) string {
			for _, n := range names {
				if i, ok := col[n]; ok && strings.TrimSpace(rec[i]) != "" {
					return strings.TrimSpace(rec[i])
				}
			}
			return ""
		}
		row := map[string]any{}
		for _, k := range []string{"topic", "theme", "context", "constraints", "temperature_preset", "num_candidates", "num_top_candidates", "tags"} {
			if v := get(k); v != "" {
				row[k] = v
			}
		}
		items = append(items, sparkItem(reg, line, row))
	}
	return items, nil
}

func (c *cli) parseBatchJSON(name string, data []byte, reg *pipeline.Registry, def pipeline.Definition) ([]batchItem, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		got := "something else"
		switch {
		case err != nil:
			got = "invalid JSON"
		case tok == json.Delim('{'):
			got = "one object"
		}
		return nil, usagef(`%s: want a JSON array of items, [{"topic": …}, …], got %s`, name, got)
	}
	var items []batchItem
	for n := 1; dec.More(); n++ {
		line := 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n"))
		// The element starts after the separator and white space.
		rest := data[dec.InputOffset():]
		skip := len(rest) - len(bytes.TrimLeft(rest, ", \t\r\n"))
		line += bytes.Count(rest[:skip], []byte("\n"))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, usagef("%s: item %d (line %d): invalid JSON: %v", name, n, line, err)
		}
		if err := checkJSONText(raw); err != nil {
			items = append(items, batchItem{line: line, item: n, err: err})
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			items = append(items, batchItem{line: line, item: n, err: errors.New("an item must be a JSON object")})
			continue
		}
		if def.Name == "spark" {
			row := map[string]any{}
			for k, v := range obj {
				var s any
				d := json.NewDecoder(bytes.NewReader(v))
				d.UseNumber()
				_ = d.Decode(&s)
				row[k] = s
			}
			it := sparkItem(reg, line, row)
			it.item = n
			items = append(items, it)
			continue
		}
		it := batchItem{line: line, item: n}
		if tags, ok := obj["tags"]; ok {
			it.tags, it.err = parseTags(tags)
			delete(obj, "tags")
		}
		if it.err == nil {
			it.params, _ = json.Marshal(obj)
			p, err := reg.Decode(def.Name, it.params)
			it.err = err
			if err == nil && def.Topic != nil {
				it.topic = def.Topic(p)
			}
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil {
		return nil, usagef("%s: invalid JSON after the last item: %v", name, err)
	}
	return items, nil
}

// sparkItem turns a row of the seed's batch format into spark parameters:
// legacy names map to canonical ones, a temperature preset to temperatures,
// tags are set apart, and the rest is decoded strictly by the registry.
func sparkItem(reg *pipeline.Registry, line int, row map[string]any) batchItem {
	it := batchItem{line: line}
	alias := func(canon, legacy string) {
		if v, ok := row[legacy]; ok {
			if _, has := row[canon]; !has || row[canon] == "" {
				row[canon] = v
			}
			delete(row, legacy)
		}
	}
	alias("topic", "theme")
	alias("context", "constraints")
	if t, ok := row["tags"]; ok {
		b, _ := json.Marshal(t)
		if it.tags, it.err = parseTags(b); it.err != nil {
			return it
		}
		delete(row, "tags")
	}
	if s, ok := row["topic"].(string); ok {
		it.topic = s
	}
	// CSV gives numbers as text.
	for _, k := range []string{"num_candidates", "num_top_candidates"} {
		if s, ok := row[k].(string); ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				it.err = fmt.Errorf("%s: want an integer, got %q", k, s)
				return it
			}
			row[k] = n
		}
	}
	if v, ok := row["temperature_preset"]; ok {
		name, _ := v.(string)
		t, err := spark.Preset(name)
		if err != nil {
			it.err = fmt.Errorf("temperature_preset: %w", err)
			return it
		}
		row["temperatures"] = t
		delete(row, "temperature_preset")
	}
	// Fewer ideas than the default number argued over: argue over all.
	if _, set := row["num_top_candidates"]; !set {
		if n, err := toInt(row["num_candidates"]); err == nil && n >= 1 && n < spark.DefaultParams().NumTopCandidates {
			row["num_top_candidates"] = n
		}
	}
	it.params, _ = json.Marshal(row)
	_, it.err = reg.Decode("spark", it.params)
	return it
}

// where locates an item for a message: its line, and its position in a
// JSON array.
func (it batchItem) where() string {
	if it.item > 0 {
		return fmt.Sprintf("item %d (line %d)", it.item, it.line)
	}
	return fmt.Sprintf("line %d", it.line)
}

func toInt(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case json.Number:
		i, err := n.Int64()
		return int(i), err
	}
	return 0, errors.New("not an integer")
}

// parseTags accepts a JSON array of strings, or a string of tags separated
// by commas, semicolons or bars.
func parseTags(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("tags: want a string or an array of strings")
	}
	for _, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '|' }) {
		if t = strings.TrimSpace(t); t != "" {
			list = append(list, t)
		}
	}
	return list, nil
}

// enqueueBatch enqueues the valid items and records the batch, rejected
// items included.
func (c *cli) enqueueBatch(ctx context.Context, a *app, q *jobs.Queue, def pipeline.Definition, source string, items []batchItem, timeout time.Duration) (*madspark.Batch, error) {
	var reqs []jobs.Request
	for _, it := range items {
		if it.err == nil {
			reqs = append(reqs, jobs.Request{Pipeline: def.Name, Params: it.params, Timeout: timeout})
		}
	}
	runs, err := q.EnqueueMany(ctx, reqs)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	b := &madspark.Batch{ID: id.String(), Pipeline: def.Name, Source: filepath.Base(source)}
	next := 0
	for _, it := range items {
		bi := madspark.BatchItem{Line: it.line, Topic: it.topic, Tags: it.tags}
		if it.err != nil {
			bi.Error = oneLine(it.err.Error())
			if it.item > 0 {
				bi.Error = fmt.Sprintf("item %d: %s", it.item, bi.Error)
			}
		} else {
			bi.RunID, bi.Status = runs[next].ID, madspark.RunQueued
			next++
		}
		b.Items = append(b.Items, bi)
	}
	if err := a.db.CreateBatch(ctx, b); err != nil {
		return nil, err
	}
	fmt.Fprintf(c.stderr, "madspark: batch %s: %d items queued, %d rejected (madspark batch status %s)\n", b.ID, len(runs), len(items)-len(runs), b.ID)
	return b, nil
}

// batchCounts counts a batch's finished and failed items (rejected ones
// included) and its running ones.
func batchCounts(b *madspark.Batch) (done, failed, running int) {
	for _, it := range b.Items {
		switch {
		case it.RunID == "":
			done++
			failed++
		case it.Status == madspark.RunSucceeded:
			done++
		case it.Status.Final():
			done++
			failed++
		case it.Status == madspark.RunRunning:
			running++
		}
	}
	return done, failed, running
}

// waitBatch waits until every run of b has finished, drawing a progress bar
// on a terminal. It returns the batch as last read, and an error if ctx
// ended first.
func (c *cli) waitBatch(ctx context.Context, a *app, b *madspark.Batch) (*madspark.Batch, error) {
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	hinted := false
	bar := newBatchBar(c.stderr)
	defer func() {
		if c.progress {
			bar.clear()
		}
	}()
	for {
		done, failed, running := batchCounts(b)
		if c.progress {
			bar.draw(done, len(b.Items), failed, running)
		}
		if done == len(b.Items) {
			return b, nil
		}
		if !hinted && done == 0 && running == 0 && time.Since(start) > 5*time.Second {
			hinted = true
			if leases, err := a.db.Leases(ctx); err == nil && !slices.ContainsFunc(leases, func(l madspark.WorkerLease) bool { return !l.Expired }) {
				fmt.Fprintf(c.stderr, "\r\033[Kmadspark: no worker is running on this database; start one for the %s queue (the same provider settings): madspark worker\n", a.info.Name)
			}
		}
		select {
		case <-ctx.Done():
			return b, fmt.Errorf("batch %s interrupted: its unfinished runs stay queued; a worker finishes them (madspark worker), then: madspark batch status %s --wait --output FILE", b.ID, b.ID)
		case <-tick.C:
		}
		nb, err := a.db.Batch(ctx, b.ID)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return b, err
		}
		b = nb
	}
}

// batchResult is one item in results.json.
type batchResult struct {
	Line   int             `json:"line"`
	Topic  string          `json:"topic"`
	Tags   []string        `json:"tags,omitempty"`
	RunID  string          `json:"run_id,omitempty"`
	Status string          `json:"status"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// finishBatch writes the results (to output, atomically, or to standard
// output) and the exports, and reports. The error is waitErr, or a failure
// when any item failed.
func (c *cli) finishBatch(ctx context.Context, a *app, reg *pipeline.Registry, b *madspark.Batch, output, exportDir string, waitErr error) error {
	ctx = context.WithoutCancel(ctx)
	out := struct {
		BatchID   string        `json:"batch_id"`
		Pipeline  string        `json:"pipeline"`
		Source    string        `json:"source"`
		Mode      string        `json:"mode"`
		Notice    string        `json:"notice,omitempty"`
		Total     int           `json:"total"`
		Succeeded int           `json:"succeeded"`
		Failed    int           `json:"failed"`
		Pending   int           `json:"pending"`
		Items     []batchResult `json:"items"`
	}{BatchID: b.ID, Pipeline: b.Pipeline, Source: b.Source, Total: len(b.Items), Items: []batchResult{}}
	def, defErr := reg.Get(b.Pipeline)
	var failedLines []string
	for _, it := range b.Items {
		r := batchResult{Line: it.Line, Topic: it.Topic, Tags: it.Tags, RunID: it.RunID, Status: string(it.Status), Error: it.Error}
		if it.RunID == "" {
			r.Status = "rejected"
		} else if rec, err := a.db.Run(ctx, it.RunID); err != nil {
			r.Status, r.Error = "missing", err.Error()
		} else {
			r.Status, r.Error, r.Result = string(rec.Status), rec.Error, rec.Result
			if out.Mode == "" || rec.Mode == "mock" {
				out.Mode = rec.Mode
			}
			if rec.Status == madspark.RunSucceeded && exportDir != "" && defErr == nil && def.Files != nil {
				if err := exportItem(exportDir, it, def, rec); err != nil {
					return err
				}
			}
		}
		switch madspark.RunStatus(r.Status) {
		case madspark.RunSucceeded:
			out.Succeeded++
		case madspark.RunQueued, madspark.RunRunning:
			out.Pending++
		default:
			out.Failed++
			failedLines = append(failedLines, strconv.Itoa(it.Line))
		}
		out.Items = append(out.Items, r)
	}
	if out.Mode == "mock" {
		out.Notice = "MOCK DATA: generated offline by the mock provider, not by a language model."
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if output == "" {
		if _, err := c.stdout.Write(data); err != nil {
			return err
		}
	} else if err := writeFile(output, data); err != nil {
		return err
	}
	where := "standard output"
	if output != "" {
		where = output
	}
	fmt.Fprintf(c.stderr, "madspark: batch %s: %d succeeded, %d failed, %d unfinished; results in %s\n", b.ID, out.Succeeded, out.Failed, out.Pending, where)
	if exportDir != "" {
		fmt.Fprintf(c.stderr, "madspark: exports in %s\n", exportDir)
	}
	if waitErr != nil {
		return waitErr
	}
	if out.Failed > 0 {
		return fmt.Errorf("batch %s: %d of %d items failed (lines %s)", b.ID, out.Failed, out.Total, strings.Join(failedLines, ", "))
	}
	return nil
}

// exportItem writes a succeeded item's files to a directory named after its
// line, topic and run, so that no two items of any batch share one.
func exportItem(dir string, it madspark.BatchItem, def pipeline.Definition, rec *madspark.Run) error {
	files, err := def.Files(rec)
	if err != nil {
		return fmt.Errorf("export line %d: %w", it.Line, err)
	}
	sub := fmt.Sprintf("line%04d-%s-%s", it.Line, slug(it.Topic), rec.ID[max(0, len(rec.ID)-12):])
	for name, data := range files {
		if err := writeFile(filepath.Join(dir, sub, filepath.FromSlash(name)), data); err != nil {
			return err
		}
	}
	return nil
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

// shorten cuts s to n characters for a table.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
