package debate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/structured"
)

// BenchmarkFormatCheck measures what a client's response format costs a
// /v1 request before any model call (Format.check: the schema checked,
// compiled twice — as the client gave it and as the reader reads it — and
// described): a 4,000-deep schema refused, and the largest schema accepted
// of each shape within structured's bounds (as many properties, as deep,
// as many subschemas as allowed). Each reports its time as a multiple of
// decoding the same JSON with encoding/json (x-decode) and the schema's
// size.
//
//	go test -run '^$' -bench BenchmarkFormatCheck -benchtime 20x ./pipeline/debate
func BenchmarkFormatCheck(b *testing.B) {
	deep := func(n int) []byte {
		return []byte(`{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, n) + `{"type":"string"}` + strings.Repeat(`}`, n) + `}}`)
	}
	wide := func(n int) []byte {
		props := map[string]any{}
		for i := range n {
			props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string"}
		}
		raw, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": []string{"p0"}})
		return raw
	}
	many := func(n int) []byte {
		return []byte(`{"type":"object","properties":{"a":{"type":"string"}},"allOf":[` + strings.Repeat(`{},`, n-1) + `{}]}`)
	}
	for _, tc := range []struct {
		name   string
		schema []byte
		refuse bool
	}{
		{"refuse-4000-deep", deep(4000), true},
		{"largest-wide", largest(wide), false},
		{"largest-deep", largest(deep), false},
		{"largest-many", largest(many), false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			floor := decodeTime(tc.schema)
			f := &Format{Name: "answer", Schema: Schema(tc.schema)}
			for b.Loop() {
				if err := f.check(); (err != nil) != tc.refuse {
					b.Fatalf("refused: %v, want %v", err, tc.refuse)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(floor.Nanoseconds()), "x-decode")
			b.ReportMetric(float64(len(tc.schema)), "schema-bytes")
		})
	}
}

// largest is the largest schema of build(n) that a format accepts.
func largest(build func(n int) []byte) []byte {
	ok := func(n int) bool { return (&Format{Name: "a", Schema: Schema(build(n))}).check() == nil }
	lo, hi := 1, 2
	for ok(hi) {
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if n := len(build(lo)); n > structured.MaxSchemaBytes {
		panic(fmt.Sprintf("an accepted schema of %d bytes", n))
	}
	return build(lo)
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
