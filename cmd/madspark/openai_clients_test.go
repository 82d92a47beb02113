package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// TestOpenAIClients runs test/openai-clients/clients.mjs, which drives
// `madspark serve` with the official OpenAI clients at the versions its
// package-lock.json pins (openai, @langchain/openai and langchain's agents,
// ai with @ai-sdk/openai, @openai/agents): chat with a system message and
// settings, plain and streamed; JSON schema and JSON object answers through
// each client's structured API (response_format, withStructuredOutput, the
// AI SDK's object and JSON outputs); the Responses API (responses.create,
// the AI SDK's default model); tool calls (plain and streamed, a
// function_call round trip, Agents SDK agents with a function tool on the
// Responses and the chat model, the AI SDK's tool loop, LangChain's
// createAgent); the request
// bodies promptfoo's OpenAI chat and Responses providers send with their
// default settings, on every model; a reasoning effort and a verbosity
// reaching the provider; a chat UI's follow-up to a pipeline model, the
// whole conversation sent again; an unknown route; a capacity refusal. The
// server's provider is clientsProvider on the OpenAI wire, in this process,
// which echoes the settings it receives so that the script can check them
// and calls the tools it is offered. A second server in mock mode serves
// the pipeline models, which the script runs whole.
//
// It needs node and test/openai-clients/node_modules (npm ci there).
// Without them it is skipped, saying what is missing, except in CI (CI
// set), where it fails.
func TestOpenAIClients(t *testing.T) {
	node, dir, _ := needNode(t, "OpenAI clients test", "test/openai-clients", "openai", "@langchain/openai", "langchain", "ai", "@ai-sdk/openai", "@openai/agents")

	release := make(chan struct{})
	var once sync.Once
	fake := openaitest.NewServer(t, clientsProvider(release, func() { once.Do(func() { close(release) }) }))
	env := map[string]string{
		"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": fake.URL, "OPENAI_API_KEY": "sk-test",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"), "MADSPARK_RATE_LIMIT": "off",
		// One call at a time and four waiting: the script fills them to
		// be refused.
		"MADSPARK_PROVIDER_CONCURRENCY": "1",
	}
	base, stop := startWebServe(t, env, "--no-worker")
	defer stop()
	defer once.Do(func() { close(release) })
	mockBase, stopMock := startWebServe(t, map[string]string{"MADSPARK_PROVIDER": "mock", "MADSPARK_DB": filepath.Join(t.TempDir(), "mock.db"),
		"MADSPARK_RATE_LIMIT": "off"}, "--no-worker")
	defer stopMock()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients.mjs", "--url", base, "--provider", fake.URL, "--mock-url", mockBase)
	cmd.Dir = dir
	// The clients take only the URLs and keys the script gives them: an
	// OPENAI_ variable of this environment is left out, not set empty
	// (@ai-sdk/openai refuses an empty OPENAI_BASE_URL when it loads).
	cmd.Env = []string{"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("clients.mjs:\n%s", out)
	if err != nil {
		t.Errorf("the OpenAI clients test failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^clients: [1-9][0-9]* passed, 0 failed$`).Match(out) {
		t.Errorf("the OpenAI clients test did not report its cases as passed")
	}
}

// clientsProvider answers as a model would, so that what madspark sends
// shows in what the clients get back:
//
//   - a request for JSON of a schema: a value of the schema (a fenced,
//     imperfect one for "flawed_person", prose for "hopeless", a fixed
//     object for a schema without properties, as JSON mode is);
//   - a prompt with ECHO: the settings it was sent with (reasoning effort
//     and verbosity included), as a JSON object;
//   - a prompt with HOLD: nothing until release is closed (a prompt with
//     RELEASE closes it), so that calls pile up;
//   - tools offered (tool_choice not "none"): a call of the tool the
//     choice names, or else the first, with arguments made from its
//     parameters' schema, its arguments streamed in pieces; once the
//     conversation holds a tool's result, an answer that quotes it;
//   - a token limit of 8 or less: that many words, cut off ("length");
//   - else a sentence.
func clientsProvider(release <-chan struct{}, open func()) func(req *openaitest.ChatRequest) openaitest.Reply {
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		prompt := req.Prompt()
		r := openaitest.Reply{PromptTokens: 11, CompletionTokens: 7}
		if len(req.Tools) > 0 && string(req.ToolChoice) != `"none"` {
			return toolReply(req, r)
		}
		limit := 0
		for _, n := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
			if n != nil {
				limit = *n
			}
		}
		switch {
		case strings.Contains(prompt, "RELEASE"):
			open()
			r.Content = "released"
		case strings.Contains(prompt, "HOLD"):
			select {
			case <-release:
			case <-time.After(2 * time.Minute):
			}
			r.Content = "held"
		case req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil:
			js := req.ResponseFormat.JSONSchema
			var schema struct {
				Properties map[string]any `json:"properties"`
			}
			_ = json.Unmarshal(js.Schema, &schema)
			switch {
			case js.Name == "flawed_person":
				r.Content = "Here it is:\n```json\n{\"name\": \"Ada Lovelace\", \"age\": \"36\", \"title\": \"Countess\"}\n```"
			case js.Name == "hopeless":
				r.Content = "I would rather answer in prose."
			case len(schema.Properties) == 0:
				r.Content = `{"name": "Ada Lovelace", "age": 36}`
			default:
				v, err := mock.FromSchema(js.Name, js.Schema)
				if err != nil {
					r.Content = err.Error()
					break
				}
				b, _ := json.Marshal(v)
				r.Content = string(b)
			}
		case strings.Contains(prompt, "ECHO"):
			b, _ := json.Marshal(map[string]any{"system": req.System(), "temperature": req.Temperature, "top_p": req.TopP,
				"max_tokens": req.MaxTokens, "max_completion_tokens": req.MaxCompletionTokens, "stop": req.Stop, "seed": req.Seed,
				"reasoning_effort": req.ReasoningEffort, "verbosity": req.Verbosity})
			r.Content = string(b)
		case limit > 0 && limit <= 8:
			r.Content = strings.Join(strings.Fields("Rust is a systems programming language that runs fast, prevents segfaults and guarantees thread safety.")[:limit], " ")
			r.FinishReason = "length"
		default:
			r.Content = "Rust is a systems programming language focused on safety and speed."
		}
		return r
	}
}

// toolReply answers a request that offers tools: the answer quotes the
// results the conversation holds after its last user message, or, before
// any, a call of the tool the choice names (or the first), its arguments
// a value of its parameters' schema.
func toolReply(req *openaitest.ChatRequest, r openaitest.Reply) openaitest.Reply {
	var results []string
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "user"; i-- {
		if req.Messages[i].Role == "tool" {
			results = append([]string{req.Messages[i].Content}, results...)
		}
	}
	if len(results) > 0 {
		r.Content = "The tools said: " + strings.Join(results, "; ")
		return r
	}
	tool := req.Tools[0]
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(req.ToolChoice, &named) == nil && named.Function.Name != "" {
		for _, t := range req.Tools {
			if t.Function.Name == named.Function.Name {
				tool = t
			}
		}
	}
	args := "{}"
	if len(tool.Function.Parameters) > 0 {
		v, err := mock.FromSchema(tool.Function.Name, tool.Function.Parameters)
		if err != nil {
			r.Content = err.Error()
			return r
		}
		b, _ := json.Marshal(v)
		args = string(b)
	}
	r.ToolCalls = []openaitest.ToolCall{openaitest.Call(fmt.Sprintf("call_%d", len(req.Messages)), tool.Function.Name, args)}
	r.ArgumentChunk = 5
	return r
}
