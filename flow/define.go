package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
)

// Load parses the pipeline file at path; includes resolve in its directory.
func Load(path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline file: %w", err)
	}
	return Parse(path, data, os.DirFS(filepath.Dir(path)))
}

// LoadDir parses every *.yaml and *.yml file in dir, in name order. The
// error is the problems of all the files (Problems), or a name given twice.
func LoadDir(dir string) ([]*Pipeline, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pipelines directory: %w", err)
	}
	var out []*Pipeline
	var probs Problems
	names := map[string]string{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		p, err := Load(path)
		var ps Problems
		switch {
		case errors.As(err, &ps):
			probs = append(probs, ps...)
			continue
		case err != nil:
			return nil, err
		}
		if prev, ok := names[p.Name]; ok {
			probs = append(probs, Problem{File: path, Line: 1, Msg: fmt.Sprintf("pipeline %s is also defined in %s", p.Name, prev)})
			continue
		}
		names[p.Name] = path
		out = append(out, p)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return out, nil
}

// Params are a file pipeline's inputs, by name.
type Params map[string]any

// Validate accepts any Params: the registry validated them against the
// inputs' schema.
func (Params) Validate() error { return nil }

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
		Name:        p.Name,
		Title:       words(p.Name),
		Description: p.Description,
		NewParams: func() pipeline.Params {
			d := p.Defaults()
			return &d
		},
		Schema: p.ParamsSchema(),
		Run: func(ctx context.Context, r *engine.Run, params pipeline.Params) (any, error) {
			in, ok := params.(*Params)
			if !ok {
				return nil, fmt.Errorf("%s: parameters of type %T", p.Name, params)
			}
			return p.Run(ctx, r, *in)
		},
		Topic: func(params pipeline.Params) string {
			if in, ok := params.(*Params); ok && q != "" {
				s, _ := (*in)[q].(string)
				return s
			}
			return ""
		},
		QueryParam: q,
		Document:   p.Document,
	}
}

// InputsJSON turns command-line inputs, "name=value" each, into the
// parameters' JSON, converting each value to its input's type: a number,
// true or false, or for a list, comma-separated items. A required input
// left out is an error that names the flag it needs.
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
			return nil, fmt.Errorf("--input %s: %s has no such input (inputs: %s)", k, p.Name, strings.Join(names, ", "))
		}
		switch t {
		case "number", "integer":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("--input %s: %q is not a number", k, v)
			}
			out[k] = f
		case "boolean":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("--input %s: %q is not true or false", k, v)
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
