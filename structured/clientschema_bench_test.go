package structured_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/structured"
)

// Schemas at the bounds of structured.CheckSchema, for the fuzz target's
// seeds and the benchmark.

// deepSchema is n arrays of arrays around a string: 4,000 levels is 96 KB.
func deepSchema(n int) []byte {
	return []byte(`{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, n) + `{"type":"string"}` + strings.Repeat(`}`, n) + `}}`)
}

// wideSchema is an object of n string properties.
func wideSchema(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`},"required":["p0"]}`)
	return []byte(b.String())
}

// manySchema is an object whose allOf lists n empty subschemas: the most
// subschemas for the bytes.
func manySchema(n int) []byte {
	return []byte(`{"type":"object","properties":{"a":{"type":"string"}},"allOf":[` + strings.Repeat(`{},`, n-1) + `{}]}`)
}

// fanoutSchema has levels definitions of width properties, each
// referring to the next definition: describing it repeats each level
// once per property of the level above.
func fanoutSchema(levels, width int) []byte {
	defs := map[string]any{}
	for i := range levels {
		next := map[string]any{"type": "string"}
		if i+1 < levels {
			next = map[string]any{"$ref": fmt.Sprintf("#/$defs/l%d", i+1)}
		}
		props := map[string]any{}
		for j := range width {
			props[fmt.Sprintf("p%d", j)] = next
		}
		defs[fmt.Sprintf("l%d", i)] = map[string]any{"type": "object", "properties": props}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/l0"}}, "$defs": defs})
	return b
}

// largestAccepted finds, by doubling then bisecting n, the largest
// schema of build(n) that NewSpecFromSchema accepts.
func largestAccepted(build func(n int) []byte) []byte {
	ok := func(n int) bool { _, err := structured.NewSpecFromSchema("x", build(n)); return err == nil }
	lo, hi := 1, 2
	for ok(hi) {
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return build(lo)
}

// BenchmarkClientSchema measures what a client's schema costs before any
// model call: refusing a 4,000-deep schema, and reading the largest
// schemas accepted (checked, compiled, described to the model). Each
// reports its time as a multiple of decoding the same JSON with
// encoding/json (x-decode), the least any reader of the schema spends.
//
//	go test -run '^$' -bench BenchmarkClientSchema -benchtime 20x ./structured
func BenchmarkClientSchema(b *testing.B) {
	for _, tc := range []struct {
		name   string
		schema []byte
		refuse bool
	}{
		{"refuse-4000-deep", deepSchema(4000), true},
		{"largest-wide", largestAccepted(wideSchema), false},
		{"largest-deep", largestAccepted(deepSchema), false},
		{"largest-many", largestAccepted(manySchema), false},
		{"largest-fanout", largestAccepted(func(n int) []byte { return fanoutSchema(3, n) }), false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			floor := decodeTime(tc.schema)
			for b.Loop() {
				_, err := structured.NewSpecFromSchema("x", tc.schema)
				if (err != nil) != tc.refuse {
					b.Fatalf("refused: %v, want %v", err, tc.refuse)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(floor.Nanoseconds()), "x-decode")
			b.ReportMetric(float64(len(tc.schema)), "schema-bytes")
		})
	}
}

// decodeTime is the time encoding/json takes to decode schema.
func decodeTime(schema []byte) time.Duration {
	const n = 20
	start := time.Now()
	for range n {
		var v any
		_ = json.Unmarshal(schema, &v)
	}
	return time.Since(start) / n
}

// FuzzClientSchema reads any JSON as a client's schema: it is accepted or
// refused with one line, within a second — replies 30 levels deep checked
// against an accepted one included — never opening a file, and an
// accepted one's description for a model stays within its bound.
//
//	go test -run '^$' -fuzz FuzzClientSchema ./structured
func FuzzClientSchema(f *testing.F) {
	for _, s := range [][]byte{
		[]byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`),
		[]byte(`{"type":"object","properties":{"a":{"$ref":"file:///dev/stdin"}}}`),
		[]byte(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#i"}},"definitions":{"i":{"$id":"#i"}}}`),
		[]byte(`{"$schema":"file:///etc/passwd"}`),
		[]byte(`{"anyOf":[{"$ref":"#"},{"type":"array","items":{"$ref":"#"}}]}`),
		[]byte(`{"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"array","items":{"$ref":"#"}},{"type":"number"}]}`),
		[]byte(`{"anyOf":[{"type":"string"},{"type":"array","items":{"$ref":"#"}},{"type":"object","additionalProperties":{"$ref":"#"}}]}`),
		[]byte(`{"type":"object","allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}],"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{"properties":{"x":{"type":"string"}}}}}`),
		deepSchema(70),
		wideSchema(50),
		fanoutSchema(4, 5),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		const budget = time.Second
		type outcome struct {
			hint string
			err  error
		}
		done := make(chan outcome, 1)
		start := time.Now()
		go func() {
			s, err := structured.NewSpecFromAnySchema("fuzzed", schema)
			if err != nil {
				done <- outcome{err: err}
				return
			}
			// Replies nested deeper than the schema, through its own
			// property names, are checked against it as given.
			v, err := structured.CompileSchema(context.Background(), schema)
			if err != nil {
				done <- outcome{err: err}
				return
			}
			for _, reply := range probes(schema) {
				_ = v.Validate(reply)
			}
			done <- outcome{hint: s.Hint()}
		}()
		var o outcome
		select {
		case o = <-done:
		case <-time.After(10 * budget):
			t.Fatalf("reading the schema did not end within %s: %q", 10*budget, schema)
		}
		if d := time.Since(start); d > budget {
			t.Fatalf("reading the schema took %s, over the budget of %s: %q", d, budget, schema)
		}
		if o.err != nil {
			if strings.Contains(o.err.Error(), "\n") {
				t.Fatalf("the refusal %q is not one line", o.err)
			}
			return
		}
		if len(o.hint) > structured.MaxHintBytes {
			t.Fatalf("the description is %d bytes, over %d", len(o.hint), structured.MaxHintBytes)
		}
		if err := structured.CheckSchema(context.Background(), schema); err != nil {
			t.Fatalf("accepted by NewSpecFromAnySchema, refused by CheckSchema: %v", err)
		}
	})
}

// probes are replies 30 levels deep: lists of lists, and objects whose
// members are named as the schema's properties are, in turn.
func probes(schema []byte) []any {
	var names []string
	var collect func(v any)
	collect = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for name := range props {
					if len(names) < 8 {
						names = append(names, name)
					}
				}
			}
			for _, c := range x {
				collect(c)
			}
		case []any:
			for _, c := range x {
				collect(c)
			}
		}
	}
	var doc any
	_ = json.Unmarshal(schema, &doc)
	collect(doc)
	names = append(names, "x")
	var list, obj any = "leaf", 1.5
	for i := range 30 {
		list = []any{list, 2.0}
		obj = map[string]any{names[i%len(names)]: obj, "n": "s"}
	}
	return []any{list, obj}
}
