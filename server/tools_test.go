package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/madspark/madspark/llm"
)

// toolModel calls the first tool offered, with a word before, until the
// conversation holds a call's result, which it then answers with.
type toolModel struct {
	id string
	mu sync.Mutex
	ps []Prompt
}

func (m *toolModel) ID() string { return m.id }

func (m *toolModel) Complete(_ context.Context, p Prompt, out *Stream) (*Completion, error) {
	m.mu.Lock()
	m.ps = append(m.ps, p)
	m.mu.Unlock()
	say := func(s string) {
		if out != nil {
			out.Text(s)
		}
	}
	if last := p.Messages[len(p.Messages)-1]; last.Role == llm.RoleTool {
		say("It is " + last.Content + ".")
		return &Completion{Text: "It is " + last.Content + ".", Usage: fakeUsage}, nil
	}
	if len(p.Tools) == 0 || (p.ToolChoice != nil && p.ToolChoice.Mode == llm.ToolNone) {
		say("No tools.")
		return &Completion{Text: "No tools.", Usage: fakeUsage}, nil
	}
	say("Looking.")
	return &Completion{Text: "Looking.", Usage: fakeUsage, ToolCalls: []llm.ToolCall{
		{ID: "call_1", Name: p.Tools[0].Name, Arguments: `{"city":"Oslo"}`}, {ID: "call_2", Name: p.Tools[0].Name, Arguments: `{"city":"Bergen"}`}}}, nil
}

func (m *toolModel) last() Prompt {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ps[len(m.ps)-1]
}

var weatherParams = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}

// TestChatToolCalls: through the official SDK, a chat's tools, tool
// choice and parallel_tool_calls reach the model; its calls come back,
// plain and as streamed tool_calls deltas, with finish_reason
// tool_calls; the calls and their results sent back reach the model as
// the conversation.
func TestChatToolCalls(t *testing.T) {
	m := &toolModel{id: "madspark-direct"}
	srv := newTestServer(t, "", m)
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := sdk.ChatCompletionNewParams{
		Model:    "madspark-direct",
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Weather in Oslo and Bergen?")},
		Tools: []sdk.ChatCompletionToolUnionParam{sdk.ChatCompletionFunctionTool(sdk.FunctionDefinitionParam{
			Name: "weather", Description: sdk.String("The weather in a city"), Parameters: weatherParams, Strict: sdk.Bool(true)})},
		ToolChoice:        sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String("required")},
		ParallelToolCalls: sdk.Bool(true),
	}
	c, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	msg := c.Choices[0].Message
	if c.Choices[0].FinishReason != "tool_calls" || msg.Content != "Looking." || len(msg.ToolCalls) != 2 || msg.ToolCalls[0].ID != "call_1" ||
		msg.ToolCalls[0].Function.Name != "weather" || msg.ToolCalls[1].Function.Arguments != `{"city":"Bergen"}` || msg.ToolCalls[0].Type != "function" {
		t.Fatalf("completion %+v", c.Choices[0])
	}
	p := m.last()
	if len(p.Tools) != 1 || !p.Tools[0].Strict || p.Tools[0].Description != "The weather in a city" || !strings.Contains(string(p.Tools[0].Parameters), `"city"`) ||
		p.ToolChoice == nil || p.ToolChoice.Mode != "required" || p.ParallelToolCalls == nil || !*p.ParallelToolCalls {
		t.Fatalf("prompt %+v", p)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc sdk.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("a chunk does not fit: %+v", stream.Current())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	smsg := acc.Choices[0].Message
	if acc.Choices[0].FinishReason != "tool_calls" || smsg.Content != "Looking." || len(smsg.ToolCalls) != 2 ||
		smsg.ToolCalls[1].ID != "call_2" || smsg.ToolCalls[1].Function.Arguments != `{"city":"Bergen"}` {
		t.Fatalf("streamed %+v", acc.Choices[0])
	}

	// The results go back: the assistant message as it came, a tool
	// message per call.
	params.Messages = append(params.Messages, msg.ToParam(), sdk.ToolMessage("12 °C", "call_1"), sdk.ToolMessage("9 °C", "call_2"))
	params.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String("auto")}
	c, err = client.Chat.Completions.New(ctx, params)
	if err != nil || c.Choices[0].Message.Content != "It is 9 °C." || c.Choices[0].FinishReason != "stop" || len(c.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("answer %+v, %v", c, err)
	}
	p = m.last()
	if len(p.Messages) != 4 || p.Messages[1].Role != llm.RoleAssistant || len(p.Messages[1].ToolCalls) != 2 || p.Messages[1].Content != "Looking." ||
		p.Messages[2].ToolCallID != "call_1" || p.Messages[3].Content != "9 °C" || p.Query() != "Weather in Oslo and Bergen?" {
		t.Fatalf("conversation %+v", p.Messages)
	}
	// An answer with only calls has a null content.
	_, body := post(t, srv.URL, "", `{"model":"madspark-direct","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`)
	if !strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Errorf("plain: %s", body)
	}
}

// TestResponsesToolCalls: the Responses API's function tools reach the
// model, its calls are function_call output items (plain, and streamed
// with their argument events), and function_call and
// function_call_output input items go back as the conversation.
func TestResponsesToolCalls(t *testing.T) {
	m := &toolModel{id: "madspark-direct"}
	srv := newTestServer(t, "", m)
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	ctx := context.Background()
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Weather in Oslo?", responses.EasyInputMessageRoleUser)}
	params := responses.ResponseNewParams{
		Model: "madspark-direct", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Tools:      []responses.ToolUnionParam{responses.ToolParamOfFunction("weather", weatherParams, true)},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "weather"}},
	}
	r, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	var calls []responses.ResponseFunctionToolCall
	for _, item := range r.Output {
		if item.Type == "function_call" {
			calls = append(calls, item.AsFunctionCall())
		}
	}
	if r.Status != "completed" || r.OutputText() != "Looking." || len(calls) != 2 || calls[0].CallID != "call_1" || calls[0].Name != "weather" ||
		calls[0].Arguments != `{"city":"Oslo"}` || r.ToolChoice.Name != "weather" || len(r.Tools) != 1 || r.Tools[0].Name != "weather" {
		t.Fatalf("response %s", r.RawJSON())
	}
	if p := m.last(); p.ToolChoice == nil || p.ToolChoice.Name != "weather" || p.ToolChoice.Mode != "required" || !p.Tools[0].Strict {
		t.Fatalf("prompt %+v", p)
	}

	stream := client.Responses.NewStreaming(ctx, params)
	var types []string
	var final responses.Response
	args := map[string]string{}
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.function_call_arguments.delta":
			args[ev.ItemID] += ev.Delta
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(final.Output) != 3 || final.Output[1].AsFunctionCall().Arguments != `{"city":"Oslo"}` || args["fc_call_2"] != `{"city":"Bergen"}` ||
		strings.Count(strings.Join(types, " "), "response.function_call_arguments.done") != 2 {
		t.Fatalf("stream %v: %s", types, final.RawJSON())
	}

	// The calls and their outputs go back as input items.
	for _, c := range calls {
		input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
			ID: sdk.String(c.ID), CallID: c.CallID, Name: c.Name, Arguments: c.Arguments, Status: responses.ResponseFunctionToolCallStatusCompleted}})
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput("12 °C")
	out.OfFunctionCallOutput.CallID = sdk.String("call_1")
	out2 := responses.ResponseInputItemParamOfFunctionCallOutput("9 °C")
	out2.OfFunctionCallOutput.CallID = sdk.String("call_2")
	params.Input.OfInputItemList = append(input, out, out2)
	params.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: sdk.Opt(responses.ToolChoiceOptionsAuto)}
	r, err = client.Responses.New(ctx, params)
	if err != nil || r.OutputText() != "It is 9 °C." {
		t.Fatalf("answer %v: %+v", err, r)
	}
	p := m.last()
	if len(p.Messages) != 4 || len(p.Messages[1].ToolCalls) != 2 || p.Messages[1].Content != "" || p.Messages[2].ToolCallID != "call_1" || p.Messages[3].Content != "9 °C" {
		t.Fatalf("conversation %+v", p.Messages)
	}
}

// TestToolsAModelCannotCall: tools for a model with no step that calls
// them are a 400 naming tools, on both APIs, before it runs; tools with
// tool_choice "none" ask for no call and pass.
func TestToolsAModelCannotCall(t *testing.T) {
	m := fixedModel{newFake("madspark-spark", "x"), AllSettings &^ SettingTools}
	srv := newTestServer(t, "", m)
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"madspark-spark","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`},
		{"/v1/responses", `{"model":"madspark-spark","input":"hi","tools":[{"type":"function","name":"f"}]}`},
	} {
		resp, body := do(t, http.MethodPost, srv.URL+tc.path, "", tc.body)
		if resp.StatusCode != 400 || !strings.Contains(body, `"param":"tools"`) || !strings.Contains(body, "madspark-spark has no step that calls tools") {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
		none := strings.Replace(tc.body, `"tools"`, `"tool_choice":"none","tools"`, 1)
		if resp, body := do(t, http.MethodPost, srv.URL+tc.path, "", none); resp.StatusCode != 200 {
			t.Errorf("%s with tool_choice none: %d %s", tc.path, resp.StatusCode, body)
		}
	}
	if n := m.callCount(); n != 2 {
		t.Errorf("the model ran %d times, want 2", n)
	}
}
