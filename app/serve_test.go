package app

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/store/postgres/pgtest"
)

// TestDebateModelTakesTheClientsSettings: the /v1 debate models give a
// client's instructions and settings to the call that writes the answer,
// and its format to the answer; the answer's finish reason is the
// provider's; a format that cannot be read is the client's error, before
// any run is recorded.
func TestDebateModelTakesTheClientsSettings(t *testing.T) {
	fake := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
			return openaitest.Reply{Content: `{"answer": "a language"}`, FinishReason: "stop"}
		}
		return openaitest.Reply{Content: "Rust is", FinishReason: "length"}
	})
	env := map[string]string{"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": fake.URL, "OPENAI_API_KEY": "sk-test",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	ctx := context.Background()
	a, err := Open(ctx, Config{Getenv: func(k string) string { return env[k] }, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d, err := a.Debater()
	if err != nil {
		t.Fatal(err)
	}
	m := &debateModel{id: "madspark-direct", mode: "simple", d: d, settings: debate.Settings{Rounds: 1}}
	temp, topP, seed := 1.7, 0.3, int64(5)
	p := server.Prompt{
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleAssistant, Content: "hello"}, {Role: llm.RoleUser, Content: "What is Rust?"}},
		System:      "Answer like a pirate.",
		Temperature: &temp, TopP: &topP, MaxTokens: 5, Stop: []string{"END"}, Seed: &seed,
	}
	c, err := m.Complete(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Text != "Rust is" || c.FinishReason != "length" || c.RunID == "" {
		t.Errorf("completion %+v", c)
	}
	got := fake.Requests()[0]
	if !strings.HasSuffix(got.System(), "\n\nAnswer like a pirate.") || !strings.Contains(got.Prompt(), "assistant: hello") {
		t.Errorf("system %q, prompt %q", got.System(), got.Prompt())
	}
	if *got.Temperature != 1.7 || *got.TopP != 0.3 || *got.MaxTokens != 5 || fmt.Sprint(got.Stop) != "[END]" || *got.Seed != 5 {
		t.Errorf("settings: %s", got.Body)
	}
	rec, err := a.Store.Run(ctx, c.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var stored debate.Params
	if err := json.Unmarshal(rec.Params, &stored); err != nil || stored.Instructions != "Answer like a pirate." || stored.Roles[debate.Direct].MaxTokens != 5 {
		t.Errorf("the run's parameters do not say what the client asked: %s", rec.Params)
	}

	p.Format = &server.Format{Name: "reply", Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`), Strict: true}
	p.MaxTokens = 0
	if c, err = m.Complete(ctx, p, nil); err != nil || c.Text != `{"answer":"a language"}` || c.FinishReason != "stop" {
		t.Fatalf("JSON answer: %v %+v", err, c)
	}

	before, err := a.Store.Runs(ctx, madspark.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	p.Format.Schema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"nonsense"}}}`)
	_, err = m.Complete(ctx, p, nil)
	after, _ := a.Store.Runs(ctx, madspark.RunFilter{})
	if err == nil || !strings.Contains(err.Error(), "format.schema") || len(after) != len(before) {
		t.Errorf("a bad schema: %v; runs %d → %d", err, len(before), len(after))
	}
}

// TestPromptLimit: MADSPARK_MAX_PROMPT_BYTES bounds the whole prompt on
// every path the app serves — a /v1 or conversation debate (history and
// instructions included) and a run's parameters (REST API, MCP) — each
// refused before any run is recorded; a value that is not a positive
// number is refused (CheckServe, before the server starts).
func TestPromptLimit(t *testing.T) {
	env := map[string]string{"MADSPARK_MODE": "mock", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"), "MADSPARK_MAX_PROMPT_BYTES": "3000"}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	a, err := Open(ctx, Config{Getenv: getenv, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d, err := a.Debater()
	if err != nil {
		t.Fatal(err)
	}
	limit, err := promptLimit(getenv)
	if err != nil || limit != 3000 {
		t.Fatalf("promptLimit = %d, %v", limit, err)
	}
	m := &debateModel{id: "madspark-direct", mode: "simple", d: d, settings: debate.Settings{Rounds: 1}, maxPrompt: limit}
	history := []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("u", 1500)}, {Role: llm.RoleAssistant, Content: strings.Repeat("a", 1500)}, {Role: llm.RoleUser, Content: "and?"}}
	if _, err := m.Complete(ctx, server.Prompt{Messages: history}, nil); err == nil || !strings.Contains(err.Error(), "limit is 3000 bytes") {
		t.Errorf("a history over the limit: %v", err)
	}
	if err := m.Check(ctx, server.Prompt{Messages: history[2:], System: strings.Repeat("s", 3000)}); err == nil || !strings.Contains(err.Error(), "limit is 3000 bytes") {
		t.Errorf("instructions over the limit: %v", err)
	}
	reg, err := a.Registry("")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"query": "and?", "history": history[:2]})
	if _, err := reg.Decode("debate", raw); err == nil || !strings.Contains(err.Error(), "limit is 3000 bytes") {
		t.Errorf("a run's parameters over the limit: %v", err)
	}
	runs, err := a.Store.Runs(ctx, madspark.RunFilter{})
	if err != nil || len(runs) != 0 {
		t.Errorf("runs recorded for refused prompts: %d, %v", len(runs), err)
	}
	if _, err := m.Complete(ctx, server.Prompt{Messages: history[1:]}, nil); err != nil {
		t.Errorf("a prompt within the limit: %v", err)
	}
	for _, bad := range []string{"0", "-5", "lots", "1e6"} {
		env["MADSPARK_MAX_PROMPT_BYTES"] = bad
		if _, err := promptLimit(getenv); err == nil || !strings.Contains(err.Error(), "MADSPARK_MAX_PROMPT_BYTES") {
			t.Errorf("MADSPARK_MAX_PROMPT_BYTES=%s: %v", bad, err)
		}
	}
}

// TestDebateModelInterruptedByStop: a /v1 debate whose request the server
// stops (its context cancelled with server.ErrStopped) is recorded
// interrupted and resumable, not cancelled by its client, on both stores.
func TestDebateModelInterruptedByStop(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			env := map[string]string{"MADSPARK_MODE": "mock", "MADSPARK_MOCK_LATENCY": "1m", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
			if store == "postgres" {
				env["DATABASE_URL"] = pgtest.URL(t)
			}
			ctx := context.Background()
			a, err := Open(ctx, Config{Getenv: func(k string) string { return env[k] }, NoCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			d, err := a.Debater()
			if err != nil {
				t.Fatal(err)
			}
			m := &debateModel{id: "madspark-direct", mode: "simple", d: d, settings: debate.Settings{Rounds: 1}}
			rctx, stop := context.WithCancelCause(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := m.Complete(rctx, server.Prompt{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Is tea better than coffee?"}}}, nil)
				done <- err
			}()
			var runs []*madspark.Run
			for deadline := time.Now().Add(20 * time.Second); len(runs) == 0; time.Sleep(10 * time.Millisecond) {
				if runs, err = a.Store.Runs(ctx, madspark.RunFilter{}); err != nil || time.Now().After(deadline) {
					t.Fatalf("no run started: %v", err)
				}
			}
			stop(server.ErrStopped)
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("the stopped debate answered")
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the debate did not stop")
			}
			r, err := a.Store.Run(ctx, runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != madspark.RunInterrupted || !r.Status.Resumable() || !strings.Contains(r.Error, "the server stopped") {
				t.Errorf("the stopped debate's run is %s %q, want interrupted", r.Status, r.Error)
			}
		})
	}
}

// TestDirectModelCallsTools: madspark-direct sends a client's tools and
// its conversation with tool calls and results to the provider turn by
// turn, returns the provider's calls, and its run records them (the
// inspector's steps).
func TestDirectModelCallsTools(t *testing.T) {
	fake := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return openaitest.Reply{Content: "It is " + last.Content + " in Oslo.", PromptTokens: 40, CompletionTokens: 8}
		}
		return openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("call_9", "weather", `{"city":"Oslo"}`)}, PromptTokens: 30, CompletionTokens: 6}
	})
	env := map[string]string{"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": fake.URL, "OPENAI_API_KEY": "sk-test",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	ctx := context.Background()
	a, err := Open(ctx, Config{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d, err := a.Debater()
	if err != nil {
		t.Fatal(err)
	}
	m := &debateModel{id: "madspark-direct", mode: "simple", d: d, settings: debate.Settings{Rounds: 1}}
	tools := []llm.Tool{{Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
	p := server.Prompt{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Weather in Oslo?"}}, Tools: tools, ToolChoice: &llm.ToolChoice{Mode: llm.ToolAuto}}
	for _, stream := range []bool{false, true} {
		var text strings.Builder
		var out *server.Stream
		if stream {
			out = &server.Stream{Text: func(s string) { text.WriteString(s) }}
		}
		c, err := m.Complete(ctx, p, out)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.ToolCalls) != 1 || c.ToolCalls[0] != (llm.ToolCall{ID: "call_9", Name: "weather", Arguments: `{"city":"Oslo"}`}) || c.FinishReason != llm.FinishToolCalls || c.Text != "" {
			t.Fatalf("stream %v: completion %+v", stream, c)
		}
		steps, err := a.Store.Steps(ctx, c.RunID)
		if err != nil || len(steps) != 1 || len(steps[0].Calls) != 1 || len(steps[0].Calls[0].ToolCalls) != 1 || len(steps[0].Calls[0].Tools) != 1 {
			t.Fatalf("stream %v: the run's steps %+v, %v", stream, steps, err)
		}
	}
	sent := fake.Requests()[0]
	if len(sent.Tools) != 1 || sent.Tools[0].Function.Name != "weather" || string(sent.ToolChoice) != `"auto"` || len(sent.Messages) != 2 {
		t.Fatalf("sent %s", sent.Body)
	}

	p.Messages = append(p.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_9", Name: "weather", Arguments: `{"city":"Oslo"}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_9", Content: "12 °C"})
	c, err := m.Complete(ctx, p, nil)
	if err != nil || c.Text != "It is 12 °C in Oslo." || c.ToolCalls != nil {
		t.Fatalf("answer %+v, %v", c, err)
	}
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) != 4 || last.Messages[2].ToolCalls[0].ID != "call_9" || last.Messages[3].ToolCallID != "call_9" || !strings.Contains(last.Messages[1].Content, "Weather in Oslo?") {
		t.Fatalf("the conversation sent %s", last.Body)
	}
}
