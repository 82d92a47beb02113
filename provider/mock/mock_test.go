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
