package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// RoleTool is the role of a message that carries the result of a tool
// call back to the model; its ToolCallID names the call.
const RoleTool Role = "tool"

// Tool is a function a model may call. The model does not run it: the
// reply names the call (Response.ToolCalls), the caller runs it and sends
// its result back in a RoleTool message.
type Tool struct {
	// Name is the function's name: 1 to 64 letters, digits, _ or -.
	Name string `json:"name"`
	// Description tells the model what the function does and when to call
	// it.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the function's arguments, an
	// object; nil for a function without any.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict asks a provider that can hold the arguments to the schema
	// exactly (OpenAI's strict function calling) to do so.
	Strict bool `json:"strict,omitempty"`
}

// ToolCall is a model's call of a Tool.
type ToolCall struct {
	// ID names the call, so that its result (a RoleTool message's
	// ToolCallID) can say which call it answers.
	ID string `json:"id"`
	// Name is the tool's.
	Name string `json:"name"`
	// Arguments are the call's arguments as the model wrote them: a JSON
	// object, as text.
	Arguments string `json:"arguments"`
}

// The modes of a ToolChoice.
const (
	// ToolAuto lets the model choose whether to call tools.
	ToolAuto = "auto"
	// ToolNone forbids tool calls: the model answers in text.
	ToolNone = "none"
	// ToolRequired makes the model call at least one tool (the one named
	// by ToolChoice.Name, when set).
	ToolRequired = "required"
)

// ToolChoice says whether the model may, must or must not call a tool.
type ToolChoice struct {
	// Mode is ToolAuto, ToolNone or ToolRequired.
	Mode string `json:"mode" jsonschema:"required,enum=auto,enum=none,enum=required,title=Mode,description=auto: the model may call tools; none: it may not; required: it must"`
	// Name, with ToolRequired, is the one tool the model must call.
	Name string `json:"name,omitempty" jsonschema:"title=Tool,description=With required: the one tool the model must call"`
}

// FinishToolCalls is the finish reason of a reply that calls tools.
const FinishToolCalls = "tool_calls"

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckTools reports the first problem with a request's tools and tool
// choice, naming the tool: an invalid or repeated name, parameters that
// are not a JSON object, a choice of an unknown mode or tool. A choice
// without tools is a problem unless it is ToolNone.
func CheckTools(tools []Tool, choice *ToolChoice) error {
	if len(tools) == 0 && choice == nil {
		return nil
	}
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		switch {
		case !toolName.MatchString(t.Name):
			return fmt.Errorf("tools[%d]: the name must be 1 to 64 letters, digits, _ or -, got %q", i, t.Name)
		case seen[t.Name]:
			return fmt.Errorf("tools[%d]: the name %q is used twice", i, t.Name)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(t.Parameters, &obj); err != nil {
				return fmt.Errorf("tools[%d] (%s): the parameters must be a JSON Schema object", i, t.Name)
			}
		}
	}
	if choice == nil {
		return nil
	}
	switch choice.Mode {
	case ToolNone:
		return nil
	case ToolAuto, ToolRequired:
	default:
		return fmt.Errorf("tool choice %q: want auto, none or required", choice.Mode)
	}
	if len(tools) == 0 {
		return fmt.Errorf("tool choice %q without tools", choice.Mode)
	}
	if choice.Name != "" && !seen[choice.Name] {
		return fmt.Errorf("tool choice names %q, which is not among the tools", choice.Name)
	}
	return nil
}
