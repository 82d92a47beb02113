package flow

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
)

// Document lays out a succeeded run: a section per agent, in step order,
// headed by the agent's title, its output laid out by its schema (see
// blocks).
func (p *Pipeline) Document(run *madspark.Run) (*document.Document, error) {
	res, err := pipelineResult(run)
	if err != nil {
		return nil, err
	}
	d := &document.Document{Title: words(p.Name), Subtitle: p.Description}
	if run.Mode == "mock" {
		d.Notice = "MOCK DATA: these outputs were made up by the mock provider, not by a model."
	}
	for _, name := range p.order {
		v, ok := res[name]
		if !ok {
			continue
		}
		a := p.Agents[name]
		var schema map[string]any
		_ = json.Unmarshal(a.Output, &schema)
		if a.ForEach != nil {
			// Its output is the list of its outputs.
			schema = map[string]any{"type": "array", "items": schema}
		} else if m, ok := v.(map[string]any); ok && len(m) == 1 {
			// One field: the heading names it already.
			for k, f := range m {
				props, _ := schema["properties"].(map[string]any)
				schema, _ = props[k].(map[string]any)
				v = f
			}
		}
		d.Sections = append(d.Sections, document.Section{Title: orWords(a.Title, name), Blocks: blocks(schema, v)})
	}
	return d, nil
}

// pipelineResult reads a run's stored result: each agent's output by name.
func pipelineResult(run *madspark.Run) (map[string]any, error) {
	var res map[string]any
	if err := json.Unmarshal(run.Result, &res); err != nil {
		return nil, fmt.Errorf("run %s: stored result: %w", run.ID, err)
	}
	return res, nil
}

// orWords is s, or name in words when s is empty.
func orWords(s, name string) string {
	if s != "" {
		return s
	}
	return words(name)
}

// words turns a name into words for people: "creative_b" is "Creative b",
// "chaos-file" "Chaos file".
func words(name string) string {
	s := strings.TrimSpace(strings.NewReplacer("_", " ", "-", " ").Replace(name))
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// blocks lays out v, a value of the JSON Schema s, for reading: an
// object's fields in the order the schema requires them (then the others
// by name), each labelled with its title or its name in words; a list of
// texts or numbers as bullets; a list of objects whose fields are plain
// values (or lists of them) as a table, a column per field; any other list
// as numbered items.
func blocks(s map[string]any, v any) []document.Block {
	switch x := v.(type) {
	case map[string]any:
		var out []document.Block
		props, _ := s["properties"].(map[string]any)
		for _, k := range fieldOrder(s, x) {
			fs, _ := props[k].(map[string]any)
			label := label(fs, k)
			switch y := x[k].(type) {
			case map[string]any, []any:
				if l, ok := y.([]any); ok && len(l) == 0 {
					out = append(out, document.Para(document.Bold(label+": "), document.Plain("none")))
					continue
				}
				out = append(out, document.Para(document.Bold(label+":")))
				out = append(out, blocks(fs, y)...)
			default:
				out = append(out, document.Para(document.Bold(label+": "), document.Plain(text(y))))
			}
		}
		return out
	case []any:
		items, _ := s["items"].(map[string]any)
		if len(x) == 0 {
			return []document.Block{document.Text("none")}
		}
		if t := table(items, x); t != nil {
			return []document.Block{t}
		}
		if slices.IndexFunc(x, func(e any) bool { _, ok := e.(map[string]any); return ok }) < 0 {
			return []document.Block{document.Bullets(texts(x)...)}
		}
		var out []document.Block
		for i, e := range x {
			out = append(out, document.Para(document.Bold(fmt.Sprintf("%d.", i+1))))
			out = append(out, blocks(items, e)...)
		}
		return out
	}
	return []document.Block{document.Text(text(v))}
}

// table lays out a list of objects whose fields are plain values, or lists
// of them, as a table with a column per field; nil for any other list.
func table(items map[string]any, list []any) *document.Table {
	var objs []map[string]any
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		for _, f := range m {
			if _, nested := f.(map[string]any); nested {
				return nil
			}
			if l, ok := f.([]any); ok && slices.IndexFunc(l, func(e any) bool { _, ok := e.(map[string]any); return ok }) >= 0 {
				return nil
			}
		}
		objs = append(objs, m)
	}
	union := map[string]any{}
	for _, m := range objs {
		for k, f := range m {
			union[k] = f
		}
	}
	cols := fieldOrder(items, union)
	props, _ := items["properties"].(map[string]any)
	t := &document.Table{}
	for _, k := range cols {
		fs, _ := props[k].(map[string]any)
		t.Header = append(t.Header, label(fs, k))
	}
	for _, m := range objs {
		row := make([]string, len(cols))
		for i, k := range cols {
			if l, ok := m[k].([]any); ok {
				row[i] = strings.Join(texts(l), "; ")
			} else if f, ok := m[k]; ok {
				row[i] = text(f)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// fieldOrder is the order of v's fields: those s requires, as it lists
// them (the order a file declares its fields in), then the others by name.
func fieldOrder(s map[string]any, v map[string]any) []string {
	var out []string
	req, _ := s["required"].([]any)
	for _, r := range req {
		if k, ok := r.(string); ok {
			if _, has := v[k]; has && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	var rest []string
	for k := range v {
		if !slices.Contains(out, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// label names a field for people: its schema's title, else its name in
// words.
func label(s map[string]any, name string) string {
	t, _ := s["title"].(string)
	return orWords(t, name)
}

// text is a plain value as text: numbers without a needless fraction, yes
// and no for booleans.
func text(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case nil:
		return ""
	}
	return scalar(view(v))
}

func texts(l []any) []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = text(e)
	}
	return out
}
