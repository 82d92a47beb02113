package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/spark"
)

// FuzzParseBatch checks that reading any batch file, as CSV or JSON,
// never panics; that its errors are one line; and that every item it
// accepts carries parameters that are valid UTF-8 JSON and hold no NUL,
// with a line number.
func FuzzParseBatch(f *testing.F) {
	for _, s := range []string{
		"topic,context\nurban farming,cities\n",
		"topic,context\n\"unterminated,x\nnext row,y\n",
		"topic\ncaf\xff\n",
		"topic\nnul\x00x\n",
		`[{"topic":"a","tags":["x"]},{"topic":"b\u0000"}]`,
		`[{"topic":"a","num_candidates":1e999}]`,
		`[1, {"topic": "b"}]`,
	} {
		f.Add("b.csv", []byte(s))
		f.Add("b.json", []byte(s))
	}
	reg := pipeline.NewRegistry()
	def, err := spark.Definition()
	if err != nil {
		f.Fatal(err)
	}
	if err := reg.Register(def); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if !strings.HasSuffix(name, ".json") {
			name = "b.csv"
		}
		c := &cli{stderr: io.Discard}
		items, err := c.parseBatch(name, data, reg, def)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		for _, it := range items {
			if it.line < 1 {
				t.Fatalf("item without a line: %+v", it)
			}
			if it.err != nil {
				continue
			}
			if !utf8.Valid(it.params) || !json.Valid(it.params) || strings.Contains(string(it.params), `\u0000`) {
				t.Fatalf("accepted parameters %q", it.params)
			}
		}
	})
}
