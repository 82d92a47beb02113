package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
)

type scored struct {
	Score float64  `json:"score" jsonschema:"minimum=0,maximum=10"`
	Tags  []string `json:"tags" jsonschema:"minItems=2"`
}

type Embedded struct {
	Note string `json:"note,omitempty"`
}

type sample struct {
	Embedded
	Title    string            `json:"title" jsonschema:"description=What it is called,minLength=3"`
	Verdict  string            `json:"verdict" jsonschema:"enum=approve,enum=reject"`
	Items    []scored          `json:"items"`
	Best     *scored           `json:"best"`
	ByName   map[string]scored `json:"by_name"`
	Optional []string          `json:"optional,omitempty"`
	When     time.Time         `json:"when"`
	Finished time.Time         `json:"finished,omitzero"`
	Raw      json.RawMessage   `json:"raw"`
	Any      any               `json:"any"`
	Extra    map[string]string `json:"-"`
}

// compileSchema compiles a result schema for validating values.
func compileSchema(t *testing.T, raw json.RawMessage) *validator.Schema {
	t.Helper()
	doc, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := validator.NewCompiler()
	if err := c.AddResource("mem:///result.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///result.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v\n%s", err, raw)
	}
	return s
}

func validate(t *testing.T, s *validator.Schema, v any) error {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// TestResultSchemaIsTheShape checks a derived result schema against what
// encoding/json writes: a zero value (nil lists, maps and pointers), a
// filled one whose values break the struct tags' ranges, lengths and enums
// (a repaired reply may), and what is required.
func TestResultSchemaIsTheShape(t *testing.T) {
	reg := pipeline.NewRegistry()
	run := func(context.Context, *engine.Run, pipeline.Params) (any, error) { return nil, nil }
	if err := reg.Register(pipeline.Definition{Name: "sample", NewParams: func() pipeline.Params { return &structParams{} },
		Run: run, Result: reflect.TypeFor[*sample]()}); err != nil {
		t.Fatal(err)
	}
	raw, err := reg.ResultSchema("sample")
	if err != nil {
		t.Fatal(err)
	}
	s := compileSchema(t, raw)
	if err := validate(t, s, sample{}); err != nil {
		t.Errorf("the zero value does not match: %v\n%s", err, raw)
	}
	filled := sample{Embedded: Embedded{Note: "n"}, Title: "x", Verdict: "maybe", Items: []scored{{Score: 11, Tags: []string{"one"}}},
		Best: &scored{Score: -1}, ByName: map[string]scored{"a": {}}, Optional: []string{"o"}, When: time.Now(), Finished: time.Now(),
		Raw: json.RawMessage(`{"k":[1]}`), Any: []int{1}}
	if err := validate(t, s, filled); err != nil {
		t.Errorf("a filled value does not match: %v\n%s", err, raw)
	}
	wrong := map[string]any{"title": 3, "verdict": "", "items": []any{}, "best": nil, "by_name": nil, "when": "2024-01-01T00:00:00Z", "raw": 1, "any": 1}
	if err := validate(t, s, wrong); err == nil {
		t.Error("a title of the wrong type was accepted")
	}
	var doc struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	slices.Sort(doc.Required)
	if want := []string{"any", "best", "by_name", "items", "raw", "title", "verdict", "when"}; !slices.Equal(doc.Required, want) {
		t.Errorf("required = %v, want %v", doc.Required, want)
	}
	if _, ok := doc.Properties["note"]; !ok {
		t.Error("the embedded struct's field is not a property")
	}
	if !strings.Contains(string(doc.Properties["title"]), "What it is called") {
		t.Errorf("title lost its description: %s", doc.Properties["title"])
	}
	for _, k := range []string{"minimum", "minLength", "minItems", "enum"} {
		if strings.Contains(string(raw), `"`+k+`"`) {
			t.Errorf("the schema keeps %s: %s", k, raw)
		}
	}
	if _, err := pipeline.DeriveResultSchema(reflect.TypeFor[[]string]()); err == nil {
		t.Error("a list type was accepted as a result type")
	}
}

type structParams struct{}

func (*structParams) Validate() error { return nil }

// TestBuiltinResultSchemas checks that every built-in pipeline of the
// test registry describes its result.
func TestBuiltinResultSchemas(t *testing.T) {
	reg := registry(t, nil)
	for _, d := range reg.List() {
		raw, err := reg.ResultSchema(d.Name)
		if err != nil || raw == nil {
			t.Errorf("%s: result schema %s, %v", d.Name, raw, err)
			continue
		}
		compileSchema(t, raw)
		if !strings.Contains(string(raw), `"repairs"`) {
			t.Errorf("%s: its result schema has no repairs: %s", d.Name, raw)
		}
	}
}
