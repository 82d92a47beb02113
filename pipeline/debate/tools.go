package debate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/madspark/madspark/llm"
)

// A debate's answer may call the asker's tools, as a chat client offers
// them (Params.Tools): the step that writes the answer, the direct
// answerer or the aggregator, gets them, and its calls are the result's.
// The asker runs them and asks again with the calls and their results
// after the query (Params.Turns); the proposers see the conversation up to
// the query, so that the debate of a query its answer is still working on
// is the same, and the response cache answers their calls again.
//
// With tools, or a conversation that holds tool calls, the answer's step
// sends the conversation as it is, turn by turn (native), rather than as
// text in its prompt.

// JSONSchemaExtend marks the parameters of tool use read-only in the
// parameters' schema: the OpenAI-compatible API sets them, for clients
// that run the calls, and forms leave them out.
func (Params) JSONSchemaExtend(s *jsonschema.Schema) {
	for _, name := range []string{"tools", "tool_choice", "parallel_tool_calls", "turns"} {
		if p, ok := s.Properties.Get(name); ok {
			p.ReadOnly = true
		}
	}
}

// checkConversation checks the tool calls and results of a conversation:
// the history before the query and the turns after it, which are the
// answer's calls and their results only. Every result must answer a call
// made before it.
func checkConversation(history, turns []llm.Message) error {
	calls := map[string]bool{}
	check := func(where string, i int, m llm.Message) error {
		switch m.Role {
		case llm.RoleUser:
		case llm.RoleAssistant:
			for j, c := range m.ToolCalls {
				switch {
				case c.ID == "" || c.Name == "":
					return fmt.Errorf("%s[%d].tool_calls[%d]: a call needs an ID and a name", where, i, j)
				case calls[c.ID]:
					return fmt.Errorf("%s[%d].tool_calls[%d]: the call ID %q is used twice", where, i, j, c.ID)
				}
				calls[c.ID] = true
			}
		case llm.RoleTool:
			if !calls[m.ToolCallID] {
				return fmt.Errorf("%s[%d]: the tool result answers %q, which no earlier assistant message called", where, i, m.ToolCallID)
			}
		default:
			return fmt.Errorf("%s[%d]: role %q is not user, assistant or tool", where, i, m.Role)
		}
		if m.Role != llm.RoleTool && m.ToolCallID != "" {
			return fmt.Errorf("%s[%d]: only a tool message answers a call", where, i)
		}
		return nil
	}
	for i, m := range history {
		if err := check("history", i, m); err != nil {
			return err
		}
	}
	for i, m := range turns {
		if m.Role == llm.RoleUser {
			return fmt.Errorf("turns[%d]: the turns after the query are the answer's tool calls and their results, not user messages", i)
		}
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 {
			return fmt.Errorf("turns[%d]: an assistant turn after the query must call tools", i)
		}
		if err := check("turns", i, m); err != nil {
			return err
		}
	}
	return nil
}

// checkTools checks p's tools, tool choice and conversation.
func (p *Params) checkTools() error {
	if err := llm.CheckTools(p.Tools, p.ToolChoice); err != nil {
		return err
	}
	if p.ParallelToolCalls != nil && len(p.Tools) == 0 {
		return errors.New("parallel_tool_calls without tools")
	}
	return checkConversation(p.History, p.Turns)
}

// native reports whether the answer's step sends the conversation turn by
// turn: with tools, or a conversation that holds tool calls or results.
func (p *Params) native() bool {
	if len(p.Tools) > 0 || len(p.Turns) > 0 {
		return true
	}
	return slices.ContainsFunc(p.History, func(m llm.Message) bool { return len(m.ToolCalls) > 0 || m.Role == llm.RoleTool })
}

// textHistory is history as the prompts' text shows it: a tool call as
// words in its assistant message, a result as a message of its own.
// History without tools is returned as it is.
func textHistory(history []llm.Message) []llm.Message {
	if !slices.ContainsFunc(history, func(m llm.Message) bool { return len(m.ToolCalls) > 0 || m.Role == llm.RoleTool }) {
		return history
	}
	out := make([]llm.Message, len(history))
	for i, m := range history {
		text := m.Content
		for _, c := range m.ToolCalls {
			text = strings.TrimSpace(text + fmt.Sprintf("\n[called %s(%s), call %s]", c.Name, c.Arguments, c.ID))
		}
		if m.Role == llm.RoleTool {
			text = fmt.Sprintf("[result of call %s] %s", m.ToolCallID, text)
		}
		out[i] = llm.Message{Role: m.Role, Content: text}
	}
	return out
}

// toolUse is what the answer's step is given of the asker's tools, part
// of its journaled input; empty without tools.
type toolUse struct {
	// Native: the conversation is sent turn by turn, not in the prompt.
	Native            bool            `json:",omitempty"`
	Tools             []llm.Tool      `json:",omitempty"`
	ToolChoice        *llm.ToolChoice `json:",omitempty"`
	ParallelToolCalls *bool           `json:",omitempty"`
	Turns             []llm.Message   `json:",omitempty"`
}

// toolUseOf is in's tool use.
func toolUseOf(in Params) toolUse {
	if !in.native() {
		return toolUse{}
	}
	return toolUse{Native: true, Tools: in.Tools, ToolChoice: in.ToolChoice, ParallelToolCalls: in.ParallelToolCalls, Turns: in.Turns}
}

// apply puts u on req, whose messages are the step's prompt: the
// conversation goes around it, history before and turns after, and the
// tools with it.
func (u toolUse) apply(req *llm.Request, history []llm.Message) {
	if !u.Native {
		return
	}
	msgs := make([]llm.Message, 0, len(history)+len(req.Messages)+len(u.Turns))
	msgs = append(append(append(msgs, history...), req.Messages...), u.Turns...)
	req.Messages, req.History = msgs, len(history)
	req.Tools, req.ToolChoice, req.ParallelToolCalls = u.Tools, u.ToolChoice, u.ParallelToolCalls
}
