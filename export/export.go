// Package export renders a run of any registered pipeline as a file: JSON
// (the stored result in the run's envelope), CSV (the pipeline's Table),
// Markdown and PDF (both from the pipeline's Document, through
// document.Markdown and document/pdf). The API's downloads and `madspark
// export` use it.
package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/document/pdf"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
)

// Formats are the export formats.
var Formats = []string{"json", "csv", "markdown", "pdf"}

// Canonical is the export format name is another name of ("md" is
// markdown, as the MCP resource export.md has it), or name itself.
func Canonical(name string) string {
	if name == "md" {
		return "markdown"
	}
	return name
}

// MockNotice is what a mock run's exports say of themselves.
const MockNotice = "MOCK DATA: generated offline by the mock provider, not by a language model."

// Errors of Render.
var (
	// ErrFormat: not one of Formats.
	ErrFormat = errors.New("unknown export format")
	// ErrNoResult: the run did not succeed, so only its JSON exists.
	ErrNoResult = errors.New("the run has no result to export")
	// ErrUnsupported: the pipeline does not lay its runs out that way.
	ErrUnsupported = errors.New("the pipeline has no such export")
)

// File is a rendered export.
type File struct {
	// Name is madspark-<pipeline>-<id8>.<ext>, where id8 is the last 8
	// characters of the run's ID (a UUIDv7's first ones are its time, the
	// same for runs made within a minute).
	Name        string
	ContentType string
	Data        []byte
}

// Options tune the rendering.
type Options struct {
	// Font is the PDF's fallback TrueType font for characters the bundled
	// fonts lack; nil for none.
	Font []byte
}

// Ext returns the file extension of format: json, csv, md or pdf.
func Ext(format string) string {
	if format == "markdown" {
		return "md"
	}
	return format
}

// FileName is the name of run's export in format.
func FileName(run *madspark.Run, format string) string {
	id := run.ID
	if len(id) > 8 {
		id = id[len(id)-8:]
	}
	return fmt.Sprintf("madspark-%s-%s.%s", run.Pipeline, id, Ext(format))
}

// Render renders run, of the pipeline def, in format (or another name of
// one: Canonical). Every format but JSON needs a succeeded run, or a
// cancelled or interrupted one that kept what it had finished
// (ErrNoResult otherwise).
func Render(def pipeline.Definition, run *madspark.Run, format string, o Options) (*File, error) {
	format = Canonical(format)
	f := &File{Name: FileName(run, format)}
	kept := (run.Status == madspark.RunCancelled || run.Status == madspark.RunInterrupted) && len(run.Result) > 0
	if format != "json" && run.Status != madspark.RunSucceeded && !kept {
		switch format {
		case "csv", "markdown", "pdf":
			return nil, fmt.Errorf("run %s is %s: %w; its JSON export says why", run.ID, run.Status, ErrNoResult)
		}
	}
	var err error
	switch format {
	case "json":
		f.ContentType = "application/json"
		f.Data, err = JSON(run)
	case "csv":
		f.ContentType = "text/csv; charset=utf-8"
		f.Data, err = CSV(def, run)
	case "markdown":
		f.ContentType = "text/markdown; charset=utf-8"
		var d *document.Document
		if d, err = docOf(def, run); err == nil {
			f.Data = document.Markdown(d)
		}
	case "pdf":
		f.ContentType = "application/pdf"
		var d *document.Document
		if d, err = docOf(def, run); err == nil {
			var buf bytes.Buffer
			err = pdf.Render(&buf, d, pdf.Options{Created: run.FinishedAt, Fallback: o.Font})
			f.Data = buf.Bytes()
		}
	default:
		return nil, fmt.Errorf("%w %q (want %s)", ErrFormat, format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

func docOf(def pipeline.Definition, run *madspark.Run) (*document.Document, error) {
	if def.Document == nil {
		return nil, fmt.Errorf("%s: %w (markdown, pdf)", def.Name, ErrUnsupported)
	}
	d, err := def.Document(run)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	if run.Mode == "mock" && !strings.Contains(d.Notice, "MOCK") {
		return nil, fmt.Errorf("run %s: the %s document of a mock run does not say it is mock data", run.ID, def.Name)
	}
	return d, nil
}

// Envelope is a run's JSON export: the run's record around its result.
type Envelope struct {
	RunID      string             `json:"run_id"`
	Pipeline   string             `json:"pipeline"`
	Status     madspark.RunStatus `json:"status"`
	Mode       string             `json:"mode"`
	Notice     string             `json:"notice,omitempty"`
	Provider   string             `json:"provider"`
	Model      string             `json:"model"`
	Tags       []string           `json:"tags,omitempty"`
	CreatedAt  time.Time          `json:"created_at"`
	FinishedAt *time.Time         `json:"finished_at,omitempty"`
	DurationMS int64              `json:"duration_ms,omitempty"`
	Params     json.RawMessage    `json:"params"`
	Result     json.RawMessage    `json:"result,omitempty"`
	Error      string             `json:"error,omitempty"`
	Usage      llm.Usage          `json:"usage"`
}

// JSON is run's JSON export: its Envelope, indented.
func JSON(run *madspark.Run) ([]byte, error) {
	e := Envelope{RunID: run.ID, Pipeline: run.Pipeline, Status: run.Status, Mode: run.Mode, Provider: run.Provider,
		Model: run.Model, Tags: run.Tags, CreatedAt: run.CreatedAt.UTC(), Params: run.Params, Error: run.Error, Usage: run.Usage}
	if run.Mode == "mock" {
		e.Notice = MockNotice
	}
	if len(e.Params) == 0 {
		e.Params = json.RawMessage("{}")
	}
	if !run.FinishedAt.IsZero() {
		t := run.FinishedAt.UTC()
		e.FinishedAt, e.DurationMS = &t, run.FinishedAt.Sub(run.CreatedAt).Milliseconds()
	}
	if run.Status == madspark.RunSucceeded {
		e.Result = run.Result
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return buf.Bytes(), nil
}

// CSV is run's CSV export: the pipeline's Table, each row led by the run's
// ID and mode ("mock" on every row of mock data), every cell safe to open
// in a spreadsheet (see SafeCell).
func CSV(def pipeline.Definition, run *madspark.Run) ([]byte, error) {
	if def.Table == nil {
		return nil, fmt.Errorf("%s: %w (csv)", def.Name, ErrUnsupported)
	}
	header, rows, err := def.Table(run)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	rec := append([]string{"run_id", "mode"}, header...)
	if err := w.Write(safeRow(rec)); err != nil {
		return nil, err
	}
	for i, row := range rows {
		if len(row) != len(header) {
			return nil, fmt.Errorf("run %s: %s table row %d has %d cells for %d columns", run.ID, def.Name, i, len(row), len(header))
		}
		if err := w.Write(safeRow(append([]string{run.ID, run.Mode}, row...))); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

func safeRow(row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = SafeCell(c)
	}
	return out
}

// SafeCell keeps a spreadsheet from taking a cell for a formula: text that
// starts with =, +, -, @, a tab or a carriage return gets a leading
// apostrophe, unless it is a plain number such as -1.5.
func SafeCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		if _, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpP_") {
			return s // a number, which no spreadsheet evaluates
		}
		return "'" + s
	}
	return s
}

// Number formats a score or count for a table cell.
func Number(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
