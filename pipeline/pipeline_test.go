package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/sqlite"
)

func registry(t *testing.T, ideas madspark.IdeaStore) *pipeline.Registry {
	t.Helper()
	reg := pipeline.NewRegistry()
	count, err := debate.NewTokenCounter()
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []func() (pipeline.Definition, error){
		spark.Definition,
		func() (pipeline.Definition, error) { return chaos.Definition(ideas) },
		func() (pipeline.Definition, error) { return debate.Definition(count, nil, nil) },
	} {
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

func TestRegister(t *testing.T) {
	reg := registry(t, nil)
	var names []string
	for _, d := range reg.List() {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "chaos,debate,spark" {
		t.Fatalf("List = %v, want chaos, debate, spark", names)
	}
	d, _ := spark.Definition()
	if err := reg.Register(d); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("registering spark twice: %v", err)
	}
	run := func(context.Context, *engine.Run, pipeline.Params) (any, error) { return nil, nil }
	params := func() pipeline.Params { p := spark.DefaultParams(); return &p }
	for _, bad := range []pipeline.Definition{
		{Name: "Bad Name", NewParams: params, Run: run},
		{Name: "", NewParams: params, Run: run},
		{Name: "norun", NewParams: params},
		{Name: "noparams", Run: run},
		{Name: "value", NewParams: func() pipeline.Params { return badParams{} }, Run: run},
	} {
		if err := reg.Register(bad); err == nil {
			t.Errorf("Register(%q) succeeded", bad.Name)
		}
	}
	if _, err := reg.Get("proposal"); !errors.Is(err, pipeline.ErrUnknown) || !strings.Contains(err.Error(), "chaos, debate, spark") {
		t.Errorf("Get unknown: %v", err)
	}
	if _, err := reg.Decode("proposal", nil); !errors.Is(err, pipeline.ErrUnknown) {
		t.Errorf("Decode unknown: %v", err)
	}
}

// badParams is a Params that is not a pointer to a struct.
type badParams struct{}

func (badParams) Validate() error { return nil }

func TestDecodeStrict(t *testing.T) {
	reg := registry(t, nil)
	for _, tc := range []struct {
		name, pipeline, raw string
		field, want         string
	}{
		{"unknown field", "spark", `{"topic":"x","bogus":1}`, "bogus", "unknown field"},
		{"unknown nested field", "spark", `{"topic":"x","temperatures":{"generate":0.5,"hot":1}}`, "temperatures.hot", "unknown field"},
		{"legacy name is not canon", "spark", `{"theme":"x"}`, "theme", "unknown field"},
		{"wrong type", "spark", `{"topic":"x","num_candidates":"five"}`, "num_candidates", "want integer, got string"},
		{"fraction for an integer", "spark", `{"topic":"x","num_candidates":2.5}`, "num_candidates", "want integer, got number"},
		{"wrong nested type", "spark", `{"topic":"x","temperatures":{"generate":"hot"}}`, "temperatures.generate", "want number, got string"},
		{"out of range", "spark", `{"topic":"x","num_candidates":25}`, "num_candidates", "25"},
		{"out of range nested", "spark", `{"topic":"x","temperatures":{"skeptic":3}}`, "temperatures.skeptic", "3"},
		{"missing required", "spark", `{"context":"y"}`, "topic", "required"},
		{"chaos wrong type", "chaos", `{"prompt":"x","iterations":true}`, "iterations", "want integer, got boolean"},
		{"debate unknown", "debate", `{"query":"x","model":"gpt"}`, "model", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reg.Decode(tc.pipeline, json.RawMessage(tc.raw))
			var pe *pipeline.ParamsError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParamsError", err)
			}
			if pe.Field != tc.field || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %q (field %q), want field %q and %q", err, pe.Field, tc.field, tc.want)
			}
			// Not well-formed: an unknown field or a wrong type; the
			// rest is a value out of range or missing.
			malformed := strings.Contains(tc.want, "unknown") || strings.Contains(tc.want, "want ")
			if pe.Malformed != malformed {
				t.Fatalf("err = %q: Malformed = %v, want %v", err, pe.Malformed, malformed)
			}
		})
	}
	// Rules the schema cannot express come from Validate, naming the field.
	for raw, want := range map[string]string{
		`{"topic":"  "}`: "topic must not be empty",
		`{"topic":"x","num_candidates":2,"num_top_candidates":3}`: "num_top_candidates (3) must not exceed num_candidates (2)",
		`[1,2]`:              "must be a JSON object",
		`{"topic":`:          "invalid JSON",
		`{"topic":"a\xffb"}`: "",
	} {
		_, err := reg.Decode("spark", json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want an error with %q", raw, err, want)
		}
	}
}

// TestValidateErrorsNameTheirField: a rule only Validate knows names the
// parameter its message starts with, once; the message is kept whole.
func TestValidateErrorsNameTheirField(t *testing.T) {
	reg := registry(t, nil)
	for raw, field := range map[string]string{
		`{"topic":"  "}`: "topic",
		`{"topic":"x","num_candidates":2,"num_top_candidates":3}`: "num_top_candidates",
		`{"topic":"x","novelty_threshold":0}`:                     "novelty_threshold",
	} {
		_, err := reg.Decode("spark", json.RawMessage(raw))
		var pe *pipeline.ParamsError
		if !errors.As(err, &pe) || pe.Field != field || pe.Malformed {
			t.Errorf("Decode(%s) = %#v, want a ParamsError on %s, not malformed", raw, err, field)
			continue
		}
		if strings.Contains(err.Error(), field+": "+field) || !strings.HasPrefix(err.Error(), "spark parameters: "+field) {
			t.Errorf("Decode(%s): message %q names the field more than once or not first", raw, err)
		}
	}
}

// TestPrepare: Decode lets the pipeline complete what the client left out,
// and only that.
func TestPrepare(t *testing.T) {
	reg := pipeline.NewRegistry()
	var givens []bool
	err := reg.Register(pipeline.Definition{
		Name:      "seeded",
		NewParams: func() pipeline.Params { return &seeded{} },
		Run:       func(context.Context, *engine.Run, pipeline.Params) (any, error) { return nil, nil },
		Prepare: func(p pipeline.Params, given func(string) bool) {
			givens = append(givens, given("seed"))
			if !given("seed") {
				p.(*seeded).Seed = 42
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// What Prepare fills the same way each time is a default of the
	// schema.
	if d, err := reg.Defaults("seeded"); err != nil || string(d) != `{"name":"","seed":42}` {
		t.Errorf("Defaults = %s, %v", d, err)
	}
	givens = nil
	for raw, want := range map[string]uint64{``: 42, `{}`: 42, `{"seed":0}`: 0, `{"seed":7}`: 7, `{"name":"x"}`: 42} {
		p, err := reg.Decode("seeded", json.RawMessage(raw))
		if err != nil {
			t.Fatalf("Decode(%s): %v", raw, err)
		}
		if got := p.(*seeded).Seed; got != want {
			t.Errorf("Decode(%s).Seed = %d, want %d", raw, got, want)
		}
	}
	if len(givens) != 5 {
		t.Errorf("Prepare called %d times, want 5", len(givens))
	}
}

type seeded struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
}

func (*seeded) Validate() error { return nil }

func TestDecodeStartsFromDefaults(t *testing.T) {
	reg := registry(t, nil)
	p, err := reg.Decode("spark", json.RawMessage(`{"topic":"urban farming","num_candidates":7,"temperatures":{"generate":1.1}}`))
	if err != nil {
		t.Fatal(err)
	}
	sp := p.(*spark.Params)
	d := spark.DefaultParams()
	if sp.Topic != "urban farming" || sp.NumCandidates != 7 || sp.NumTopCandidates != d.NumTopCandidates ||
		sp.Temperatures.Generate != 1.1 || sp.Temperatures.Evaluate != d.Temperatures.Evaluate || !sp.NoveltyFilter {
		t.Fatalf("decoded %+v", sp)
	}
	// The stored form of a run's params decodes to the same value.
	stored, _ := json.Marshal(sp)
	again, err := reg.Decode("spark", stored)
	if err != nil || !reflect.DeepEqual(again.(*spark.Params), sp) {
		t.Fatalf("round trip: %+v, %v", again, err)
	}
	// No parameters at all: the defaults, which lack a topic.
	if _, err := reg.Decode("spark", nil); err == nil || !strings.Contains(err.Error(), "topic") {
		t.Fatalf("Decode(nil) = %v", err)
	}
	// Each call gets its own value.
	a, _ := reg.Decode("chaos", json.RawMessage(`{"prompt":"a"}`))
	b, _ := reg.Decode("chaos", json.RawMessage(`{"prompt":"b"}`))
	if a.(*chaos.Params).Prompt != "a" || b.(*chaos.Params).Prompt != "b" {
		t.Fatal("decoded params share storage")
	}
}

// TestDecodeNullIsLeftOut: a null member is one left out, at any depth (a
// form's empty list, params stored from a nil slice); a required one is
// still missing.
func TestDecodeNullIsLeftOut(t *testing.T) {
	reg := registry(t, nil)
	p, err := reg.Decode("spark", json.RawMessage(`{"topic":"urban farming","seed_ideas":null,"context":null,"temperatures":{"generate":null,"evaluate":0.1}}`))
	if err != nil {
		t.Fatal(err)
	}
	sp, d := p.(*spark.Params), spark.DefaultParams()
	if sp.SeedIdeas != nil || sp.Context != d.Context || sp.Temperatures.Generate != d.Temperatures.Generate || sp.Temperatures.Evaluate != 0.1 {
		t.Fatalf("decoded %+v", sp)
	}
	if _, err := reg.Decode("spark", json.RawMessage(`{"topic":null}`)); err == nil || !strings.Contains(err.Error(), "topic") {
		t.Fatalf("a required topic sent as null: %v", err)
	}
	// A chaos seed sent as null is not given: Prepare fixes one.
	c, err := reg.Decode("chaos", json.RawMessage(`{"prompt":"a","seed":null}`))
	if err != nil || c.(*chaos.Params).Seed == 0 {
		t.Fatalf("chaos with a null seed: %+v, %v", c, err)
	}
}

func TestParamsSchema(t *testing.T) {
	reg := registry(t, nil)
	raw, err := reg.ParamsSchema("spark")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Type                 string                    `json:"type"`
		Required             []string                  `json:"required"`
		AdditionalProperties *bool                     `json:"additionalProperties"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || strings.Join(s.Required, ",") != "topic" || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Fatalf("schema = %s", raw)
	}
	nc := s.Properties["num_candidates"]
	if nc["type"] != "integer" || nc["minimum"] != float64(1) || nc["maximum"] != float64(20) || nc["default"] != float64(5) {
		t.Fatalf("num_candidates = %v", nc)
	}
	if _, ok := s.Properties["stage_timeout"]; ok {
		t.Fatal("a field hidden from JSON is in the schema")
	}
	if temps := s.Properties["temperatures"]; temps["type"] != "object" || temps["default"] == nil {
		t.Fatalf("temperatures = %v", temps)
	}
	for _, d := range reg.List() {
		if raw, err := reg.ParamsSchema(d.Name); err != nil || !json.Valid(raw) {
			t.Errorf("schema of %s: %v", d.Name, err)
		}
	}
}

// TestRunAndFiles runs each registered pipeline in mock mode through its
// Definition, then renders its files from the stored record.
func TestRunAndFiles(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := registry(t, db)
	responders := map[string]mock.Responder{}
	for _, m := range []map[string]mock.Responder{spark.MockResponders(), chaos.MockResponders(), debate.MockResponders()} {
		maps.Copy(responders, m)
	}
	e := &engine.Engine{Store: db, Client: llm.Chain(mock.New(responders))}
	for name, tc := range map[string]struct {
		params, topic string
		files         []string
	}{
		"spark":  {`{"topic":"urban farming","num_candidates":3,"num_top_candidates":2}`, "urban farming", []string{"report.md", "result.json"}},
		"chaos":  {`{"prompt":"food waste","seed":3}`, "food waste", []string{"final_output.txt", "result.json", "iteration_1/judge.json", "iteration_1/chaos.txt"}},
		"debate": {`{"query":"Compare B-trees and LSM trees step by step","no_search":true}`, "Compare B-trees and LSM trees step by step", []string{"answer.md", "result.json"}},
	} {
		t.Run(name, func(t *testing.T) {
			def, err := reg.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := reg.Decode(name, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			if got := def.Topic(p); got != tc.topic {
				t.Fatalf("Topic = %q", got)
			}
			r, err := e.Start(ctx, engine.RunInfo{Pipeline: name, Mode: "mock", Provider: "mock", Model: "mock-1", Params: p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := def.Run(ctx, r, p)
			if err := r.Finish(ctx, res, err); err != nil {
				t.Fatal(err)
			}
			rec, _ := db.Run(ctx, r.ID())
			if rec.Status != madspark.RunSucceeded {
				t.Fatalf("run %s: %s", rec.Status, rec.Error)
			}
			files, err := def.Files(rec)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				if len(files[f]) == 0 {
					t.Fatalf("no %s among %v", f, slicesKeys(files))
				}
			}
			for f, data := range files {
				if strings.HasSuffix(f, ".json") && !json.Valid(data) {
					t.Errorf("%s is not JSON", f)
				}
			}
			first := files[tc.files[0]]
			if !strings.Contains(strings.ToLower(string(first)), "mock data") {
				t.Errorf("%s does not say it is mock data:\n%s", tc.files[0], first)
			}
			// The stored params decode again, strictly, as resume does.
			if _, err := reg.Decode(name, rec.Params); err != nil {
				t.Fatalf("stored params: %v", err)
			}
		})
	}
}

func slicesKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestChaosSeedFixedAtDecode: a chaos run without a seed gets a random one
// when its parameters are decoded, so that the stored parameters replay;
// a seed the client gives, 0 included, is kept.
func TestChaosSeedFixedAtDecode(t *testing.T) {
	reg := registry(t, nil)
	seeds := map[uint64]bool{}
	for range 5 {
		p, err := reg.Decode("chaos", json.RawMessage(`{"prompt":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		seeds[p.(*chaos.Params).Seed] = true
	}
	if len(seeds) < 4 {
		t.Errorf("5 decodes without a seed gave seeds %v, want them random", seeds)
	}
	for raw, want := range map[string]uint64{`{"prompt":"x","seed":0}`: 0, `{"prompt":"x","seed":99}`: 99} {
		p, err := reg.Decode("chaos", json.RawMessage(raw))
		if err != nil || p.(*chaos.Params).Seed != want {
			t.Errorf("Decode(%s) seed = %v, %v; want %d", raw, p, err, want)
		}
	}
}

// mapParams are parameters known only at run time.
type mapParams map[string]any

func (mapParams) Validate() error { return nil }

func TestRegisterWithSchema(t *testing.T) {
	r := pipeline.NewRegistry()
	err := r.Register(pipeline.Definition{
		Name:      "file",
		NewParams: func() pipeline.Params { return &mapParams{"tone": "dry"} },
		Schema: json.RawMessage(`{"type":"object","properties":{
			"topic":{"type":"string"},"tone":{"type":"string","enum":["dry","warm"],"default":"dry"}},
			"required":["topic"],"additionalProperties":false}`),
		Run: func(context.Context, *engine.Run, pipeline.Params) (any, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Decode("file", json.RawMessage(`{"topic":"tools"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := *p.(*mapParams); got["topic"] != "tools" || got["tone"] != "dry" {
		t.Errorf("decoded %v", got)
	}
	for _, bad := range []string{`{}`, `{"topic":"x","tone":"loud"}`, `{"topic":"x","other":1}`, `{"topic":3}`} {
		if _, err := r.Decode("file", json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	d, _ := r.Defaults("file")
	if string(d) != `{"tone":"dry"}` {
		t.Errorf("defaults %s", d)
	}
}

// TestDecodeSaysWhatValidateSays: a value the schema and Validate both
// refuse is told in Validate's words, the command line's.
func TestDecodeSaysWhatValidateSays(t *testing.T) {
	reg := registry(t, nil)
	p := spark.DefaultParams()
	p.Topic, p.NumCandidates = "x", 25
	want := p.Validate()
	_, err := reg.Decode("spark", json.RawMessage(`{"topic":"x","num_candidates":25}`))
	var pe *pipeline.ParamsError
	if want == nil || !errors.As(err, &pe) || pe.Err.Error() != want.Error() || pe.Field != "num_candidates" || pe.Malformed {
		t.Fatalf("err = %v (%+v), want Validate's %v", err, pe, want)
	}
}
