// Package flow runs pipelines defined in a file: a YAML document that names
// inputs, declares agents (a prompt template and the fields of the JSON
// each answers with) and the steps that run them, in sequence, in parallel
// groups, over the items of a list (for_each) and in loops. Parse reads and
// validates a file, reporting every problem with its line; a Pipeline then
// becomes a pipeline.Definition (Definition), so that it runs on the engine
// with the journal, resume, cache, repairs, costs, the API and the web UI
// of the built-in pipelines. docs/pipeline-files.md describes the format.
package flow

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"go.yaml.in/yaml/v4"

	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/prompt"
	"github.com/madspark/madspark/structured"
)

// Problem is one thing wrong with a pipeline file, at a line.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s", input.Show(p.File), p.Line, p.Msg)
}

// Problems are all the problems of a file, in the order of their lines. It
// is the error Parse returns.
type Problems []Problem

// Error is the first problem, and how many others there are.
func (ps Problems) Error() string {
	if len(ps) == 0 {
		return "no problems"
	}
	if len(ps) == 1 {
		return ps[0].String()
	}
	return fmt.Sprintf("%s (and %d more problems)", ps[0], len(ps)-1)
}

// Input is a parameter of the pipeline.
type Input struct {
	Name, Type, Description string
	Required                bool
	Default                 any
	Enum                    []any
	line                    int
}

// ForEach makes an agent run over the items of a list.
type ForEach struct {
	// Over is "agent.field" or an input of list type.
	Over string
	// As is the name the item (each) or the whole list (batch) has in
	// the prompt; "item" by default.
	As string
	// Mode is "each" (one call per item, at most MaxParallel at once) or
	// "batch" (one call with the whole list, answering a list).
	Mode string
}

// Agent is one LLM role of the file.
type Agent struct {
	Name string
	// Title heads the agent's output in reports; its name in words when
	// the file gives none.
	Title       string
	Prompt      string
	System      string
	Temperature float64
	Model       string
	Provider    string
	MaxTokens   int
	ForEach     *ForEach
	// Output is the JSON Schema of one answer.
	Output json.RawMessage

	line       int
	promptLine int
	systemLine int
	props      map[string]string // output property → JSON type
	user       *template.Template
	system     *template.Template
	spec       *structured.Spec[map[string]any]
	refs       []ref
}

// Step is one step: an agent, a parallel group, or a loop.
type Step struct {
	Agents []string // one agent, or a parallel group
	Loop   *Loop
	line   int
}

// Loop repeats its steps until its condition holds or Max times.
type Loop struct {
	Steps []Step
	Until *Cond
	Max   int
	// Index numbers the loop in the file's order, from 1.
	Index int
}

// Pipeline is a parsed, valid pipeline file.
type Pipeline struct {
	File        string
	Name        string
	Description string
	Inputs      []Input
	Agents      map[string]*Agent
	Steps       []Step
	// order is the agents in the order the steps run them.
	order []string
}

// MaxParallel bounds the calls of a for_each agent in flight at once.
const MaxParallel = 4

var (
	nameRe  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
	lineRe  = regexp.MustCompile(`line (\d+)`)
)

// parser collects problems while reading one file.
type parser struct {
	file  string
	probs Problems
	fsys  fs.FS
}

func (p *parser) errf(line int, format string, a ...any) {
	p.probs = append(p.probs, Problem{File: p.file, Line: line, Msg: fmt.Sprintf(format, a...)})
}

// Parse reads and validates the pipeline file called file (for messages)
// with content data. Prompts' {{include:path}} directives are resolved in
// fsys (the file's directory); nil fsys makes an include a problem. All
// problems found are returned at once, as Problems.
func Parse(file string, data []byte, fsys fs.FS) (*Pipeline, error) {
	p := &parser{file: file, fsys: fsys}
	pl := p.parse(data)
	if len(p.probs) > 0 {
		sort.SliceStable(p.probs, func(i, j int) bool { return p.probs[i].Line < p.probs[j].Line })
		return nil, p.probs
	}
	return pl, nil
}

func (p *parser) parse(data []byte) *Pipeline {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 1
		if m := lineRe.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		p.errf(line, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	if len(doc.Content) == 0 {
		p.errf(1, "the file is empty")
		return nil
	}
	p.text(&doc)
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errf(root.Line, "the file must be a mapping with name, inputs, agents and steps")
		return nil
	}
	pl := &Pipeline{File: p.file, Agents: map[string]*Agent{}}
	fields := p.mapping(root, "the file", "name", "description", "inputs", "agents", "steps")
	if n := fields["name"]; n == nil {
		p.errf(root.Line, "name is required")
	} else if pl.Name = p.str(n, "name"); pl.Name != "" && !nameRe.MatchString(pl.Name) {
		p.errf(n.Line, "name %q must be lower-case letters, digits, _ or -, starting with a letter", pl.Name)
	}
	if n := fields["description"]; n != nil {
		pl.Description = p.str(n, "description")
	}
	if n := fields["inputs"]; n != nil {
		p.inputs(pl, n)
	}
	if n := fields["agents"]; n == nil {
		p.errf(root.Line, "agents is required")
	} else {
		p.agents(pl, n)
	}
	if n := fields["steps"]; n == nil {
		p.errf(root.Line, "steps is required")
	} else {
		loops := 0
		pl.Steps = p.steps(pl, n, &loops, false)
	}
	p.check(pl)
	return pl
}

// text reports every key and value of the document under n that is not
// text as input.Text takes it (a NUL or an escape sequence written as
// "\0" or "\e" in a quoted string), so that none reaches a prompt.
func (p *parser) text(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode {
		if err := input.Text("", n.Value); err != nil {
			p.errf(n.Line, "this %v", err)
		}
	}
	for _, c := range n.Content {
		p.text(c)
	}
}

// mapping returns the values of n, a mapping, by key, reporting keys not
// in allowed and keys given twice.
func (p *parser) mapping(n *yaml.Node, what string, allowed ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.errf(n.Line, "%s must be a mapping", what)
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case allowed != nil && !slices.Contains(allowed, k.Value):
			p.errf(k.Line, "unknown key %q in %s (allowed: %s)", k.Value, what, strings.Join(allowed, ", "))
		case out[k.Value] != nil:
			p.errf(k.Line, "%s: %q given twice", what, k.Value)
		default:
			out[k.Value] = v
		}
	}
	return out
}

// keys returns the keys of mapping n in order.
func keys(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i])
	}
	return out
}

func (p *parser) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errf(n.Line, "%s must be a string", what)
		return ""
	}
	return n.Value
}

func (p *parser) num(n *yaml.Node, what string) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		p.errf(n.Line, "%s must be a number, not %q", what, n.Value)
		return 0, false
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		p.errf(n.Line, "%s: %v", what, err)
		return 0, false
	}
	return f, true
}

func (p *parser) integer(n *yaml.Node, what string, lo, hi int) int {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.errf(n.Line, "%s must be a whole number, not %q", what, n.Value)
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || v < lo || v > hi {
		p.errf(n.Line, "%s must be %d..%d, not %s", what, lo, hi, n.Value)
		return 0
	}
	return v
}

var inputTypes = []string{"string", "number", "integer", "boolean", "[string]"}

func (p *parser) inputs(pl *Pipeline, n *yaml.Node) {
	m := p.mapping(n, "inputs")
	for _, k := range keys(n) {
		v := m[k.Value]
		if v == nil {
			continue
		}
		in := Input{Name: k.Value, Type: "string", line: k.Line}
		if !identRe.MatchString(in.Name) {
			p.errf(k.Line, "input name %q must be letters, digits and _, starting with a letter", in.Name)
		}
		f := p.mapping(v, "input "+in.Name, "type", "required", "default", "enum", "description")
		badType := false
		if t := f["type"]; t != nil {
			in.Type = typeName(t)
			if !slices.Contains(inputTypes, in.Type) {
				p.errf(t.Line, "input %s: unknown type %q (one of %s)", in.Name, in.Type, strings.Join(inputTypes, ", "))
				// The input is still declared, so that the templates that
				// read it are not reported too; its values go unchecked.
				in.Type, badType = "string", true
			}
		}
		if r := f["required"]; r != nil {
			if r.Tag != "!!bool" {
				p.errf(r.Line, "input %s: required must be true or false", in.Name)
			}
			in.Required = r.Value == "true"
		}
		if d := f["description"]; d != nil {
			in.Description = p.str(d, "input "+in.Name+" description")
		}
		if e := f["enum"]; e != nil && !badType {
			if e.Kind != yaml.SequenceNode || len(e.Content) == 0 {
				p.errf(e.Line, "input %s: enum must be a list of values", in.Name)
			} else {
				for _, c := range e.Content {
					if v, ok := p.value(c, in); ok {
						in.Enum = append(in.Enum, v)
					}
				}
			}
		}
		d := f["default"]
		if d != nil && in.Required {
			p.errf(d.Line, "input %s: a required input has no default", in.Name)
		}
		// A value cannot be checked against an unknown type.
		if d != nil && !badType {
			if v, ok := p.value(d, in); ok {
				in.Default = v
				if in.Enum != nil && !slices.ContainsFunc(in.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
					p.errf(d.Line, "input %s: the default %v is not one of the enum", in.Name, v)
				}
			}
		}
		pl.Inputs = append(pl.Inputs, in)
	}
}

// typeName is a type as written: "string", or "[string]" for a list.
func typeName(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode && len(n.Content) == 1 {
		return "[" + n.Content[0].Value + "]"
	}
	return n.Value
}

// value decodes n as a value of in's type.
func (p *parser) value(n *yaml.Node, in Input) (any, bool) {
	bad := func() (any, bool) {
		p.errf(n.Line, "input %s: %q is not a %s", in.Name, n.Value, in.Type)
		return nil, false
	}
	switch in.Type {
	case "[string]":
		if n.Kind != yaml.SequenceNode {
			return bad()
		}
		out := []any{}
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return bad()
			}
			out = append(out, c.Value)
		}
		return out, true
	}
	if n.Kind != yaml.ScalarNode {
		return bad()
	}
	switch in.Type {
	case "number":
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || (n.Tag != "!!int" && n.Tag != "!!float") {
			return bad()
		}
		return f, true
	case "integer":
		i, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return bad()
		}
		return i, true
	case "boolean":
		if n.Tag != "!!bool" {
			return bad()
		}
		return n.Value == "true", true
	}
	return n.Value, true
}

var agentKeys = []string{"title", "prompt", "system", "temperature", "output", "output_schema", "model", "provider", "max_tokens", "for_each"}

func (p *parser) agents(pl *Pipeline, n *yaml.Node) {
	m := p.mapping(n, "agents")
	if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		p.errf(n.Line, "agents: at least one agent is required")
	}
	for _, k := range keys(n) {
		v := m[k.Value]
		if v == nil {
			continue
		}
		a := &Agent{Name: k.Value, line: k.Line, Temperature: 0.7}
		if !identRe.MatchString(a.Name) {
			p.errf(k.Line, "agent name %q must be letters, digits and _, starting with a letter", a.Name)
		}
		if slices.ContainsFunc(pl.Inputs, func(in Input) bool { return in.Name == a.Name }) {
			p.errf(k.Line, "agent %s has the name of an input", a.Name)
		}
		if a.Name == "repairs" {
			p.errf(k.Line, "agent name repairs is taken: the result lists the run's repairs under it")
		}
		f := p.mapping(v, "agent "+a.Name, agentKeys...)
		if t := f["title"]; t != nil {
			a.Title = strings.TrimSpace(p.str(t, "agent "+a.Name+" title"))
		}
		if f["prompt"] == nil {
			p.errf(k.Line, "agent %s: prompt is required", a.Name)
		} else {
			a.Prompt, a.promptLine = p.expand(f["prompt"], a.Name), textLine(f["prompt"])
		}
		if s := f["system"]; s != nil {
			a.System, a.systemLine = p.expand(s, a.Name), textLine(s)
		}
		if t := f["temperature"]; t != nil {
			if v, ok := p.num(t, "agent "+a.Name+" temperature"); ok {
				if v < 0 || v > 2 {
					p.errf(t.Line, "agent %s: temperature must be 0..2, not %v", a.Name, v)
				}
				a.Temperature = v
			}
		}
		if s := f["model"]; s != nil {
			a.Model = p.str(s, "agent "+a.Name+" model")
		}
		if s := f["provider"]; s != nil {
			a.Provider = p.str(s, "agent "+a.Name+" provider")
		}
		if s := f["max_tokens"]; s != nil {
			a.MaxTokens = p.integer(s, "agent "+a.Name+" max_tokens", 1, 1_000_000)
		}
		switch o, os := f["output"], f["output_schema"]; {
		case o != nil && os != nil:
			p.errf(os.Line, "agent %s: give output or output_schema, not both", a.Name)
		case o != nil:
			if o.Kind != yaml.MappingNode || len(o.Content) == 0 {
				p.errf(o.Line, "agent %s: output must map field names to types, such as {pitch: string}", a.Name)
			} else if s := p.fields(o, a.Name); s != nil {
				a.Output, _ = json.Marshal(s)
			}
		case os != nil:
			var s map[string]any
			if err := os.Decode(&s); err != nil {
				p.errf(os.Line, "agent %s: output_schema: %v", a.Name, err)
			} else if b, err := json.Marshal(s); err != nil {
				p.errf(os.Line, "agent %s: output_schema: %v", a.Name, err)
			} else if _, err := structured.NewSpecFromSchema(a.Name, b); err != nil {
				p.errf(os.Line, "agent %s: output_schema: %s", a.Name, strings.TrimPrefix(err.Error(), "structured: "))
			} else if props, _ := s["properties"].(map[string]any); len(props) == 0 {
				p.errf(os.Line, "agent %s: output_schema must declare properties", a.Name)
			} else {
				a.Output = b
			}
		default:
			p.errf(k.Line, "agent %s: output (or output_schema) is required: the fields it answers with", a.Name)
		}
		if fe := f["for_each"]; fe != nil {
			a.ForEach = p.forEach(fe, a.Name)
		}
		if a.Output != nil {
			a.props = properties(a.Output)
		}
		pl.Agents[a.Name] = a
	}
}

// properties maps the top-level properties of schema to their types.
func properties(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]string{}
	for k, v := range s.Properties {
		t, _ := v.Type.(string)
		out[k] = t
	}
	return out
}

// textLine is the line of the first line of scalar n's text.
func textLine(n *yaml.Node) int {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Line + 1
	}
	return n.Line
}

// expand resolves the includes of a prompt.
func (p *parser) expand(n *yaml.Node, agent string) string {
	text := p.str(n, "agent "+agent+" prompt")
	if !strings.Contains(text, "include:") {
		return text
	}
	if p.fsys == nil {
		p.errf(n.Line, "agent %s: {{include:}} needs the file's directory", agent)
		return text
	}
	l, err := prompt.New(p.fsys, "")
	if err == nil {
		text, err = l.Expand(agent, text)
	}
	if err == nil {
		err = input.Text("with its includes, the prompt", text)
	}
	if err != nil {
		p.errf(n.Line, "agent %s: %v", agent, err)
	}
	return text
}

// fields turns an output declaration into a JSON Schema.
func (p *parser) fields(n *yaml.Node, agent string) map[string]any {
	props := map[string]any{}
	var req []string
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !identRe.MatchString(k.Value) {
			p.errf(k.Line, "agent %s: output field %q must be letters, digits and _", agent, k.Value)
			ok = false
			continue
		}
		s := p.fieldType(v, agent, k.Value)
		if s == nil {
			ok = false
			continue
		}
		props[k.Value] = s
		req = append(req, k.Value)
	}
	if !ok {
		return nil
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

func (p *parser) fieldType(v *yaml.Node, agent, field string) map[string]any {
	switch v.Kind {
	case yaml.ScalarNode:
		switch v.Value {
		case "string", "number", "integer", "boolean":
			return map[string]any{"type": v.Value}
		}
		p.errf(v.Line, "agent %s: output field %s: unknown type %q (string, number, integer, boolean, [type] or {field: type})", agent, field, v.Value)
	case yaml.SequenceNode:
		if len(v.Content) != 1 {
			p.errf(v.Line, "agent %s: output field %s: a list type has one element type, such as [string]", agent, field)
			return nil
		}
		if it := p.fieldType(v.Content[0], agent, field); it != nil {
			return map[string]any{"type": "array", "items": it}
		}
	case yaml.MappingNode:
		return p.fields(v, agent)
	default:
		p.errf(v.Line, "agent %s: output field %s: not a type", agent, field)
	}
	return nil
}

func (p *parser) forEach(n *yaml.Node, agent string) *ForEach {
	f := p.mapping(n, "agent "+agent+" for_each", "over", "as", "mode")
	fe := &ForEach{As: "item", Mode: "each"}
	if o := f["over"]; o == nil {
		p.errf(n.Line, "agent %s: for_each needs over: agent.field", agent)
	} else {
		fe.Over = p.str(o, "for_each over")
	}
	if a := f["as"]; a != nil {
		if fe.As = p.str(a, "for_each as"); !identRe.MatchString(fe.As) {
			p.errf(a.Line, "agent %s: for_each as %q must be letters, digits and _", agent, fe.As)
		}
	}
	if m := f["mode"]; m != nil {
		if fe.Mode = p.str(m, "for_each mode"); fe.Mode != "each" && fe.Mode != "batch" {
			p.errf(m.Line, "agent %s: for_each mode must be each or batch, not %q", agent, fe.Mode)
		}
	}
	return fe
}

// steps reads a list of steps; inLoop forbids nested loops.
func (p *parser) steps(pl *Pipeline, n *yaml.Node, loops *int, inLoop bool) []Step {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.errf(n.Line, "steps must be a non-empty list of agents, [parallel, groups] and loops")
		return nil
	}
	var out []Step
	for _, s := range n.Content {
		st := Step{line: s.Line}
		switch s.Kind {
		case yaml.ScalarNode:
			st.Agents = []string{s.Value}
		case yaml.SequenceNode:
			if len(s.Content) < 2 {
				p.errf(s.Line, "a parallel group lists two agents or more")
			}
			for _, c := range s.Content {
				if c.Kind != yaml.ScalarNode {
					p.errf(c.Line, "a parallel group lists agents only")
					continue
				}
				st.Agents = append(st.Agents, c.Value)
			}
		case yaml.MappingNode:
			f := p.mapping(s, "a step", "loop")
			ln := f["loop"]
			if ln == nil {
				if len(s.Content) == 0 {
					p.errf(s.Line, "an empty step")
				}
				continue
			}
			if inLoop {
				p.errf(s.Line, "loops do not nest")
				continue
			}
			*loops++
			lf := p.mapping(ln, "loop", "steps", "until", "max")
			lp := &Loop{Index: *loops}
			if x := lf["steps"]; x == nil {
				p.errf(ln.Line, "loop: steps is required")
			} else {
				lp.Steps = p.steps(pl, x, loops, true)
			}
			if x := lf["max"]; x == nil {
				p.errf(ln.Line, "loop: max is required (1..20)")
			} else {
				lp.Max = p.integer(x, "loop max", 1, 20)
			}
			if x := lf["until"]; x == nil {
				p.errf(ln.Line, "loop: until is required, such as \"reviewer.verdict == 'approve'\"")
			} else if c, err := ParseCond(p.str(x, "loop until")); err != nil {
				p.errf(x.Line, "loop until: %v", err)
			} else {
				c.line = x.Line
				lp.Until = c
			}
			st.Loop = lp
		default:
			p.errf(s.Line, "a step is an agent, a [parallel, group] or a loop")
			continue
		}
		for _, a := range st.Agents {
			if pl.Agents[a] == nil {
				p.errf(s.Line, "unknown agent %q in steps (agents: %s)", a, strings.Join(sortedKeys(pl.Agents), ", "))
			}
		}
		out = append(out, st)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ref is a reference a template or condition makes: .name or .name.field.
type ref struct {
	path []string
	line int
}

// templateFuncs are available in prompts.
var templateFuncs = template.FuncMap{
	"join": joinList,
	"json": toJSON,
}

// parseTemplate parses text and collects its references.
func (p *parser) parseTemplate(a *Agent, section, text string, line int) *template.Template {
	t, err := template.New(a.Name + "." + section).Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		msg := err.Error()
		if m := regexp.MustCompile(`:(\d+): (.*)$`).FindStringSubmatch(msg); m != nil {
			l, _ := strconv.Atoi(m[1])
			p.errf(line+l-1, "agent %s: %s template: %s", a.Name, section, m[2])
		} else {
			p.errf(line, "agent %s: %s template: %v", a.Name, section, err)
		}
		return nil
	}
	if t.Tree != nil {
		walk(t.Tree.Root, func(n parse.Node, path []string) {
			l := line
			if loc, _ := t.Tree.ErrorContext(n); loc != "" {
				parts := strings.Split(loc, ":")
				if len(parts) >= 2 {
					if x, err := strconv.Atoi(parts[1]); err == nil {
						l = line + x - 1
					}
				}
			}
			a.refs = append(a.refs, ref{path: path, line: l})
		}, true)
	}
	return t
}

// walk calls fn with the fields that node reads from the template's root
// data; fields read inside range and with, where dot is another value,
// are not the root's.
func walk(node parse.Node, fn func(parse.Node, []string), rootDot bool) {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, fn, rootDot)
		}
	case *parse.ActionNode:
		walk(n.Pipe, fn, rootDot)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, fn, rootDot)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			walk(a, fn, rootDot)
		}
	case *parse.FieldNode:
		if rootDot {
			fn(n, n.Ident)
		}
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			fn(n, n.Ident[1:])
		}
	case *parse.IfNode:
		walk(n.Pipe, fn, rootDot)
		walk(n.List, fn, rootDot)
		walk(n.ElseList, fn, rootDot)
	case *parse.RangeNode:
		walk(n.Pipe, fn, rootDot)
		walk(n.List, fn, false)
		walk(n.ElseList, fn, rootDot)
	case *parse.WithNode:
		walk(n.Pipe, fn, rootDot)
		walk(n.List, fn, false)
		walk(n.ElseList, fn, rootDot)
	}
}
