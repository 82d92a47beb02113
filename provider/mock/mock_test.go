package mock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

func TestMock(t *testing.T) {
	c := New(map[string]Responder{
		"a.json": func(req *llm.Request) (any, error) { return map[string]any{"echo": req.Input}, nil },
		"a.text": func(req *llm.Request) (any, error) { return strings.Repeat("word ", 40), nil },
	})
	resp, err := c.Generate(context.Background(), &llm.Request{Agent: "a.json", Input: "x", System: "sys"})
	if err != nil || resp.Text != `{"echo":"x"}` || resp.Provider != Name || resp.Usage.LLMCalls != 1 || resp.Usage.InputTokens == 0 {
		t.Fatalf("got %+v, %v", resp, err)
	}
	var got strings.Builder
	resp, err = c.Generate(context.Background(), &llm.Request{Agent: "a.text", OnDelta: func(s string) { got.WriteString(s) }})
	if err != nil || got.String() != resp.Text || resp.Usage.OutputTokens != 50 {
		t.Fatalf("stream %q vs %q, %+v, %v", got.String(), resp.Text, resp.Usage, err)
	}
	_, err = c.Generate(context.Background(), &llm.Request{Agent: "nobody"})
	var le *llm.Error
	if !errors.As(err, &le) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Fatalf("missing responder: %v", err)
	}
}

func TestMockLatencyHonoursContext(t *testing.T) {
	c := New(map[string]Responder{"a": func(*llm.Request) (any, error) { return "x", nil }}, WithLatency(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.Generate(ctx, &llm.Request{Agent: "a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestPickIsDeterministic(t *testing.T) {
	a := Pick("urban farming", 1, "x", "y", "z", "w")
	for i := 0; i < 5; i++ {
		if Pick("urban farming", 1, "x", "y", "z", "w") != a {
			t.Fatal("Pick is not deterministic")
		}
	}
	if Short("one two three four five", 12) != "one two…" {
		t.Fatalf("Short = %q", Short("one two three four five", 12))
	}
}

func TestRecorder(t *testing.T) {
	rec := &Recorder{Next: New(map[string]Responder{
		"p.a": func(*llm.Request) (any, error) { return "a", nil },
		"b":   func(*llm.Request) (any, error) { return "b", nil },
	})}
	for _, agent := range []string{"p.a", "b", "p.a"} {
		if _, err := rec.Generate(context.Background(), &llm.Request{Agent: agent, System: agent}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.Calls(); got["a"] != 2 || got["b"] != 1 || len(got) != 2 {
		t.Errorf("calls %v", got)
	}
	if of := rec.Of("p.a"); len(of) != 2 || of[1].System != "p.a" || len(rec.Requests()) != 3 {
		t.Errorf("of %+v", of)
	}
}

func TestSchemaFallback(t *testing.T) {
	c := New(nil)
	schema := []byte(`{"type":"object","properties":{"pitch":{"type":"string"},"score":{"type":"number","minimum":0,"maximum":10},
		"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"verdict":{"type":"string","enum":["approve","revise"]}}}`)
	resp, err := c.Generate(context.Background(), &llm.Request{Agent: "pitch.editor", Schema: &llm.Schema{Name: "editor", JSON: schema}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":5,"pitch":"mock pitch for pitch.editor","score":5,"tags":["mock tags for pitch.editor 1","mock tags for pitch.editor 2"],"verdict":"approve"}`
	if resp.Text != want {
		t.Errorf("got %s\nwant %s", resp.Text, want)
	}
	if _, err := c.Generate(context.Background(), &llm.Request{Agent: "pitch.writer"}); err == nil {
		t.Error("a text request without a responder was answered")
	}
}

// TestMockToolCalls: offered tools, the mock calls the one the choice
// names (or the first) with arguments of its schema, until a result of a
// call follows the last user message; "none" keeps it to text.
func TestMockToolCalls(t *testing.T) {
	c := New(map[string]Responder{"a": func(*llm.Request) (any, error) { return "the answer", nil }})
	tools := []llm.Tool{{Name: "weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}, {Name: "clock"}}
	user := []llm.Message{{Role: llm.RoleUser, Content: "weather?"}}
	resp, err := c.Generate(context.Background(), &llm.Request{Agent: "a", Messages: user, Tools: tools})
	if err != nil || resp.FinishReason != llm.FinishToolCalls || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "weather" ||
		resp.ToolCalls[0].Arguments != `{"city":"mock city for weather"}` || resp.ToolCalls[0].ID == "" || resp.Text != "" {
		t.Fatalf("%+v, %v", resp, err)
	}
	resp, err = c.Generate(context.Background(), &llm.Request{Agent: "a", Messages: user, Tools: tools, ToolChoice: &llm.ToolChoice{Mode: llm.ToolRequired, Name: "clock"}})
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "clock" || resp.ToolCalls[0].Arguments != "{}" {
		t.Fatalf("named: %+v, %v", resp, err)
	}
	for name, req := range map[string]*llm.Request{
		"none":   {Agent: "a", Messages: user, Tools: tools, ToolChoice: &llm.ToolChoice{Mode: llm.ToolNone}},
		"result": {Agent: "a", Messages: append(user, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls}, llm.Message{Role: llm.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: "noon"}), Tools: tools},
	} {
		r, err := c.Generate(context.Background(), req)
		if err != nil || r.Text != "the answer" || r.ToolCalls != nil || r.FinishReason != "stop" {
			t.Errorf("%s: %+v, %v", name, r, err)
		}
	}
	_, err = c.Generate(context.Background(), &llm.Request{Agent: "a", Messages: user, Tools: []llm.Tool{{Name: "bad name"}}})
	var le *llm.Error
	if !errors.As(err, &le) || le.Param != "tools" {
		t.Errorf("bad tool: %v", err)
	}
}
