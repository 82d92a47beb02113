package flow

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/madspark/madspark/structured"
)

// check validates what depends on more than one part of the file: the
// templates' references, the order of the steps, cycles, unused agents,
// for_each sources and loop conditions.
func (p *parser) check(pl *Pipeline) {
	inputs := map[string]Input{}
	for _, in := range pl.Inputs {
		inputs[in.Name] = in
	}
	for _, name := range sortedKeys(pl.Agents) {
		a := pl.Agents[name]
		a.user = p.parseTemplate(a, "prompt", a.Prompt, a.promptLine)
		if a.System != "" {
			a.system = p.parseTemplate(a, "system", a.System, a.systemLine)
		}
		if a.Output == nil {
			continue
		}
		schema := a.Output
		if a.ForEach != nil && a.ForEach.Mode == "batch" {
			var one any
			_ = json.Unmarshal(a.Output, &one)
			schema, _ = json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"items": map[string]any{"type": "array", "items": one}},
				"required": []string{"items"}, "additionalProperties": false})
		}
		spec, err := structured.NewSpecFromSchema(pl.Name+"_"+name, schema)
		if err != nil {
			p.errf(a.line, "agent %s: output: %v", name, err)
		}
		a.spec = spec
	}
	// Cycles first: they explain the forward references they make.
	// A loop's agents may read each other (the previous iteration's); an
	// agent that reads its own output is told so by checkRefs.
	loopOf := map[string]int{}
	for _, st := range pl.Steps {
		if st.Loop != nil {
			for _, a := range loopAgents(st.Loop) {
				loopOf[a] = st.Loop.Index
			}
		}
	}
	deps := map[string][]string{}
	for _, name := range sortedKeys(pl.Agents) {
		for _, r := range pl.Agents[name].refs {
			if b := pl.Agents[r.path[0]]; b != nil && b.Name != name && !slices.Contains(deps[name], b.Name) && (loopOf[name] == 0 || loopOf[name] != loopOf[b.Name]) {
				deps[name] = append(deps[name], b.Name)
			}
		}
	}
	inCycle := map[string]bool{}
	for _, name := range sortedKeys(pl.Agents) {
		if c := cycleFrom(name, deps); c != nil && !inCycle[name] {
			for _, n := range c {
				inCycle[n] = true
			}
			p.errf(pl.Agents[name].line, "cycle: %s", strings.Join(c, " → "))
		}
	}

	seen := map[string]int{} // agent → line of its step
	avail := map[string]bool{}
	var visit func(steps []Step, loop *Loop)
	visit = func(steps []Step, loop *Loop) {
		for _, st := range steps {
			if st.Loop != nil {
				visit(st.Loop.Steps, st.Loop)
				continue
			}
			for _, a := range st.Agents {
				if l, ok := seen[a]; ok {
					p.errf(st.line, "agent %s runs twice in steps (also on line %d); declare another agent", a, l)
				}
				seen[a] = st.line
			}
			// The agents of a loop may read those that come later in it:
			// the previous iteration's output (empty on the first).
			later := map[string]bool{}
			if loop != nil {
				for _, a := range loopAgents(loop) {
					later[a] = true
				}
			}
			for _, a := range st.Agents {
				ag := pl.Agents[a]
				if ag == nil {
					continue
				}
				p.checkRefs(pl, ag, inputs, avail, later, st.Agents, inCycle)
				if ag.ForEach != nil {
					p.checkForEach(pl, ag, inputs, avail)
				}
			}
			for _, a := range st.Agents {
				if pl.Agents[a] != nil {
					avail[a] = true
					pl.order = append(pl.order, a)
				}
			}
		}
		if loop != nil && loop.Until != nil {
			for _, r := range loop.Until.refs() {
				p.checkField(pl, r, avail, "loop until", r.line)
			}
		}
	}
	visit(pl.Steps, nil)
	for _, name := range sortedKeys(pl.Agents) {
		if _, ok := seen[name]; !ok {
			p.errf(pl.Agents[name].line, "agent %s is never used in steps", name)
		}
	}
}

func loopAgents(l *Loop) []string {
	var out []string
	for _, st := range l.Steps {
		out = append(out, st.Agents...)
	}
	return out
}

// cycleFrom returns a cycle of deps through start, or nil.
func cycleFrom(start string, deps map[string][]string) []string {
	var path []string
	onPath := map[string]bool{}
	done := map[string]bool{}
	var dfs func(n string) []string
	dfs = func(n string) []string {
		if onPath[n] {
			if n == start {
				return append(append([]string{}, path...), n)
			}
			return nil
		}
		if done[n] {
			return nil
		}
		onPath[n] = true
		path = append(path, n)
		for _, d := range deps[n] {
			if c := dfs(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		onPath[n] = false
		done[n] = true
		return nil
	}
	return dfs(start)
}

// checkRefs checks that each reference of a's templates is an input, a's
// for_each item or an output produced earlier.
func (p *parser) checkRefs(pl *Pipeline, a *Agent, inputs map[string]Input, avail, later map[string]bool, group []string, inCycle map[string]bool) {
	for _, r := range a.refs {
		head := r.path[0]
		if _, ok := inputs[head]; ok {
			if len(r.path) > 1 {
				p.errf(r.line, "agent %s: input %s has no field %s", a.Name, head, r.path[1])
			}
			continue
		}
		if a.ForEach != nil && head == a.ForEach.As {
			continue
		}
		b := pl.Agents[head]
		switch {
		case b == nil:
			p.errf(r.line, "agent %s: {{.%s}} is neither an input nor an agent", a.Name, strings.Join(r.path, "."))
			continue
		case b == a && !later[head]:
			p.errf(r.line, "agent %s refers to its own output {{.%s}}", a.Name, strings.Join(r.path, "."))
			continue
		case inCycle[a.Name] && inCycle[head]:
			continue
		case avail[head] || later[head]:
		case slices.Contains(group, head):
			p.errf(r.line, "agent %s refers to {{.%s}}, which runs in the same parallel group, not earlier", a.Name, strings.Join(r.path, "."))
			continue
		default:
			p.errf(r.line, "agent %s refers to {{.%s}}, which is not produced earlier", a.Name, strings.Join(r.path, "."))
			continue
		}
		p.checkField(pl, r, nil, "agent "+a.Name, r.line)
	}
}

// checkField checks that r, agent.field, names a field of the agent's
// output; with avail, also that the agent ran before.
func (p *parser) checkField(pl *Pipeline, r ref, avail map[string]bool, who string, line int) {
	b := pl.Agents[r.path[0]]
	if b == nil {
		p.errf(line, "%s: %s is not an agent", who, r.path[0])
		return
	}
	if avail != nil && !avail[b.Name] {
		p.errf(line, "%s: %s has not run by then", who, b.Name)
		return
	}
	if len(r.path) < 2 {
		return
	}
	if b.ForEach != nil {
		p.errf(line, "%s: %s runs for_each, so its output is a list: use {{.%s}} or range over it", who, b.Name, b.Name)
		return
	}
	if _, ok := b.props[r.path[1]]; !ok {
		p.errf(line, "%s: agent %s has no output field %s (fields: %s)", who, b.Name, r.path[1], strings.Join(sortedKeys(b.props), ", "))
	}
}

// checkForEach checks what a's for_each goes over: an earlier agent's list
// field or a list input.
func (p *parser) checkForEach(pl *Pipeline, a *Agent, inputs map[string]Input, avail map[string]bool) {
	fe := a.ForEach
	head, field, _ := strings.Cut(fe.Over, ".")
	if in, ok := inputs[head]; ok && field == "" {
		if in.Type != "[string]" {
			p.errf(a.line, "agent %s: for_each over input %s, which is not a list", a.Name, head)
		}
		return
	}
	if _, ok := inputs[fe.As]; ok || pl.Agents[fe.As] != nil {
		p.errf(a.line, "agent %s: for_each as %q is already an input or an agent", a.Name, fe.As)
	}
	b := pl.Agents[head]
	switch {
	case b == nil || field == "":
		p.errf(a.line, "agent %s: for_each over %q: want agent.field or a list input", a.Name, fe.Over)
	case !avail[head]:
		p.errf(a.line, "agent %s: for_each over %s, which is not produced earlier", a.Name, fe.Over)
	case b.ForEach != nil:
		p.errf(a.line, "agent %s: for_each over %s, an agent that runs for_each itself", a.Name, fe.Over)
	case b.props[field] != "array":
		p.errf(a.line, "agent %s: for_each over %s, which is not a list field", a.Name, fe.Over)
	}
}

// String is the condition as written.
func (c *Cond) String() string { return c.src }
