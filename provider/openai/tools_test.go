package openai_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// weatherTools are two tools, the first with parameters whose keys are
// not in alphabetical order.
var weatherTools = []llm.Tool{
	{Name: "weather", Description: "The weather in a city", Strict: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["C","F"]}},"required":["city","unit"],"additionalProperties":false}`)},
	{Name: "clock"},
}

// toolModel calls weather until the conversation has a result of it,
// then answers with that result.
func toolModel(stream *int) func(req *openaitest.ChatRequest) openaitest.Reply {
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return openaitest.Reply{Content: "It is " + m.Content + " in Oslo.", PromptTokens: 30, CompletionTokens: 6}
			}
		}
		n := 0
		if stream != nil {
			n = *stream
		}
		return openaitest.Reply{Content: "Let me look.", PromptTokens: 20, CompletionTokens: 9, ArgumentChunk: n,
			ToolCalls: []openaitest.ToolCall{openaitest.Call("call_1", "weather", `{"city":"Oslo","unit":"C"}`), openaitest.Call("call_2", "clock", `{}`)}}
	}
}

// TestToolCalls: a request's tools, tool choice and parallel_tool_calls
// go out as OpenAI defines them (a tool's parameters as given), the
// reply's calls come back in order, plain and streamed (arguments in
// pieces), and the calls and their results in a conversation are sent
// back as assistant tool_calls and tool messages.
func TestToolCalls(t *testing.T) {
	for _, stream := range []bool{false, true} {
		chunk := 4
		srv := openaitest.NewServer(t, toolModel(&chunk))
		c := newClient(t, srv, openai.Config{})
		no := false
		req := userReq("Weather in Oslo?")
		req.Tools, req.ToolChoice, req.ParallelToolCalls = weatherTools, &llm.ToolChoice{Mode: llm.ToolAuto}, &no
		var text strings.Builder
		if stream {
			req.OnDelta = func(s string) { text.WriteString(s) }
		}
		resp, err := c.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		want := []llm.ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo","unit":"C"}`}, {ID: "call_2", Name: "clock", Arguments: "{}"}}
		if !slices.Equal(resp.ToolCalls, want) || resp.FinishReason != llm.FinishToolCalls || resp.Text != "Let me look." {
			t.Errorf("stream %v: %+v", stream, resp)
		}
		if stream && text.String() != "Let me look. " && text.String() != "Let me look." {
			t.Errorf("streamed text %q", text.String())
		}
		sent := srv.Requests()[0]
		if !strings.Contains(string(sent.Body), `"parameters":{"type":"object","properties":{"city"`) {
			t.Errorf("the parameters were not sent as given: %s", sent.Body)
		}
		if len(sent.Tools) != 2 || sent.Tools[0].Type != "function" || sent.Tools[0].Function.Name != "weather" || sent.Tools[0].Function.Strict == nil ||
			!*sent.Tools[0].Function.Strict || sent.Tools[1].Function.Strict != nil || string(sent.ToolChoice) != `"auto"` ||
			sent.ParallelToolCalls == nil || *sent.ParallelToolCalls {
			t.Errorf("stream %v: sent %s", stream, sent.Body)
		}

		// The calls' results go back: the conversation with the calls
		// and a tool message for each.
		next := userReq("Weather in Oslo?")
		next.Tools = weatherTools
		next.Messages = append(next.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
			llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "12 °C"}, llm.Message{Role: llm.RoleTool, ToolCallID: "call_2", Content: "noon"})
		next.OnDelta = req.OnDelta
		resp, err = c.Generate(context.Background(), next)
		if err != nil || resp.Text != "It is 12 °C in Oslo." || len(resp.ToolCalls) != 0 || resp.FinishReason != "stop" {
			t.Fatalf("stream %v: %+v %v", stream, resp, err)
		}
		msgs := srv.Requests()[1].Messages
		if len(msgs) != 5 || msgs[2].Role != "assistant" || len(msgs[2].ToolCalls) != 2 || msgs[2].ToolCalls[0].Function.Arguments != `{"city":"Oslo","unit":"C"}` ||
			msgs[3].Role != "tool" || msgs[3].ToolCallID != "call_1" || msgs[3].Content != "12 °C" || msgs[4].ToolCallID != "call_2" {
			t.Errorf("stream %v: the conversation sent %s", stream, srv.Requests()[1].Body)
		}
	}
}

// TestToolChoice: each choice is sent in OpenAI's form, and a choice the
// request cannot make is refused before anything is sent, naming tools.
func TestToolChoice(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	c := newClient(t, srv, openai.Config{})
	for _, tc := range []struct {
		choice *llm.ToolChoice
		want   string
	}{
		{&llm.ToolChoice{Mode: llm.ToolNone}, `"none"`},
		{&llm.ToolChoice{Mode: llm.ToolRequired}, `"required"`},
		{&llm.ToolChoice{Mode: llm.ToolRequired, Name: "clock"}, `{"function":{"name":"clock"},"type":"function"}`},
		{nil, ``},
	} {
		req := userReq("x")
		req.Tools, req.ToolChoice = weatherTools, tc.choice
		if _, err := c.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if got := string(reqs[len(reqs)-1].ToolChoice); got != tc.want {
			t.Errorf("%+v: tool_choice %s, want %s", tc.choice, got, tc.want)
		}
	}
	before := len(srv.Requests())
	for _, bad := range []*llm.Request{
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.Tool{{Name: "a b"}}},
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.Tool{{Name: "a"}, {Name: "a"}}},
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.Tool{{Name: "a", Parameters: json.RawMessage(`[]`)}}},
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: weatherTools, ToolChoice: &llm.ToolChoice{Mode: llm.ToolRequired, Name: "nope"}},
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, ToolChoice: &llm.ToolChoice{Mode: llm.ToolRequired}},
	} {
		_, err := c.Generate(context.Background(), bad)
		if e := llmError(t, err); e.Param != "tools" || e.Retryable {
			t.Errorf("%+v: %+v", bad.Tools, e)
		}
	}
	if n := len(srv.Requests()); n != before {
		t.Errorf("%d refused requests were sent", n-before)
	}
}

// TestToolsRefused: a server that refuses tools (a 400 naming them) fails
// the call with Param "tools", not retryable; a reply whose call has no
// ID or name is unusable.
func TestToolsRefused(t *testing.T) {
	srv := openaitest.NewServer(t, nil)
	srv.Inject(openaitest.Fault{Status: 400, Message: "tools param requires --jinja flag"})
	c := newClient(t, srv, openai.Config{})
	req := userReq("x")
	req.Tools = weatherTools
	_, err := c.Generate(context.Background(), req)
	if e := llmError(t, err); e.Param != "tools" || e.Retryable || !strings.Contains(e.Error(), "--jinja") {
		t.Errorf("%+v", e)
	}
	// The same refusal of a request without tools is the server's.
	srv.Inject(openaitest.Fault{Status: 400, Message: "tools param requires --jinja flag"})
	_, err = c.Generate(context.Background(), userReq("x"))
	if e := llmError(t, err); e.Param != "" {
		t.Errorf("without tools: %+v", e)
	}

	for _, stream := range []bool{false, true} {
		srv := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply {
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("", "weather", "{}")}, PromptTokens: 5, CompletionTokens: 2}
		})
		c := newClient(t, srv, openai.Config{})
		req := userReq("x")
		req.Tools = weatherTools
		if stream {
			req.OnDelta = func(string) {}
		}
		_, err := c.Generate(context.Background(), req)
		if e := llmError(t, err); !e.Invalid || !strings.Contains(e.Message, "no ID") {
			t.Errorf("stream %v: %+v", stream, e)
		}
	}
}
