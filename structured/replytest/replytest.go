// Package replytest checks a reply reader against its schema as a
// property, the way models break JSON: it generates valid values of the
// schema, renders them, corrupts the rendering in ways that keep every
// piece of content (the syntax, the shape, the keys, numbers, enums and
// lists that small models get wrong), and expects the reader to return
// the value it read from the clean rendering, with the alignments
// recorded. It also removes or spoils what the schema requires, and
// expects the reader never to return a value the reply did not hold.
//
// The schema is read here with github.com/invopop/jsonschema, apart from
// the reader's own reading of it, so the two check each other.
package replytest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/invopop/jsonschema"
	"pgregory.net/rapid"

	"github.com/madspark/madspark/structured"
)

// Reader is what is checked: a structured.Spec of any type.
type Reader = structured.Reader

// Check runs both properties of r as subtests of t, each for as many
// cases as rapid's -rapid.checks says (100 by default), counting the
// cases in stats (nil for none).
func Check(t *testing.T, r Reader, stats *Stats) {
	t.Helper()
	t.Run("usable", rapid.MakeCheck(Usable(r, stats)))
	t.Run("unusable", rapid.MakeCheck(Unusable(r, stats)))
}

// Usable is the property that a usable corruption of a valid value,
// written in one of the Formats, reads back as the value, with at least
// one repair more than its clean rendering.
func Usable(r Reader, stats *Stats) func(*rapid.T) {
	root := mustSchema(r.Schema().JSON)
	return func(t *rapid.T) { usable(t, r, root, stats) }
}

// Unusable is the property that a reply missing what the schema requires,
// or giving it as something it cannot be, is refused, or read as a value
// that its clean rendering held too (a list item left out): never with a
// value the reply did not hold.
func Unusable(r Reader, stats *Stats) func(*rapid.T) {
	root := mustSchema(r.Schema().JSON)
	return func(t *rapid.T) { unusable(t, r, root, stats) }
}

// AnySchema is both properties over schemas drawn by Schema, each read
// with the reader that newReader makes of it.
func AnySchema(newReader func(schema []byte) (Reader, error)) func(*rapid.T) {
	return func(t *rapid.T) {
		raw := Schema(t)
		r, err := newReader(raw)
		if err != nil {
			t.Fatalf("schema %s: %v", raw, err)
		}
		Either(t, r, nil)
	}
}

// Either checks one case of one of the two properties, drawn, for a
// reader made within a property of the caller's (one whose schema is
// drawn too).
func Either(t *rapid.T, r Reader, stats *Stats) {
	root := mustSchema(r.Schema().JSON)
	if rapid.Bool().Draw(t, "usable") {
		usable(t, r, root, stats)
	} else {
		unusable(t, r, root, stats)
	}
}

func usable(t *rapid.T, r Reader, root *jsonschema.Schema, stats *Stats) {
	v := generate(t, root, "value")
	clean := render(v, style{})
	want := r.Parse(context.Background(), clean)
	if !want.Usable {
		// A value of the schema that the type's own rules refuse.
		t.Skipf("the clean rendering is refused: %s", want.Problem)
	}
	for _, rep := range want.Repairs {
		if alignment[rep.Rule] {
			t.Fatalf("the clean rendering needed an alignment: %+v\n%s", rep, clean)
		}
	}
	text, applied, format, mayRefuse := corrupt(t, v, root)
	got := r.Parse(context.Background(), text)
	stats.count(format, got.Usable && sameJSON(got.Value, want.Value), !got.Usable)
	if mayRefuse && (!got.Usable || len(got.Asks) > 0) {
		// Refused, or asked again before any value is used.
		return
	}
	if !got.Usable {
		t.Fatalf("corrupted by %v, the reply is refused: %s\nreply: %s\nclean: %s", applied, got.Problem, text, clean)
	}
	if !sameJSON(got.Value, want.Value) {
		t.Fatalf("corrupted by %v, read as\n%s\nwant\n%s\nreply: %s\nrepairs: %+v", applied, got.Value, want.Value, text, got.Repairs)
	}
	if len(got.Repairs) <= len(want.Repairs) {
		t.Fatalf("corrupted by %v, read with no repair recorded: %+v\nreply: %s", applied, got.Repairs, text)
	}
}

func unusable(t *rapid.T, r Reader, root *jsonschema.Schema, stats *Stats) {
	v := generate(t, root, "value")
	clean := render(v, style{})
	want := r.Parse(context.Background(), clean)
	if !want.Usable {
		t.Skipf("the clean rendering is refused: %s", want.Problem)
	}
	text, what, lenient, format := spoil(t, v)
	got := r.Parse(context.Background(), text)
	stats.countSpoiled(format, !got.Usable)
	if !got.Usable {
		return
	}
	for _, rep := range got.Repairs {
		if rep.Rule == "prose" {
			// A reader that takes prose as its answer.
			return
		}
	}
	if !lenient {
		t.Fatalf("%s, the reply was read as %s\nreply: %s\nrepairs: %+v", what, got.Value, text, got.Repairs)
	}
	// The type's own rules may derive values from what is left; what
	// the reply is read as, before them, is held by the clean reply.
	var g, w any
	_ = json.Unmarshal(got.Aligned, &g)
	_ = json.Unmarshal(want.Aligned, &w)
	if !heldBy(g, w) {
		t.Fatalf("%s, the reply was read as %s, which its clean rendering %s does not hold\nreply: %s", what, got.Aligned, want.Aligned, text)
	}
}

// alignment names the repair rules of the reader's syntax and alignment
// stages, which a clean rendering must not need.
var alignment = map[string]bool{"format": true, "candidate": true, "syntax": true, "shape": true, "key": true, "type": true, "enum": true, "split": true, "extra": true, "missing": true, "prose": true}

func mustSchema(raw []byte) *jsonschema.Schema {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		panic(fmt.Sprintf("replytest: schema %s: %v", raw, err))
	}
	return &s
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// heldBy reports whether a is part of b: b's members and items, some
// left out, none added or changed; a null is held by anything.
func heldBy(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !heldBy(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok {
			return false
		}
		j := 0
		for _, v := range x {
			for j < len(y) && !heldBy(v, y[j]) {
				j++
			}
			if j == len(y) {
				return false
			}
			j++
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// words of the generated texts: plain words, and a few that JSON and
// its repairs must keep as they are.
var vocabulary = []string{
	"solar", "vertical", "farm", "water", "cost", "market", "users", "local", "pilot", "scale",
	"community", "sensor", "data", "grid", "rooftop", "school", "clinic", "rural", "urban", "loop",
	"naïve", "café", "a sentence long enough that YAML folds the line it is written on when it writes it", "{draft}", "[1]", "a/b", "50%", "x,y", "it's", `"quoted"`, "back\\slash", "ünïcödé", "😀",
}

func join(parts []string) string { return strings.Join(parts, " ") }

// Stats counts the cases of the properties, by format: the usable
// replies generated, those read as exactly the clean value, those
// refused (only where a re-ask may settle them); and the spoiled replies
// generated and refused. It is safe for concurrent use.
type Stats struct {
	mu                        sync.Mutex
	generated, exact, refused map[string]int
	spoiled, spoiledRefused   map[string]int
}

func (s *Stats) count(format string, exact, refused bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.generated == nil {
		s.generated, s.exact, s.refused = map[string]int{}, map[string]int{}, map[string]int{}
	}
	s.generated[format]++
	if exact {
		s.exact[format]++
	}
	if refused {
		s.refused[format]++
	}
}

func (s *Stats) countSpoiled(format string, refused bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spoiled == nil {
		s.spoiled, s.spoiledRefused = map[string]int{}, map[string]int{}
	}
	s.spoiled[format]++
	if refused {
		s.spoiledRefused[format]++
	}
}

// String reports the counts, a line a format.
func (s *Stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, f := range Formats {
		fmt.Fprintf(&b, "%s: %d usable generated, %d read exactly, %d refused (a key only a re-ask can settle); %d spoiled, %d refused\n",
			f, s.generated[f], s.exact[f], s.refused[f], s.spoiled[f], s.spoiledRefused[f])
	}
	return b.String()
}
