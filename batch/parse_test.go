package batch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/store/sqlite"
)

func registry(t testing.TB) *pipeline.Registry {
	t.Helper()
	db, err := sqlite.Open(t.Context(), t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg := pipeline.NewRegistry()
	for _, def := range []func() (pipeline.Definition, error){spark.Definition, func() (pipeline.Definition, error) { return chaos.Definition(db) }} {
		d, err := def()
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestParseCSV(t *testing.T) {
	reg := registry(t)
	in, err := batch.Parse(reg, "spark", "ideas.csv", []byte("\xef\xbb\xbftopic,context,temperature_preset,num_candidates,tags,owner\n"+
		"urban farming,low-cost,creative,3,\"food, cities\",ana\n"+
		"AI in education,,balanced,many,edu,bo\n"+
		"\"multi\nline\",x,,2,,\n"+
		"ocean,,wild,2,,cy,extra\n"+
		"bad\xffutf8,,,,,\n"+
		"theme only\n"+
		"title\x1b]0;pwned\x07,,,,,\n"), batch.Options{IgnoreUnknownColumns: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Warnings) != 1 || in.Warnings[0] != `ignoring unknown columns "owner" (column 6)` {
		t.Errorf("warnings %q", in.Warnings)
	}
	want := []struct {
		line  int
		topic string
		err   string
	}{
		{2, "urban farming", ""},
		{3, "AI in education", `num_candidates: want an integer, got "many"`},
		{4, "multi\nline", ""},
		{6, "", "7 fields, but the header has 6"},
		{7, "", "not valid UTF-8"},
		{8, "theme only", ""},
		{9, "", "topic contains the control character U+001B"},
	}
	if len(in.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(in.Rows), len(want), in.Rows)
	}
	for i, w := range want {
		r := in.Rows[i]
		if r.Line != w.line || r.Topic != w.topic || (w.err == "") != (r.Err == nil) || r.Err != nil && !strings.Contains(r.Err.Error(), w.err) {
			t.Errorf("row %d = line %d topic %q err %v; want line %d topic %q err %q", i, r.Line, r.Topic, r.Err, w.line, w.topic, w.err)
		}
	}
	if got := in.Rows[0].Tags; len(got) != 2 || got[0] != "food" || got[1] != "cities" {
		t.Errorf("tags %q", got)
	}
	if !strings.Contains(string(in.Rows[0].Params), `"temperatures"`) || !strings.Contains(string(in.Rows[0].Params), `"context":"low-cost"`) {
		t.Errorf("params %s", in.Rows[0].Params)
	}
	// Fewer candidates than the default argued over: all are.
	if !strings.Contains(string(in.Rows[2].Params), `"num_top_candidates":2`) {
		t.Errorf("params %s", in.Rows[2].Params)
	}
	if in.Accepted() != 3 {
		t.Errorf("accepted %d", in.Accepted())
	}
}

func TestParseJSON(t *testing.T) {
	reg := registry(t)
	in, err := batch.Parse(reg, "spark", "x.json", []byte(`[
  {"theme": "urban farming", "constraints": "cheap", "num_candidates": 2, "tags": ["a", "b"]},
  {"topic": "ocean cleanup",
   "num_candidates": "three"},
  "not an object",
  {"topic": "nul \u0000 inside"},
  {"topic": "remote work", "num_candidates": 1e400},
  {"topic": "remote work", "tags": 5},
  {"topic": "fine"}
]`), batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line int
		err  string
	}{{2, ""}, {3, `num_candidates: want an integer, got "three"`}, {5, "an item must be a JSON object"}, {6, "NUL"}, {7, "num_candidates"}, {8, "tags: want a string"}, {9, ""}}
	if len(in.Rows) != len(want) {
		t.Fatalf("%d rows: %+v", len(in.Rows), in.Rows)
	}
	for i, w := range want {
		r := in.Rows[i]
		if r.Line != w.line || r.Item != i+1 || (w.err == "") != (r.Err == nil) || r.Err != nil && !strings.Contains(r.Err.Error(), w.err) {
			t.Errorf("row %d = line %d item %d err %v; want line %d err %q", i, r.Line, r.Item, r.Err, w.line, w.err)
		}
	}
	if in.Rows[0].Topic != "urban farming" || !strings.Contains(string(in.Rows[0].Params), `"context":"cheap"`) {
		t.Errorf("legacy names: %+v %s", in.Rows[0], in.Rows[0].Params)
	}
	if got := in.Rows[1].Reason(); !strings.HasPrefix(got, "item 2: ") {
		t.Errorf("reason %q", got)
	}

	// Another pipeline, by its own parameters.
	in, err = batch.Parse(reg, "chaos", "c.json", []byte(`[{"prompt": "food waste", "seed": 1, "tags": "x; y"}, {"prompt": "noise", "colour": "red"}]`), batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Rows[0].Err != nil || in.Rows[0].Topic != "food waste" || len(in.Rows[0].Tags) != 2 {
		t.Errorf("chaos row 1: %+v", in.Rows[0])
	}
	if in.Rows[1].Err == nil || !strings.Contains(in.Rows[1].Err.Error(), "colour: unknown field") {
		t.Errorf("chaos row 2: %+v", in.Rows[1])
	}
}

func TestParseFileErrors(t *testing.T) {
	reg := registry(t)
	big := "topic\n" + strings.Repeat("x\n", batch.MaxRows+1)
	for _, tc := range []struct {
		pipe, name, data, want string
		tooLarge               bool
	}{
		{"spark", "a.csv", "", "a.csv: empty file", false},
		{"spark", "a.csv", "   \n", "the first line must be a header", false},
		{"spark", "a.csv", "urban farming,cheap\nocean,clean\n", "the first line must be a header", false},
		{"spark", "a.csv", "topic,context\n", "no items", false},
		{"spark", "a.csv", "topic,TOPIC\nx,y\n", `column "topic" appears twice`, false},
		{"spark", "a.csv", "topic,num_candidate\nx,3\n", `unknown column "num_candidate" (column 2): the columns are topic, theme`, false},
		{"spark", "a.csv", "topic,,colour\nx,,red\n", `unknown columns "" (column 2), "colour" (column 3)`, false},
		{"spark", "a.json", `[{"topic": "x"}, {"topic": }]`, "item 2 (line 1): invalid JSON", false},
		{"spark", "a.json", `{"topic": "x"}`, "got one object", false},
		{"spark", "a.json", "topic\nx\n", "got invalid JSON", false},
		{"spark", "a.json", `[]`, "no items", false},
		{"spark", "a.json", `[{"topic": "x"}] extra`, "invalid JSON after the last item", false},
		{"chaos", "a.csv", "topic\nx\n", "CSV is spark's batch format", false},
		{"spark", "big.csv", big, "more than 5000 items", true},
		{"spark", "big.json", "[" + strings.Repeat(`{"topic":"x"},`, batch.MaxRows) + `{"topic":"x"}]`, "more than 5000 items", true},
		{"spark", "huge.csv", "topic\n" + strings.Repeat("x", batch.MaxBytes), "larger than", true},
	} {
		_, err := batch.Parse(reg, tc.pipe, tc.name, []byte(tc.data), batch.Options{})
		fe, ok := errors.AsType[*batch.FileError](err)
		if !ok || !strings.Contains(err.Error(), tc.want) || fe.TooLarge != tc.tooLarge {
			t.Errorf("%s %.40q: err %v; want a FileError with %q (too large %v)", tc.name, tc.data, err, tc.want, tc.tooLarge)
		}
	}
	if _, err := batch.Parse(reg, "nosuch", "a.csv", []byte("topic\nx\n"), batch.Options{}); !errors.Is(err, pipeline.ErrUnknown) {
		t.Errorf("unknown pipeline: %v", err)
	}
}

// TestParseCSVOpenQuote: a quoted field left open is reported on its line,
// and the rows after it are read on their own instead of disappearing into
// it.
func TestParseCSVOpenQuote(t *testing.T) {
	in, err := batch.Parse(registry(t), "spark", "ideas.csv", []byte("topic,context\n"+
		"urban farming,cheap\n"+
		"\"open quote,never closed\n"+
		"ocean cleanup,fast\n"+
		"\"quoted, fine\",x\n"), batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line  int
		topic string
		err   string
	}{{2, "urban farming", ""}, {3, "", "malformed CSV"}, {4, "ocean cleanup", ""}, {5, "quoted, fine", ""}}
	if len(in.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(in.Rows), len(want), in.Rows)
	}
	for i, w := range want {
		r := in.Rows[i]
		if r.Line != w.line || r.Topic != w.topic || (w.err == "") != (r.Err == nil) || r.Err != nil && !strings.Contains(r.Err.Error(), w.err) {
			t.Errorf("row %d = line %d topic %q err %v; want line %d topic %q err %q", i, r.Line, r.Topic, r.Err, w.line, w.topic, w.err)
		}
	}
}
