package pipeline_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/proposal"
)

// schemaNode is the part of a parameters schema a form reads.
type schemaNode struct {
	Title       string                 `json:"title"`
	Description string                 `json:"description"`
	Default     any                    `json:"default"`
	ReadOnly    bool                   `json:"readOnly"`
	Required    []string               `json:"required"`
	Properties  map[string]*schemaNode `json:"properties"`
}

// TestParamsSchemaReadsAsAForm checks the schema of every pipeline as the
// web form uses it: each parameter has a title and a description; what the
// server requires is required; and each default is what a request leaving
// the parameter out gets.
func TestParamsSchemaReadsAsAForm(t *testing.T) {
	reg := registry(t, nil)
	a, err := assess.Definition(assess.Config{Mock: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proposal.Definition(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []pipeline.Definition{a, p} {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	profile := `{"academic_program":"MSc Computer Science","field_of_study":"Computer science","research_area":"Energy use of caches","weekly_hours":10,"total_timeline":{"value":6,"unit":"months"}}`
	cases := []struct {
		name string
		// required are the required parameters, by dotted path.
		required []string
		// given are values for them, as a request sends them.
		given map[string]string
		// unset are the optional parameters without a default: Prepare
		// fills them, or they are empty lists.
		unset []string
	}{
		{name: "spark", required: []string{"topic"}, given: map[string]string{"topic": `"urban farming"`}, unset: []string{"seed_ideas"}},
		{name: "chaos", required: []string{"prompt"}, given: map[string]string{"prompt": `"a board game"`}, unset: []string{"seed", "model_a", "model_b"}},
		{name: "debate", required: []string{"query"}, given: map[string]string{"query": `"Is tea better than coffee?"`}, unset: []string{"history", "format"}},
		{name: "assess", required: []string{"idea"}, given: map[string]string{"idea": `"A bakery for dogs"`}, unset: []string{"analyst_prompt", "reviewer_prompt"}},
		{
			name: "proposal",
			required: []string{"profile", "profile.academic_program", "profile.field_of_study", "profile.research_area", "profile.weekly_hours",
				"profile.total_timeline", "profile.total_timeline.value", "profile.total_timeline.unit"},
			given: map[string]string{"profile": profile},
			unset: []string{"profile.existing_skills", "profile.missing_skills", "profile.constraints"},
		},
	}
	if len(cases) != len(reg.List()) {
		t.Fatalf("%d cases for %d pipelines", len(cases), len(reg.List()))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			def, err := reg.Get(c.name)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := reg.ParamsSchema(c.name)
			if err != nil {
				t.Fatal(err)
			}
			var root schemaNode
			if err := json.Unmarshal(raw, &root); err != nil {
				t.Fatal(err)
			}
			var defaults map[string]any
			b, _ := json.Marshal(def.NewParams())
			_ = json.Unmarshal(b, &defaults)

			var required []string
			var walk func(n *schemaNode, prefix string, values map[string]any)
			walk = func(n *schemaNode, prefix string, values map[string]any) {
				for name, p := range n.Properties {
					path := strings.TrimPrefix(prefix+"."+name, ".")
					if p.ReadOnly {
						continue
					}
					if p.Title == "" || p.Description == "" {
						t.Errorf("%s: title %q, description %q", path, p.Title, p.Description)
					}
					req := slices.Contains(n.Required, name)
					if req {
						required = append(required, path)
					}
					switch {
					case req && p.Default != nil:
						t.Errorf("%s is required and has the default %v", path, p.Default)
					case !req && p.Default == nil && !slices.Contains(c.unset, path):
						t.Errorf("%s is optional and has no default", path)
					case p.Default != nil && !reflect.DeepEqual(p.Default, values[name]):
						t.Errorf("%s: schema default %v, NewParams %v", path, p.Default, values[name])
					}
					sub, _ := values[name].(map[string]any)
					walk(p, path, sub)
				}
			}
			walk(&root, "", defaults)
			slices.Sort(required)
			want := slices.Sorted(slices.Values(c.required))
			if !slices.Equal(required, want) {
				t.Errorf("required %v, want %v", required, want)
			}

			// The defaults and the required values make a valid request.
			var body map[string]json.RawMessage
			ds, err := reg.Defaults(c.name)
			if err != nil || json.Unmarshal(ds, &body) != nil {
				t.Fatalf("Defaults = %s, %v", ds, err)
			}
			for k := range body {
				if slices.Contains(c.required, k) {
					t.Errorf("Defaults holds the required %s", k)
				}
			}
			for k, v := range c.given {
				body[k] = json.RawMessage(v)
			}
			full, _ := json.Marshal(body)
			if _, err := reg.Decode(c.name, full); err != nil {
				t.Fatalf("defaults with the required values %s: %v", full, err)
			}
			// Without a required value, the request is refused, naming it.
			for k := range c.given {
				without := map[string]json.RawMessage{}
				for f, v := range body {
					if f != k {
						without[f] = v
					}
				}
				raw, _ := json.Marshal(without)
				var pe *pipeline.ParamsError
				if _, err := reg.Decode(c.name, raw); !errors.As(err, &pe) || pe.Field != k {
					t.Errorf("without %s: %v", k, err)
				}
			}
		})
	}
}

// TestProposalProfileFieldsRequired checks that the schema refuses a
// profile without a field the server needs, naming it.
func TestProposalProfileFieldsRequired(t *testing.T) {
	reg := pipeline.NewRegistry()
	d, err := proposal.Definition(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(d); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Decode("proposal", json.RawMessage(`{"profile":{"academic_program":"MSc","field_of_study":"CS","research_area":"caches","total_timeline":{"value":6,"unit":"months"}}}`))
	var pe *pipeline.ParamsError
	if !errors.As(err, &pe) || pe.Field != "profile.weekly_hours" || !strings.Contains(err.Error(), "required") {
		t.Fatalf("Decode = %v, want profile.weekly_hours is required", err)
	}
}
