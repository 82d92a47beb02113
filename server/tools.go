package server

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
)

// Function tools as both APIs take them: Chat Completions nests a tool's
// definition under "function", Responses puts it inline; tool choices
// likewise. Only function tools are taken: a hosted tool (web search,
// file search, a remote MCP server...) or a custom one is refused by its
// type, since madspark has none to run.

// wireFunction is a function tool's definition.
type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// toolsOf reads the tools of a request: raw is its list, nested tells
// Chat Completions' shape from Responses'.
func toolsOf(raw json.RawMessage, nested bool) ([]llm.Tool, error) {
	if isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("tools", "tools must be a list of tools")
	}
	tools := make([]llm.Tool, 0, len(items))
	for i, item := range items {
		param := fmt.Sprintf("tools[%d]", i)
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(item, &probe); err != nil {
			return nil, badRequest(param, "%s must be a tool object", param)
		}
		if probe.Type != "function" {
			return nil, badRequest(param+".type", "%s.type %q is not supported: this server takes function tools only, which the client runs", param, probe.Type)
		}
		var fn wireFunction
		if nested {
			var t struct {
				Type     string          `json:"type"`
				Function json.RawMessage `json:"function"`
			}
			if err := decodeAt(item, &t, param); err != nil {
				return nil, err
			}
			if isNull(t.Function) {
				return nil, badRequest(param+".function", "%s.function is required", param)
			}
			if err := decodeAt(t.Function, &fn, param+".function"); err != nil {
				return nil, err
			}
		} else {
			var t struct {
				Type string `json:"type"`
				wireFunction
			}
			if err := decodeAt(item, &t, param); err != nil {
				return nil, err
			}
			fn = t.wireFunction
		}
		if err := input.Text(param+".description", fn.Description); err != nil {
			return nil, badRequest(param+".description", "%v", err)
		}
		tool := llm.Tool{Name: fn.Name, Description: fn.Description, Strict: fn.Strict != nil && *fn.Strict}
		if p := bytes.TrimSpace(fn.Parameters); !isNull(p) {
			tool.Parameters = append(json.RawMessage(nil), p...)
		}
		tools = append(tools, tool)
	}
	if err := llm.CheckTools(tools, nil); err != nil {
		return nil, badRequest("tools", "%v", err)
	}
	return tools, nil
}

// decodeAt decodes raw strictly into v, naming the field of a problem
// under param.
func decodeAt(raw json.RawMessage, v any, param string) error {
	err := decodeStrict(raw, v)
	if re, ok := err.(*requestError); ok {
		sub := param
		if re.param != "" {
			sub += "." + re.param
		}
		return badRequest(sub, "%s: %s", param, re.msg)
	}
	return err
}

// toolChoiceOf reads a tool_choice: "none", "auto", "required", or a
// function named, {"type": "function", "function": {"name": ...}} in Chat
// Completions, {"type": "function", "name": ...} in Responses. The other
// forms (allowed tools, hosted and custom tools) are refused.
func toolChoiceOf(raw json.RawMessage, tools []llm.Tool) (*llm.ToolChoice, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, nil
	}
	var c *llm.ToolChoice
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case llm.ToolAuto, llm.ToolNone:
			if len(tools) == 0 {
				// No tool to call: the model answers in text, as asked.
				return nil, nil
			}
			c = &llm.ToolChoice{Mode: mode}
		case llm.ToolRequired:
			c = &llm.ToolChoice{Mode: mode}
		default:
			return nil, badRequest("tool_choice", "tool_choice %q is not one of none, auto and required", mode)
		}
	} else {
		var named struct {
			Type     string `json:"type"`
			Name     string `json:"name"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &named); err != nil {
			return nil, badRequest("tool_choice", "tool_choice must be none, auto, required or a function to call")
		}
		if named.Type != "function" {
			return nil, badRequest("tool_choice.type", "tool_choice.type %q is not supported: name a function tool, or use none, auto or required", named.Type)
		}
		name := named.Name
		if named.Function != nil {
			name = named.Function.Name
		}
		if name == "" {
			return nil, badRequest("tool_choice", "tool_choice names no function")
		}
		c = &llm.ToolChoice{Mode: llm.ToolRequired, Name: name}
	}
	if err := llm.CheckTools(tools, c); err != nil {
		return nil, badRequest("tool_choice", "%v", err)
	}
	return c, nil
}

// readTools reads a request's tools, tool choice and parallel_tool_calls
// onto p, recording them in g unless the choice asks for no call, which
// any model honours; nested tells Chat Completions' shapes from
// Responses'.
func readTools(p *Prompt, g *given, rawTools, rawChoice json.RawMessage, parallel *bool, nested bool) error {
	tools, err := toolsOf(rawTools, nested)
	if err != nil {
		return err
	}
	choice, err := toolChoiceOf(rawChoice, tools)
	if err != nil {
		return err
	}
	p.Tools, p.ToolChoice = tools, choice
	if len(tools) == 0 {
		return nil
	}
	p.ParallelToolCalls = parallel
	if choice == nil || choice.Mode != llm.ToolNone {
		g.add(SettingTools, "tools")
	}
	return nil
}

// calls tracks the tool calls of a conversation as it is read, so that
// each result answers a call made before it. The zero value has none.
type calls struct{ ids map[string]bool }

// add records the calls of an assistant message; param names it.
func (c *calls) add(tcs []llm.ToolCall, param string) error {
	if len(tcs) > 0 && c.ids == nil {
		c.ids = map[string]bool{}
	}
	for j, tc := range tcs {
		at := fmt.Sprintf("%s[%d]", param, j)
		switch {
		case tc.ID == "" || tc.Name == "":
			return badRequest(at, "%s: a tool call needs an ID and a name", at)
		case c.ids[tc.ID]:
			return badRequest(at, "%s: the call ID %q is used twice", at, tc.ID)
		}
		for _, f := range []struct{ name, v string }{{"id", tc.ID}, {"name", tc.Name}, {"arguments", tc.Arguments}} {
			if err := input.Text(at+"."+f.name, f.v); err != nil {
				return badRequest(at, "%v", err)
			}
		}
		c.ids[tc.ID] = true
	}
	return nil
}

// answers checks that id names a call made before; param names the field.
func (c *calls) answers(id, param string) error {
	if id == "" {
		return badRequest(param, "%s is required: the ID of the tool call this result answers", param)
	}
	if !c.ids[id] {
		return badRequest(param, "%s %q answers no tool call made before it", param, id)
	}
	return nil
}
