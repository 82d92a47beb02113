package structured_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/madspark/madspark/structured"
	"github.com/madspark/madspark/structured/replytest"
)

// within runs fn, failing the test if it has not returned within d: a
// schema that made the server open a FIFO, or wait on its standard input,
// would block for ever.
func within(t *testing.T, d time.Duration, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s: still running after %s (a file was opened?)", what, d)
		return nil
	}
}

// fixtures makes files a reference might name: a JSON file, a text file
// and a FIFO, and returns their paths and a path that does not exist.
func fixtures(t *testing.T) (jsonFile, textFile, fifo, missing string) {
	t.Helper()
	dir := t.TempDir()
	jsonFile = filepath.Join(dir, "secret.json")
	textFile = filepath.Join(dir, "secret.txt")
	fifo = filepath.Join(dir, "fifo")
	missing = filepath.Join(dir, "missing.json")
	if err := os.WriteFile(jsonFile, []byte(`{"token": "s3cr3t", "type": "object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(textFile, []byte("s3cr3t text"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return jsonFile, textFile, fifo, missing
}

// hostile are schemas whose references point outside them, with the
// reference each must be refused for; %s is a path.
var hostile = []struct{ name, schema, ref string }{
	{"ref in a property", `{"type":"object","properties":{"a":{"$ref":"file://%s"}}}`, "file://%s"},
	{"ref under not", `{"type":"object","properties":{"a":{"type":"string"}},"not":{"$ref":"file://%s"}}`, "file://%s"},
	{"ref under if", `{"type":"object","properties":{"a":{"type":"string"}},"if":{"$ref":"file://%s"},"then":{}}`, "file://%s"},
	{"ref in unused defs", `{"type":"object","properties":{"a":{"type":"string"}},"$defs":{"x":{"$ref":"file://%s"}}}`, "file://%s"},
	{"ref under an unknown keyword", `{"type":"object","properties":{"a":{"type":"string"}},"x-extra":{"$ref":"file://%s"}}`, "file://%s"},
	{"ref with a fragment", `{"type":"object","properties":{"a":{"$ref":"file://%s#/token"}}}`, "file://%s#/token"},
	{"bare path", `{"type":"object","properties":{"a":{"$ref":"%s"}}}`, "%s"},
	{"dynamicRef", `{"type":"object","properties":{"a":{"$dynamicRef":"file://%s"}}}`, "file://%s"},
	{"recursiveRef", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{"$recursiveRef":"file://%s"}}}`, "file://%s"},
	{"schema", `{"$schema":"file://%s","type":"object","properties":{"a":{"type":"string"}}}`, "file://%s"},
	{"schema in a subschema", `{"type":"object","properties":{"a":{"$schema":"file://%s","type":"string"}}}`, "file://%s"},
	{"id in a subschema", `{"type":"object","properties":{"a":{"$id":"file://%s","$ref":"#"}}}`, "file://%s"},
	{"draft-04 id", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"id":"file://%s","type":"string"}}}`, "file://%s"},
}

// TestClientSchemaRefusesOutsideReferences: a reference to a file — a
// JSON file, a text file, a FIFO, a missing one — is refused naming it,
// with the same message whether the file exists or not, at once.
func TestClientSchemaRefusesOutsideReferences(t *testing.T) {
	jsonFile, textFile, fifo, missing := fixtures(t)
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []string
			for _, path := range []string{jsonFile, textFile, fifo, missing} {
				schema := fmt.Sprintf(tc.schema, path)
				ref := fmt.Sprintf(tc.ref, path)
				err := within(t, 5*time.Second, path, func() error { return structured.CheckSchema(context.Background(), []byte(schema)) })
				var se *structured.SchemaError
				if !errors.As(err, &se) {
					t.Fatalf("CheckSchema(%s) = %v, want a *SchemaError", schema, err)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", ref)) {
					t.Errorf("the refusal %q does not name the reference %q", err, ref)
				}
				err = within(t, 5*time.Second, path, func() error {
					_, err := structured.NewSpecFromSchema("x", []byte(schema))
					return err
				})
				if err == nil {
					t.Fatalf("NewSpecFromSchema(%s) accepted it", schema)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Fatalf("the refusal %q shows the file's content", err)
				}
				msgs = append(msgs, strings.ReplaceAll(err.Error(), path, "PATH"))
			}
			for _, m := range msgs[1:] {
				if m != msgs[0] {
					t.Errorf("the refusals differ with the file: %q and %q tell whether it exists", msgs[0], m)
				}
			}
		})
	}
}

// TestClientSchemaRefusesOtherLocators: URLs, relative references, the
// terminal and metaschemas other than the known drafts.
func TestClientSchemaRefusesOtherLocators(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":{"$ref":"http://127.0.0.1:1/x.json"}}}`, `"http://127.0.0.1:1/x.json"`},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json#/$defs/a"}}}`, `"https://example.com/s.json#/$defs/a"`},
		{`{"type":"object","properties":{"a":{"$ref":"other.json"}}}`, `"other.json"`},
		{`{"type":"object","properties":{"a":{"$ref":"../../etc/passwd"}}}`, `"../../etc/passwd"`},
		{`{"type":"object","properties":{"a":{"$ref":"file:///dev/stdin"}}}`, `"file:///dev/stdin"`},
		{`{"type":"object","properties":{"a":{"$ref":"/dev/stdin"}}}`, `"/dev/stdin"`},
		{`{"type":"object","properties":{"a":{"$ref":"https://json-schema.org/draft/2020-12/schema"}}}`, `"https://json-schema.org/draft/2020-12/schema"`},
		{`{"$schema":"file:///dev/stdin","type":"object"}`, `"file:///dev/stdin"`},
		{`{"$schema":"https://example.com/my-meta.json","type":"object"}`, `"https://example.com/my-meta.json"`},
		{`{"$schema":"https://json-schema.org/draft/2020-12/meta/core","type":"object"}`, `"https://json-schema.org/draft/2020-12/meta/core"`},
		{`{"$schema":"https://json-schema.org/draft/2021-01/schema","type":"object"}`, `"https://json-schema.org/draft/2021-01/schema"`},
		{`{"$schema":7,"type":"object"}`, `$schema must be a string`},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, `"#/$defs/missing" does not resolve`},
		{`{"type":"object","properties":{"a":{"$ref":"#nowhere"}}}`, `"#nowhere" names no anchor`},
		{`{"type":"object","properties":{"a":{"$ref":"#/properties/a/0"}}}`, `does not resolve`},
		{`{"$id":"https://example.com/s.json#part","type":"object"}`, `without a fragment`},
		{`{"type":"object","properties":{"a":{"$ref":5}}}`, `$ref must be a string`},
	} {
		err := within(t, 5*time.Second, tc.schema, func() error { return structured.CheckSchema(context.Background(), []byte(tc.schema)) })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckSchema(%s) = %v, want a refusal with %s", tc.schema, err, tc.want)
		}
		if _, err := structured.NewSpecFromSchema("x", []byte(tc.schema)); err == nil {
			t.Errorf("NewSpecFromSchema(%s) accepted it", tc.schema)
		}
	}
}

// TestClientSchemaAcceptsInsideReferences: references into the schema,
// anchors, the known drafts and a root $id are read as before.
func TestClientSchemaAcceptsInsideReferences(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/item"}},"$defs":{"item":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/definitions/item"}},"definitions":{"item":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b"}},"$defs":{"a/b":{"type":"string"}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://example.com/answer.json","type":"object","properties":{"a":{"$ref":"#/$defs/item"},"next":{"$ref":"#"}},"$defs":{"item":{"type":"string"}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"string"}}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{"type":"string"},"more":{"$recursiveRef":"#"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","enum":["$ref"],"default":{"$ref":"file:///etc/passwd"}}}}`,
		`{"type":"object","properties":{"$ref":{"type":"string"}}}`,
	} {
		if err := structured.CheckSchema(context.Background(), []byte(schema)); err != nil {
			t.Errorf("CheckSchema(%s) = %v", schema, err)
		}
		if _, err := structured.NewSpecFromSchema("x", []byte(schema)); err != nil {
			t.Errorf("NewSpecFromSchema(%s) = %v", schema, err)
		}
	}
}

// TestClientSchemaAnchors: references by anchor, and pointers with
// escapes, point inside the schema; the reader, which aligns replies by
// JSON Pointers of its own, refuses what it cannot follow, naming it.
func TestClientSchemaAnchors(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a%20b"}},"$defs":{"a b":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#item"}},"$defs":{"item":{"$anchor":"item","type":"string"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#item"}},"definitions":{"item":{"$id":"#item","type":"string"}}}`,
	} {
		if err := structured.CheckSchema(context.Background(), []byte(schema)); err != nil {
			t.Errorf("CheckSchema(%s) = %v", schema, err)
		}
		if _, err := structured.NewSpecFromSchema("x", []byte(schema)); err != nil && !strings.Contains(err.Error(), "does not resolve") {
			t.Errorf("NewSpecFromSchema(%s) = %v", schema, err)
		}
	}
}

// TestNewCompilerReadsNothing: the compiler every run-time schema is
// compiled with does not read a file, even one its references name, and
// its error does not say whether the file exists.
func TestNewCompilerReadsNothing(t *testing.T) {
	jsonFile, _, fifo, missing := fixtures(t)
	var msgs []string
	for _, path := range []string{jsonFile, fifo, missing} {
		doc := map[string]any{"$ref": "file://" + path}
		c := structured.NewCompiler()
		if err := c.AddResource("mem:///s.json", doc); err != nil {
			t.Fatal(err)
		}
		err := within(t, 5*time.Second, path, func() error { _, err := c.Compile("mem:///s.json"); return err })
		if err == nil || !strings.Contains(err.Error(), structured.ErrOutsideSchema.Error()) {
			t.Fatalf("Compile of a reference to %s = %v, want ErrOutsideSchema", path, err)
		}
		msgs = append(msgs, strings.ReplaceAll(err.Error(), path, "PATH"))
	}
	if msgs[0] != msgs[1] || msgs[0] != msgs[2] {
		t.Errorf("the errors differ with the file: %q", msgs)
	}
	// The drafts' metaschemas come from the embedded copies.
	c := structured.NewCompiler()
	if err := c.AddResource("mem:///s.json", map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("mem:///s.json"); err != nil {
		t.Errorf("a 2020-12 schema: %v", err)
	}
}

// TestClientSchemaBounds: a schema beyond a bound is refused naming it,
// however it is built.
func TestClientSchemaBounds(t *testing.T) {
	// Each level's allOf merges the next one twice.
	merges := func(levels int) string {
		defs := map[string]any{}
		for i := range levels {
			d := map[string]any{"type": "object", "properties": map[string]any{fmt.Sprintf("p%d", i): map[string]any{"type": "string"}}}
			if i+1 < levels {
				ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/l%d", i+1)}
				d["allOf"] = []any{ref, ref}
			}
			defs[fmt.Sprintf("l%d", i)] = d
		}
		b, _ := json.Marshal(map[string]any{"type": "object", "allOf": []any{map[string]any{"$ref": "#/$defs/l0"}}, "$defs": defs})
		return string(b)
	}
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"4000 deep", string(deepSchema(4000)), "nests deeper than 64 levels"},
		{"65 deep", string(deepSchema(65)), "nests deeper than 64 levels"},
		{"too large", string(wideSchema(1000)) + strings.Repeat(" ", structured.MaxSchemaBytes), "bytes; the limit is"},
		{"too many values", `{"type":"object","properties":{"a":{"enum":[` + strings.Repeat(`0,`, structured.MaxSchemaTokens) + `0]}}}`, "values and member names"},
		{"too many subschemas", `{"type":"object","allOf":[` + strings.Repeat(`{},`, structured.MaxSchemaObjects) + `{}]}`, "objects (subschemas"},
		{"references fanning out", string(fanoutSchema(8, 20)), "the schema is too complex"},
		{"allOf merged over and over", merges(24), "subschemas apply to one value"},
		{"trailing text", `{"type":"object"} {}`, "text after the schema"},
		{"not JSON", `{"type":`, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := structured.NewSpecFromSchema("x", []byte(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewSpecFromSchema = %v, want a refusal with %q", err, tc.want)
			}
			var se *structured.SchemaError
			if !errors.As(err, &se) {
				t.Errorf("the refusal %v is not a *SchemaError", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the refusal took %s", d)
			}
		})
	}
	// Within the bounds, the same shapes are read.
	for _, schema := range [][]byte{deepSchema(30), wideSchema(900), fanoutSchema(3, 10), []byte(merges(4))} {
		if _, err := structured.NewSpecFromSchema("x", schema); err != nil {
			t.Errorf("a schema within the bounds: %v", err)
		}
	}
}

// TestClientSchemaStopsWithContext: a client that leaves stops the check.
func TestClientSchemaStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := structured.CheckSchema(ctx, wideSchema(3000)); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckSchema with a cancelled context = %v, want context.Canceled", err)
	}
}

// foreign are references a schema must not be allowed to follow.
var foreign = []string{"file:///etc/passwd", "file:///dev/stdin", "http://169.254.169.254/latest/meta-data", "other.json",
	"https://json-schema.org/draft/2020-12/meta/core", "//host/x.json", "/etc/hostname", "file:/etc/shadow#/a"}

// TestClientSchemaProperty: a schema such as a client or a pipeline file
// sends, with its parts moved into $defs and referred to from where they
// were, is accepted and read as the original; the same schema with one of
// its subschemas given a reference (or a $schema, or an $id) that leaves
// it is refused, naming that reference.
func TestClientSchemaProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var doc map[string]any
		if err := json.Unmarshal(replytest.Schema(t), &doc); err != nil {
			t.Fatal(err)
		}
		subs := subschemas(doc)
		// Usable: some subschemas moved into $defs, referred to.
		moved := map[string]any{}
		for i, s := range subs {
			if rapid.Bool().Draw(t, fmt.Sprintf("move%d", i)) {
				name := fmt.Sprintf("d%d", i)
				copied := map[string]any{}
				for k, v := range s {
					copied[k] = v
					delete(s, k)
				}
				moved[name] = copied
				s["$ref"] = "#/$defs/" + name
			}
		}
		if len(moved) > 0 {
			doc["$defs"] = moved
		}
		raw, _ := json.Marshal(doc)
		if err := structured.CheckSchema(context.Background(), raw); err != nil {
			t.Fatalf("CheckSchema(%s) = %v", raw, err)
		}
		if _, err := structured.NewSpecFromSchema("drawn", raw); err != nil {
			t.Fatalf("NewSpecFromSchema(%s) = %v", raw, err)
		}
		// Unusable: one subschema leaves the schema.
		all := subschemas(doc)
		i := rapid.IntRange(0, len(all)-1).Draw(t, "target")
		ref := rapid.SampledFrom(foreign).Draw(t, "ref")
		kw := rapid.SampledFrom([]string{"$ref", "$dynamicRef", "$schema", "$id"}).Draw(t, "keyword")
		if kw == "$id" && i == 0 {
			// The root's $id names the schema itself; a subschema's would
			// start another document.
			kw = "$schema"
		}
		all[i][kw] = ref
		bad, _ := json.Marshal(doc)
		err := structured.CheckSchema(context.Background(), bad)
		var se *structured.SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), fmt.Sprintf("%q", ref)) {
			t.Fatalf("CheckSchema(%s) = %v, want a refusal naming %q", bad, err, ref)
		}
		if _, err := structured.NewSpecFromSchema("drawn", bad); err == nil {
			t.Fatalf("NewSpecFromSchema(%s) accepted it", bad)
		}
	})
}

// subschemas lists the subschemas of doc that are objects, the root
// first, through properties and items.
func subschemas(doc map[string]any) []map[string]any {
	out := []map[string]any{doc}
	for i := 0; i < len(out); i++ {
		s := out[i]
		if props, ok := s["properties"].(map[string]any); ok {
			for _, p := range props {
				if m, ok := p.(map[string]any); ok {
					out = append(out, m)
				}
			}
		}
		if it, ok := s["items"].(map[string]any); ok {
			out = append(out, it)
		}
		if defs, ok := s["$defs"].(map[string]any); ok {
			for _, d := range defs {
				if m, ok := d.(map[string]any); ok {
					out = append(out, m)
				}
			}
		}
	}
	return out
}
