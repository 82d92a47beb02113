package flow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/rootfs"
)

// Load parses the pipeline file at path, a file the user named; includes
// resolve in its directory and are opened inside it (package rootfs).
func Load(path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline file: %w", err)
	}
	return Parse(path, data, rootfs.FS(filepath.Dir(path)))
}

// LoadDir parses every *.yaml and *.yml file in dir, in name order. Each
// file, and what it includes, is opened inside dir: a link that leads out
// of it is a problem of that file. The error is the problems of all the
// files (Problems), or a name given twice.
func LoadDir(dir string) ([]*Pipeline, error) {
	ps, probs, err := LoadEach(dir)
	if err != nil {
		return nil, err
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return ps, nil
}

// LoadEach parses every *.yaml and *.yml file in dir, in name order, as
// LoadDir does, and returns the files that are good beside the problems of
// the others (a file defining a pipeline an earlier file defined is one).
// The error is for dir itself.
func LoadEach(dir string) ([]*Pipeline, Problems, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("pipelines directory: %w", err)
	}
	fsys := rootfs.FS(dir)
	var out []*Pipeline
	var probs Problems
	names := map[string]string{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			probs = append(probs, Problem{File: path, Line: 1, Msg: "cannot be read: " + readError(err)})
			continue
		}
		p, err := Parse(path, data, fsys)
		if ps, ok := errors.AsType[Problems](err); ok {
			probs = append(probs, ps...)
			continue
		} else if err != nil {
			return nil, nil, err
		}
		if prev, ok := names[p.Name]; ok {
			probs = append(probs, Problem{File: path, Line: 1, Msg: fmt.Sprintf("pipeline %s is also defined in %s", p.Name, input.Show(prev))})
			continue
		}
		names[p.Name] = path
		out = append(out, p)
	}
	return out, probs, nil
}

// readError is why a file could not be read, without the path the
// problem names already.
func readError(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// Params are a file pipeline's inputs, by name. A whole number is an
// int64, any other number a float64, so that an integer input reaches a
// prompt exactly as it was given.
type Params map[string]any

// Validate accepts any Params: the registry validated them against the
// inputs' schema.
func (Params) Validate() error { return nil }

// UnmarshalJSON decodes a JSON object of inputs, keeping each whole number
// (one written without a fraction or an exponent) an int64; one beyond
// int64 is an *input.Error naming the input, never rounded into a float.
func (p *Params) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	for k, v := range m {
		n, err := numbers(k, v)
		if err != nil {
			return err
		}
		m[k] = n
	}
	if *p == nil {
		*p = Params{}
	}
	maps.Copy(*p, m)
	return nil
}

// numbers turns the json.Numbers in v, at field, into int64 (whole
// numbers) and float64 (the others).
func numbers(field string, v any) (any, error) {
	var err error
	switch x := v.(type) {
	case json.Number:
		if !strings.ContainsAny(x.String(), ".eE") {
			return input.ParseInt(field, x.String())
		}
		return input.ParseFloat(field, x.String())
	case []any:
		for i := range x {
			if x[i], err = numbers(fmt.Sprintf("%s[%d]", field, i), x[i]); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k := range x {
			if x[k], err = numbers(field+"."+k, x[k]); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// Defaults returns the inputs' defaults.
func (p *Pipeline) Defaults() Params {
	out := Params{}
	for _, in := range p.Inputs {
		if in.Default != nil {
			out[in.Name] = in.Default
		}
	}
	return out
}

// ParamsSchema is the JSON Schema of the inputs: their types, defaults,
// enums and descriptions, required ones listed; nothing else allowed.
func (p *Pipeline) ParamsSchema() json.RawMessage {
	props := map[string]any{}
	req := []string{}
	for _, in := range p.Inputs {
		// A form labels the input with its description, else its name in
		// words.
		s := map[string]any{"title": orWords(in.Description, in.Name)}
		if in.Type == "[string]" {
			s["type"], s["items"] = "array", map[string]any{"type": "string"}
		} else {
			s["type"] = in.Type
		}
		if in.Description != "" {
			s["description"] = in.Description
		}
		if in.Enum != nil {
			s["enum"] = in.Enum
		}
		if in.Default != nil {
			s["default"] = in.Default
		}
		if in.Required {
			req = append(req, in.Name)
			if in.Type == "string" {
				s["minLength"] = 1
			}
		}
		props[in.Name] = s
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false})
	return b
}

// ResultSchema is the JSON Schema of a run's result: each agent's output
// under its name, an object with its declared fields' types (a for_each
// agent's a list), "_loops", what each loop did, and "repairs", the
// repairs made to the replies. It gives the
// results' shape only; a field's own constraints are the reply rules'.
func (p *Pipeline) ResultSchema() json.RawMessage {
	props := map[string]any{}
	for _, name := range p.order {
		a := p.Agents[name]
		fields := map[string]any{}
		for k, t := range a.props {
			if t != "" {
				fields[k] = map[string]any{"type": t}
			} else {
				fields[k] = map[string]any{}
			}
		}
		out := map[string]any{"type": "object", "properties": fields}
		switch {
		case a.ForEach != nil && a.ForEach.Mode == "batch":
			out = map[string]any{"type": "array"} // the items of the one answer's list
		case a.ForEach != nil:
			out = map[string]any{"type": "array", "items": out}
		}
		props[name] = out
	}
	props["_loops"] = map[string]any{"type": "array", "description": "what each loop did: its iterations, what stopped it and every iteration's outputs",
		"items": map[string]any{"type": "object", "properties": map[string]any{
			"loop": map[string]any{"type": "integer"}, "iterations": map[string]any{"type": "integer"},
			"stopped_by": map[string]any{"type": "string"}, "history": map[string]any{"type": []any{"array", "null"}, "items": map[string]any{"type": "object"}},
		}}}
	props["repairs"] = map[string]any{"type": "array", "description": "the repairs made to the replies: step, agent, rule, path, action",
		"items": map[string]any{"type": "object"}}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	return b
}

// queryParam is the input one line of text fills: the only required
// string input, or with none required, the first string input.
func (p *Pipeline) queryParam() string {
	var required, first string
	nreq := 0
	for _, in := range p.Inputs {
		if in.Required {
			nreq++
			if in.Type == "string" {
				required = in.Name
			}
		}
		if first == "" && in.Type == "string" && in.Enum == nil {
			first = in.Name
		}
	}
	switch {
	case nreq == 1:
		return required
	case nreq == 0:
		return first
	}
	return ""
}

// Definition describes p to the registry.
func (p *Pipeline) Definition() pipeline.Definition {
	q := p.queryParam()
	return pipeline.Definition{
		Name:         p.Name,
		Title:        words(p.Name),
		Description:  p.Description,
		NewParams:    pipeline.Defaults(p.Defaults),
		Schema:       p.ParamsSchema(),
		ResultSchema: p.ResultSchema(),
		Run: pipeline.Runs(func(ctx context.Context, r *engine.Run, in *Params) (any, error) {
			return p.Run(ctx, r, *in)
		}),
		Topic: pipeline.Topics(func(in *Params) string {
			if q != "" {
				s, _ := (*in)[q].(string)
				return s
			}
			// The first input given, in the file's order.
			for _, input := range p.Inputs {
				if v, ok := (*in)[input.Name]; ok && v != nil && v != "" {
					return fmt.Sprint(v)
				}
			}
			return ""
		}),
		QueryParam: q,
		Document:   p.Document,
	}
}

// InputsJSON turns command-line inputs, "name=value" each, into the
// parameters' JSON, converting each value to its input's type: a finite
// number (a whole number within int64 for an integer), true or false, or
// for a list, comma-separated items. Text is checked as input.Text checks
// it. A required input left out is an error that names the flag it needs.
func (p *Pipeline) InputsJSON(pairs []string) (json.RawMessage, error) {
	types := map[string]string{}
	var names []string
	for _, in := range p.Inputs {
		types[in.Name] = in.Type
		names = append(names, in.Name)
	}
	out := map[string]any{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--input %q: want name=value", kv)
		}
		t, known := types[k]
		if !known {
			return nil, fmt.Errorf("--input %s: %s has no such input (inputs: %s)", input.Show(k), p.Name, strings.Join(names, ", "))
		}
		field := "--input " + k
		if err := input.Text(field, v); err != nil {
			return nil, err
		}
		switch t {
		case "integer":
			n, err := input.ParseInt(field, v)
			if err != nil {
				return nil, err
			}
			out[k] = n
		case "number":
			f, err := input.ParseFloat(field, v)
			if err != nil {
				return nil, err
			}
			out[k] = json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		case "boolean":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("--input %s: %s is not true or false", k, input.Show(v))
			}
			out[k] = b
		case "[string]":
			items := []string{}
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					items = append(items, s)
				}
			}
			out[k] = items
		default:
			out[k] = v
		}
	}
	var missing []string
	for _, in := range p.Inputs {
		if _, ok := out[in.Name]; !ok && in.Required {
			missing = append(missing, "--input "+in.Name+"=VALUE")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s needs %s", p.Name, strings.Join(missing, " "))
	}
	return json.Marshal(out)
}
