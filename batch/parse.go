package batch

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/spark"
)

// Limits of a batch file, the same on every surface.
const (
	// MaxBytes bounds the size of a batch file.
	MaxBytes = 8 << 20
	// MaxRows bounds the rows (items) of a batch file, rejected ones
	// included.
	MaxRows = 5000
)

// Row is one row (item) of a batch file, parsed and checked.
type Row struct {
	// Line is the row's line in the file, from 1: where a CSV record or a
	// JSON array element starts.
	Line int
	// Item is the row's position (from 1) in a JSON array; 0 in a CSV
	// file, where the line says it all.
	Item int
	// Topic is the row's title, as the pipeline's Topic gives it.
	Topic string
	// Tags are the row's labels, as given.
	Tags []string
	// Params are the pipeline's parameters, as JSON the registry accepts.
	Params json.RawMessage
	// Err says why the row cannot run; such a row is recorded, rejected.
	Err error
}

// Where locates the row for a message: its line, and its position in a
// JSON array.
func (r Row) Where() string {
	if r.Item > 0 {
		return fmt.Sprintf("item %d (line %d)", r.Item, r.Line)
	}
	return fmt.Sprintf("line %d", r.Line)
}

// Reason is the row's error in one line, prefixed with its position in a
// JSON array; empty for a good row.
func (r Row) Reason() string {
	if r.Err == nil {
		return ""
	}
	msg := oneLine(r.Err.Error())
	if r.Item > 0 {
		msg = fmt.Sprintf("item %d: %s", r.Item, msg)
	}
	return msg
}

// Input is a parsed batch file.
type Input struct {
	Rows []Row
	// Warnings are remarks on the file that do not stop it, such as
	// columns that are ignored.
	Warnings []string
}

// Accepted counts the rows that can run.
func (in *Input) Accepted() int {
	n := 0
	for _, r := range in.Rows {
		if r.Err == nil {
			n++
		}
	}
	return n
}

// FileError says why a batch file as a whole cannot be used: it is empty,
// has no header, is not a JSON array, is too large.
type FileError struct {
	// Name is the file's name, if it has one.
	Name string
	Msg  string
	// TooLarge is set when the file is over MaxBytes or MaxRows.
	TooLarge bool
}

func (e *FileError) Error() string {
	if e.Name == "" {
		return e.Msg
	}
	return e.Name + ": " + e.Msg
}

// Options change how Parse reads a file.
type Options struct {
	// IgnoreUnknownColumns lets a CSV file have columns that are not
	// Columns: they are ignored, with a warning, rather than refuse the
	// file (a misspelt parameter would otherwise run with its default).
	IgnoreUnknownColumns bool
}

// Parse reads a batch file of pipeline pipe: a JSON array when it starts
// with "[" or "{" or is named *.json, otherwise the seed's CSV (spark
// only). A problem with the file as a whole is a *FileError (or an error
// wrapping pipeline.ErrUnknown for an unknown pipeline): a CSV column that
// is not one of Columns is one, unless opts ignore it. A problem with one
// row is kept in the row, with its line, and the other rows are
// unaffected; its text is checked as input.Check checks it.
func Parse(reg *pipeline.Registry, pipe, name string, data []byte, opts Options) (*Input, error) {
	def, err := reg.Get(pipe)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBytes {
		return nil, &FileError{Name: name, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxBytes), TooLarge: true}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var in *Input
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{') || strings.EqualFold(filepath.Ext(name), ".json"):
		in, err = parseJSON(reg, def, name, data)
	case def.Name != "spark":
		return nil, &FileError{Name: name, Msg: fmt.Sprintf("CSV is spark's batch format; give %s a JSON array of its parameters", def.Name)}
	default:
		in, err = parseCSV(reg, name, data, opts)
	}
	if err != nil {
		return nil, err
	}
	if len(in.Rows) == 0 {
		return nil, &FileError{Name: name, Msg: "no items"}
	}
	return in, nil
}

// tooMany is the error of a file with more than MaxRows rows.
func tooMany(name string) error {
	return &FileError{Name: name, Msg: fmt.Sprintf("more than %d items; split the file", MaxRows), TooLarge: true}
}

// Columns are the columns of the seed's batch CSV; theme and constraints
// are the legacy names of topic and context.
var Columns = []string{"topic", "theme", "context", "constraints", "temperature_preset", "num_candidates", "num_top_candidates", "tags"}

func parseCSV(reg *pipeline.Registry, name string, data []byte, opts Options) (*Input, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err == io.EOF {
		return nil, &FileError{Name: name, Msg: "empty file"}
	}
	if err != nil {
		return nil, &FileError{Name: name, Msg: fmt.Sprintf("header: %v", err)}
	}
	col := map[string]int{}
	var unknown []string
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if _, dup := col[h]; dup && h != "" {
			return nil, &FileError{Name: name, Msg: fmt.Sprintf("column %q appears twice in the header", h)}
		}
		col[h] = i
		if !slices.Contains(Columns, h) {
			unknown = append(unknown, fmt.Sprintf("%q (column %d)", h, i+1))
		}
	}
	_, hasTopic := col["topic"]
	_, hasTheme := col["theme"]
	if !hasTopic && !hasTheme {
		return nil, &FileError{Name: name, Msg: fmt.Sprintf("the first line must be a header naming the columns (topic, context, temperature_preset, num_candidates, tags), got %q", strings.Join(header, ","))}
	}
	in := &Input{}
	switch {
	case len(unknown) > 0 && !opts.IgnoreUnknownColumns:
		what := "unknown column " + unknown[0]
		if len(unknown) > 1 {
			what = "unknown columns " + strings.Join(unknown, ", ")
		}
		return nil, &FileError{Name: name, Msg: fmt.Sprintf("%s: the columns are %s; to run the file ignoring unknown columns, pass --ignore-unknown-columns (API: ?ignore_unknown_columns=true)",
			what, strings.Join(Columns, ", "))}
	case len(unknown) > 0:
		in.Warnings = append(in.Warnings, "ignoring unknown columns "+strings.Join(unknown, ", "))
	}
	// offset is the number of lines before the reader's start: a quoted
	// field left open would take every later line into itself, so the
	// reading starts again on the line after the one it opened on.
	offset := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if len(in.Rows) >= MaxRows {
			return nil, tooMany(name)
		}
		if pe, ok := errors.AsType[*csv.ParseError](err); ok {
			in.Rows = append(in.Rows, Row{Line: offset + pe.StartLine, Err: fmt.Errorf("malformed CSV: %v", pe.Err)})
			if pe.Line > pe.StartLine {
				offset += pe.StartLine
				r = csv.NewReader(bytes.NewReader(afterLines(data, offset)))
				r.FieldsPerRecord = -1
			}
			continue
		}
		if err != nil {
			return nil, &FileError{Name: name, Msg: err.Error()}
		}
		line, _ := r.FieldPos(0)
		line += offset
		if err := checkFields(header, rec); err != nil {
			in.Rows = append(in.Rows, Row{Line: line, Err: err})
			continue
		}
		// Missing trailing fields are empty; extra ones are a mistake.
		if len(rec) > len(header) {
			in.Rows = append(in.Rows, Row{Line: line, Err: fmt.Errorf("%d fields, but the header has %d", len(rec), len(header))})
			continue
		}
		for len(rec) < len(header) {
			rec = append(rec, "")
		}
		row := map[string]any{}
		for _, k := range Columns {
			if i, ok := col[k]; ok {
				if v := strings.TrimSpace(rec[i]); v != "" {
					row[k] = v
				}
			}
		}
		in.Rows = append(in.Rows, sparkRow(reg, line, row))
	}
	return in, nil
}

// afterLines returns what follows the first n lines of data.
func afterLines(data []byte, n int) []byte {
	for ; n > 0; n-- {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	return data
}

// checkFields checks the fields of a record as input.Text checks text,
// naming each by its column.
func checkFields(header, rec []string) error {
	for i, f := range rec {
		field := fmt.Sprintf("column %d", i+1)
		if i < len(header) && strings.TrimSpace(header[i]) != "" {
			field = input.Show(strings.ToLower(strings.TrimSpace(header[i])))
		}
		if err := input.Text(field, f); err != nil {
			return err
		}
	}
	return nil
}

func parseJSON(reg *pipeline.Registry, def pipeline.Definition, name string, data []byte) (*Input, error) {
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
		return nil, &FileError{Name: name, Msg: fmt.Sprintf(`want a JSON array of items, [{"topic": …}, …], got %s`, got)}
	}
	in := &Input{}
	for n := 1; dec.More(); n++ {
		if n > MaxRows {
			return nil, tooMany(name)
		}
		line := 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n"))
		// The element starts after the separator and white space.
		rest := data[dec.InputOffset():]
		skip := len(rest) - len(bytes.TrimLeft(rest, ", \t\r\n"))
		line += bytes.Count(rest[:skip], []byte("\n"))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, &FileError{Name: name, Msg: fmt.Sprintf("item %d (line %d): invalid JSON: %v", n, line, strings.TrimPrefix(err.Error(), "json: "))}
		}
		if !utf8.Valid(raw) {
			in.Rows = append(in.Rows, Row{Line: line, Item: n, Err: errors.New("not valid UTF-8 text")})
			continue
		}
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil || obj == nil {
			in.Rows = append(in.Rows, Row{Line: line, Item: n, Err: errors.New("an item must be a JSON object")})
			continue
		}
		if err := input.Check(obj); err != nil {
			in.Rows = append(in.Rows, Row{Line: line, Item: n, Err: err})
			continue
		}
		var r Row
		if def.Name == "spark" {
			r = sparkRow(reg, line, obj)
		} else {
			r = Item(reg, def.Name, line, obj)
		}
		r.Item = n
		in.Rows = append(in.Rows, r)
	}
	if _, err := dec.Token(); err != nil {
		return nil, &FileError{Name: name, Msg: fmt.Sprintf("invalid JSON after the last item: %v", strings.TrimPrefix(err.Error(), "json: "))}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &FileError{Name: name, Msg: "invalid JSON after the last item: data after the array"}
	}
	return in, nil
}

// Item makes a row of pipeline pipe from its parameters as a JSON object
// (tags set apart), decoded strictly by the registry.
func Item(reg *pipeline.Registry, pipe string, line int, obj map[string]any) Row {
	r := Row{Line: line}
	if tags, ok := obj["tags"]; ok {
		if r.Tags, r.Err = tagsOf(tags); r.Err != nil {
			return r
		}
		delete(obj, "tags")
	}
	r.Params, r.Err = json.Marshal(obj)
	if r.Err != nil {
		return r
	}
	p, err := reg.Decode(pipe, r.Params)
	if err != nil {
		r.Err = err
		return r
	}
	if def, _ := reg.Get(pipe); def.Topic != nil {
		r.Topic = def.Topic(p)
	}
	return r
}

// sparkRow turns a row of the seed's batch format into spark parameters:
// legacy names map to canonical ones, a temperature preset to temperatures,
// and the rest is decoded strictly by the registry.
func sparkRow(reg *pipeline.Registry, line int, row map[string]any) Row {
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
	// CSV gives numbers as text.
	for _, k := range []string{"num_candidates", "num_top_candidates"} {
		if s, ok := row[k].(string); ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				return Row{Line: line, Topic: topicOf(row), Err: fmt.Errorf("%s: want an integer, got %q", k, s)}
			}
			row[k] = n
		}
	}
	if v, ok := row["temperature_preset"]; ok {
		name, _ := v.(string)
		t, err := spark.Preset(name)
		if err != nil {
			return Row{Line: line, Topic: topicOf(row), Err: fmt.Errorf("temperature_preset: %w", err)}
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
	r := Item(reg, "spark", line, row)
	if r.Topic == "" {
		r.Topic = topicOf(row)
	}
	return r
}

func topicOf(row map[string]any) string {
	s, _ := row["topic"].(string)
	return s
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

// tagsOf accepts an array of strings, or a string of tags separated by
// commas, semicolons or bars.
func tagsOf(v any) ([]string, error) {
	bad := errors.New("tags: want a string or an array of strings")
	var list []string
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, bad
			}
			list = append(list, s)
		}
	case []string:
		list = t
	case string:
		for _, s := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ';' || r == '|' }) {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
	default:
		return nil, bad
	}
	return list, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
