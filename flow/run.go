package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// list and object are how lists and objects read in a prompt: a list as
// one "- item" line per item, an object as compact JSON. Templates still
// range over a list and read an object's fields.
type (
	list   []any
	object map[string]any
)

func (l list) String() string {
	var b strings.Builder
	for _, v := range l {
		b.WriteString("\n- ")
		b.WriteString(scalar(v))
	}
	return b.String()
}

func (o object) String() string { return toJSON(map[string]any(o)) }

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case list:
		return toJSON([]any(x))
	case object:
		return toJSON(map[string]any(x))
	}
	return fmt.Sprint(v)
}

// joinList joins a list's items with sep: {{join .fan.strengths ", "}}.
func joinList(v any, sep string) string {
	l, _ := v.(list)
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = scalar(x)
	}
	return strings.Join(parts, sep)
}

// toJSON is a value as compact JSON: {{json .critic}}.
func toJSON(v any) string {
	b, _ := json.Marshal(plain(v))
	return string(b)
}

// view turns decoded JSON into the template's types.
func view(v any) any {
	switch x := v.(type) {
	case []any:
		out := make(list, len(x))
		for i, e := range x {
			out[i] = view(e)
		}
		return out
	case map[string]any:
		out := make(object, len(x))
		for k, e := range x {
			out[k] = view(e)
		}
		return out
	}
	return v
}

// plain undoes view.
func plain(v any) any {
	switch x := v.(type) {
	case list:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case object:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	}
	return v
}

// LoopResult is what a loop of a run did.
type LoopResult struct {
	// Loop numbers the loop in the file, from 1.
	Loop       int    `json:"loop"`
	Iterations int    `json:"iterations"`
	StoppedBy  string `json:"stopped_by"` // "condition" or "max"
	// History holds every iteration's outputs, by agent; the outputs of the
	// last are also the run's outputs under the agents' names.
	History []map[string]any `json:"history"`
}

// state is a run's outputs so far.
type state struct {
	mu      sync.Mutex
	data    map[string]any // inputs and outputs
	outputs map[string]any
	loops   []LoopResult
}

func (s *state) snapshot(extra map[string]any) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]any, len(s.data)+len(extra))
	for k, v := range s.data {
		out[k] = view(v)
	}
	for k, v := range extra {
		out[k] = view(v)
	}
	return out
}

func (s *state) set(agent string, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[agent] = v
	s.outputs[agent] = v
}

// Run runs the pipeline as r with params (the inputs, defaults applied and
// validated) and returns its result: each agent's output under its name
// (a for_each agent's is the list of its outputs), under "_loops", when
// the file has loops, what each did, and under "repairs" the repairs made
// to the replies (empty, never null, when none).
func (p *Pipeline) Run(ctx context.Context, r *engine.Run, params map[string]any) (map[string]any, error) {
	st := &state{data: map[string]any{}, outputs: map[string]any{}}
	// An optional input without a default, left out, reads as empty.
	for _, in := range p.Inputs {
		st.data[in.Name] = map[string]any{"string": "", "number": 0.0, "integer": 0.0, "boolean": false, "[string]": []any{}}[in.Type]
	}
	for k, v := range params {
		st.data[k] = v
	}
	total := len(p.Steps)
	for i, step := range p.Steps {
		// Each step is announced as it starts, so that a client following
		// the run sees what it waits for.
		r.Emit(stepName(step), i*100/total, "")
		if err := p.runStep(ctx, r, st, step, ""); err != nil {
			return nil, err
		}
	}
	res := map[string]any{}
	for k, v := range st.outputs {
		res[k] = v
	}
	if len(st.loops) > 0 {
		res["_loops"] = st.loops
	}
	res["repairs"] = r.Repairs()
	return res, nil
}

func stepName(s Step) string {
	if s.Loop != nil {
		return fmt.Sprintf("loop %d", s.Loop.Index)
	}
	return strings.Join(s.Agents, "+")
}

// runStep runs one step; suffix tells loop iterations apart in the journal.
func (p *Pipeline) runStep(ctx context.Context, r *engine.Run, st *state, step Step, suffix string) error {
	if step.Loop != nil {
		return p.runLoop(ctx, r, st, step.Loop)
	}
	if len(step.Agents) == 1 {
		return p.runAgent(ctx, r, st, p.Agents[step.Agents[0]], suffix)
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, name := range step.Agents {
		g.Go(func() error { return p.runAgent(gctx, r, st, p.Agents[name], suffix) })
	}
	return g.Wait()
}

func (p *Pipeline) runLoop(ctx context.Context, r *engine.Run, st *state, l *Loop) error {
	res := LoopResult{Loop: l.Index, StoppedBy: "max"}
	agents := loopAgents(l)
	// On the first iteration, the loop's later agents read as empty.
	for _, a := range agents {
		st.mu.Lock()
		if _, ok := st.data[a]; !ok {
			st.data[a] = emptyOf(p.Agents[a])
		}
		st.mu.Unlock()
	}
	for it := 1; it <= l.Max; it++ {
		suffix := ""
		if it > 1 {
			suffix = "@" + strconv.Itoa(it)
		}
		for _, step := range l.Steps {
			if err := p.runStep(ctx, r, st, step, suffix); err != nil {
				return err
			}
		}
		snap := map[string]any{}
		st.mu.Lock()
		for _, a := range agents {
			snap[a] = st.outputs[a]
		}
		st.mu.Unlock()
		res.Iterations = it
		res.History = append(res.History, snap)
		if l.Until.Eval(snap) {
			res.StoppedBy = "condition"
			break
		}
	}
	st.mu.Lock()
	st.loops = append(st.loops, res)
	st.mu.Unlock()
	return nil
}

// emptyOf is an empty output of a: empty strings, zeros, empty lists.
func emptyOf(a *Agent) any {
	if a.ForEach != nil {
		return []any{}
	}
	out := map[string]any{}
	for k, t := range a.props {
		switch t {
		case "string":
			out[k] = ""
		case "number", "integer":
			out[k] = 0.0
		case "boolean":
			out[k] = false
		case "array":
			out[k] = []any{}
		default:
			out[k] = map[string]any{}
		}
	}
	return out
}

func (p *Pipeline) runAgent(ctx context.Context, r *engine.Run, st *state, a *Agent, suffix string) error {
	if a.ForEach == nil {
		out, err := p.call(ctx, r, a, a.Name+suffix, st.snapshot(nil))
		if err != nil {
			return err
		}
		st.set(a.Name, out)
		return nil
	}
	items, err := p.items(st, a.ForEach)
	if err != nil {
		return fmt.Errorf("%s: %w", a.Name, err)
	}
	if a.ForEach.Mode == "batch" {
		out, err := p.call(ctx, r, a, a.Name+suffix, st.snapshot(map[string]any{a.ForEach.As: items}))
		if err != nil {
			return err
		}
		list, _ := out["items"].([]any)
		if list == nil {
			list = []any{}
		}
		st.set(a.Name, list)
		return nil
	}
	outs := make([]any, len(items))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(MaxParallel)
	for i, item := range items {
		g.Go(func() error {
			out, err := p.call(gctx, r, a, fmt.Sprintf("%s%s[%d]", a.Name, suffix, i), st.snapshot(map[string]any{a.ForEach.As: item}))
			outs[i] = out
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	st.set(a.Name, outs)
	return nil
}

// items is the list a for_each goes over.
func (p *Pipeline) items(st *state, fe *ForEach) ([]any, error) {
	head, field, _ := strings.Cut(fe.Over, ".")
	st.mu.Lock()
	defer st.mu.Unlock()
	v := st.data[head]
	if field != "" {
		obj, _ := v.(map[string]any)
		v = obj[field]
	}
	switch l := v.(type) {
	case []any:
		return l, nil
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("for_each over %s: not a list", fe.Over)
}

// callInput is what a call's output depends on: its journal input.
type callInput struct {
	System      string  `json:"system"`
	User        string  `json:"user"`
	Model       string  `json:"model,omitempty"`
	Provider    string  `json:"provider,omitempty"`
	Temperature float64 `json:"temperature"`
	MaxTokens   int     `json:"max_tokens,omitempty"`
}

// call renders a's prompts with data and asks the model, as the journaled
// step key.
func (p *Pipeline) call(ctx context.Context, r *engine.Run, a *Agent, key string, data map[string]any) (map[string]any, error) {
	var user, sys strings.Builder
	if err := a.user.Execute(&user, data); err != nil {
		return nil, fmt.Errorf("%s: prompt: %w", a.Name, err)
	}
	if a.system != nil {
		if err := a.system.Execute(&sys, data); err != nil {
			return nil, fmt.Errorf("%s: system prompt: %w", a.Name, err)
		}
	}
	in := callInput{System: strings.TrimSpace(sys.String()), User: strings.TrimSpace(user.String()), Model: a.Model,
		Provider: a.Provider, Temperature: a.Temperature, MaxTokens: a.MaxTokens}
	return engine.Step(ctx, r, key, in, func(ctx context.Context, c llm.Client) (map[string]any, error) {
		req := llm.Request{
			Agent:       p.Name + "." + a.Name,
			Provider:    in.Provider,
			Model:       in.Model,
			System:      in.System,
			Messages:    []llm.Message{{Role: llm.RoleUser, Content: in.User}},
			Temperature: in.Temperature,
			MaxTokens:   in.MaxTokens,
			Input:       data,
		}
		out, _, err := a.spec.Generate(ctx, c, req, nil)
		return out, err
	})
}

// StructuredAgents lists the file's agents, named as their requests and repairs
// name them ("pitch.writer"), with the Specs their replies are read with.
func (p *Pipeline) StructuredAgents() []structured.Agent {
	var out []structured.Agent
	for _, name := range p.order {
		if a := p.Agents[name]; a != nil && a.spec != nil {
			out = append(out, structured.Agent{Name: p.Name + "." + name, Spec: a.spec})
		}
	}
	return out
}

// Order returns the agents in the order the steps run them.
func (p *Pipeline) Order() []string { return append([]string(nil), p.order...) }
