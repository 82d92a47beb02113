package batch_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/spark"
)

// checkParse holds for any input: either a *FileError of one line, or
// rows in order of their lines, each either good (parameters and text
// input.Check accepts, no error) or rejected with a one-line reason; never
// a panic. A CSV column that is not a parameter is a FileError.
func checkParse(t *testing.T, pipe, name string, data []byte) {
	reg := fuzzRegistry()
	in, err := batch.Parse(reg, pipe, name, data, batch.Options{})
	if err != nil {
		if _, ok := errors.AsType[*batch.FileError](err); !ok {
			t.Fatalf("error %v (%T) is not a FileError", err, err)
		}
		if strings.ContainsAny(err.Error(), "\n\r") {
			t.Fatalf("a multi-line error: %q", err)
		}
		return
	}
	if len(in.Rows) == 0 || len(in.Rows) > batch.MaxRows {
		t.Fatalf("%d rows", len(in.Rows))
	}
	last := 0
	for _, r := range in.Rows {
		if r.Line < 1 || r.Line < last {
			t.Fatalf("row at line %d after line %d", r.Line, last)
		}
		last = r.Line
		if r.Err == nil {
			if len(r.Params) == 0 {
				t.Fatalf("line %d: a good row without parameters", r.Line)
			}
			if !utf8.ValidString(r.Topic) || input.Text("topic", r.Topic) != nil || input.Check(r.Tags) != nil {
				t.Fatalf("line %d: topic %q, tags %q", r.Line, r.Topic, r.Tags)
			}
			if _, err := reg.Decode(pipe, r.Params); err != nil {
				t.Fatalf("line %d: a good row the registry refuses: %v", r.Line, err)
			}
		} else if reason := r.Reason(); reason == "" || strings.ContainsAny(reason, "\n\r") {
			t.Fatalf("line %d: reason %q", r.Line, reason)
		}
	}
}

// fuzzRegistry is spark alone, made once: the fuzz targets parse spark
// files.
var fuzzRegistry = sync.OnceValue(func() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	d, err := spark.Definition()
	if err != nil {
		panic(err)
	}
	if err := reg.Register(d); err != nil {
		panic(err)
	}
	return reg
})

func FuzzParseCSV(f *testing.F) {
	for _, s := range []string{
		"topic\nurban farming\n",
		"topic,context,temperature_preset,num_candidates,tags\nx,y,creative,3,\"a, b\"\n",
		"theme,constraints\n\"a \"\"quoted\"\" one\",z\n",
		"topic,num_candidates\nx,many\ny,2\n",
		"topic\n\"unterminated\n",
		"topic,num_candidate\nx,3\n",
		"topic,tags\n\"title\x1b]0;pwned\x07\",a\x1bb\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "spark", "f.csv", data) })
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`[{"topic": "x"}]`,
		`[{"theme": "a", "constraints": "b", "num_candidates": 2, "tags": ["t"]}, {"topic": 5}]`,
		`[{"topic": "x", "num_candidates": 1e400}]`,
		`[1, "two", null, {}]`,
		`{"topic": "x"}`,
		`[{"topic": "x\u001b[2J", "tags": ["a\u009b"]}, {"topic": "y", "num_candidates": 99999999999999999999}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "spark", "f.json", data) })
}
