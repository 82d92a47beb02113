package structured_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/madspark/madspark/structured"
)

// explosive are schemas under which checking a reply costs exponential
// time in its depth (two ways to the same subschema for the same value
// at each level), or never ends; each is refused naming the limit.
var explosive = []struct{ name, schema, want string }{
	{"anyOf twice into itself", `{"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"array","items":{"$ref":"#"}},{"type":"number"}]}`, "apply to one value"},
	{"oneOf twice into itself", `{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"oneOf":[{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}},{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}}]}}}`, "apply to one value"},
	{"allOf twice into itself", `{"type":"object","properties":{"next":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}`, "apply to one value"},
	{"a pattern and a property", `{"type":"object","properties":{"ab":{"$ref":"#"}},"patternProperties":{"^a":{"$ref":"#"}}}`, "apply to one value"},
	{"items and contains", `{"type":"array","items":{"$ref":"#"},"contains":{"$ref":"#"}}`, "apply to one value"},
	{"a doubling chain", `{"type":"object","properties":{"a":{"$ref":"#/$defs/l0"}},"$defs":{` +
		`"l0":{"allOf":[{"$ref":"#/$defs/l1"},{"$ref":"#/$defs/l1"}]},"l1":{"allOf":[{"$ref":"#/$defs/l2"},{"$ref":"#/$defs/l2"}]},` +
		`"l2":{"allOf":[{"$ref":"#/$defs/l3"},{"$ref":"#/$defs/l3"}]},"l3":{"allOf":[{"$ref":"#/$defs/l4"},{"$ref":"#/$defs/l4"}]},` +
		`"l4":{"allOf":[{"$ref":"#/$defs/l5"},{"$ref":"#/$defs/l5"}]},"l5":{"allOf":[{"$ref":"#/$defs/l6"},{"$ref":"#/$defs/l6"}]},"l6":{"type":"string"}}}`, "apply to one value"},
	{"a reference to itself", `{"type":"object","properties":{"a":{"$ref":"#/properties/a"}}}`, "without a level of nesting"},
	{"two references to each other", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"allOf":[{"$ref":"#/$defs/y"}]},"y":{"anyOf":[{"$ref":"#/$defs/x"}]}}}`, "without a level of nesting"},
	{"dynamic references", `{"$dynamicAnchor":"n","type":"object","properties":{"a":{"$dynamicRef":"#n"}},"anyOf":[{"properties":{"a":{"$dynamicRef":"#n"}}}]}`, "apply to one value"},
}

// TestSchemaCostRefusesExplosions: each explosive schema is refused, at
// once, before anything compiles it.
func TestSchemaCostRefusesExplosions(t *testing.T) {
	for _, tc := range explosive {
		start := time.Now()
		err := structured.CheckSchema(context.Background(), []byte(tc.schema))
		var se *structured.SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckSchema = %v, want a refusal with %q", tc.name, err, tc.want)
		}
		if _, err := structured.NewSpecFromAnySchema("x", []byte(tc.schema)); err == nil {
			t.Errorf("%s: NewSpecFromAnySchema accepted it", tc.name)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: refused after %s", tc.name, d)
		}
	}
}

// recursive are schemas that nest without bound and that a reply is
// checked against in time proportional to its size: trees, lists, any
// JSON value, a schema that refers to itself through a nullable field.
var recursive = []struct{ name, schema, reply string }{
	{"a tree", `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}},"required":["name"]}`,
		`{"name":"a","children":[` + strings.Repeat(`{"name":"b","children":[`, 300) + `{"name":"c"}` + strings.Repeat(`]}`, 300) + `]}`},
	{"a binary tree", `{"$defs":{"n":{"type":"object","properties":{"left":{"$ref":"#/$defs/n"},"right":{"$ref":"#/$defs/n"},"v":{"type":"number"}}}},"$ref":"#/$defs/n"}`,
		strings.Repeat(`{"v":1,"left":`, 300) + `{"v":2}` + strings.Repeat(`}`, 300)},
	{"any JSON value", `{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"null"},{"type":"array","items":{"$ref":"#"}},{"type":"object","additionalProperties":{"$ref":"#"}}]}`,
		strings.Repeat(`{"k":[`, 200) + `true` + strings.Repeat(`]}`, 200)},
	{"a linked list, nullable", `{"type":"object","properties":{"value":{"type":"string"},"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["value","next"]}`,
		strings.Repeat(`{"value":"x","next":`, 300) + `null` + strings.Repeat(`}`, 300)},
	{"a pattern beside properties", `{"type":"object","properties":{"id":{"type":"string"}},"patternProperties":{"^x-":{"$ref":"#"}},"additionalProperties":false}`,
		strings.Repeat(`{"id":"a","x-more":`, 300) + `{"id":"b"}` + strings.Repeat(`}`, 300)},
}

// TestSchemaCostAcceptsRecursion: the recursive schemas are accepted, and
// checking a deep reply against them, valid or not, is cheap: no more
// than MaxSchemaApplied subschemas apply to any of its values.
func TestSchemaCostAcceptsRecursion(t *testing.T) {
	for _, tc := range recursive {
		v, err := structured.CompileSchema(context.Background(), []byte(tc.schema))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if _, err := structured.NewSpecFromAnySchema("x", []byte(tc.schema)); err != nil {
			t.Errorf("%s: NewSpecFromAnySchema: %v", tc.name, err)
		}
		for _, reply := range []string{tc.reply, strings.Replace(tc.reply, `"c"`, `5`, 1)} {
			inst, err := validator.UnmarshalJSON(strings.NewReader(reply))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			done := make(chan struct{})
			go func() { _ = v.Validate(inst); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: checking a %d-byte reply takes more than 10 s", tc.name, len(reply))
			}
		}
	}
}
