package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/store/sqlite"
)

func TestDebateOneShot(t *testing.T) {
	env := mockEnv(t)
	r := invoke(t, env, "debate", "What is Rust?")
	if r.code != 0 || !strings.Contains(r.stdout, "What is Rust?") || !strings.Contains(r.stderr, "simple path") || !strings.Contains(r.stderr, "1 LLM call,") {
		t.Fatalf("simple: %+v", r)
	}
	// The summary names the run, for runs show, export and bookmarks.
	id := regexp.MustCompile(`madspark: run (\S+) · simple path`).FindStringSubmatch(r.stderr)
	if id == nil {
		t.Fatalf("no run ID: %s", r.stderr)
	}
	if r := invoke(t, env, "export", id[1], "--format", "markdown"); r.code != 0 || !strings.Contains(r.stdout, "What is Rust?") {
		t.Fatalf("export %s: %+v", id[1], r)
	}
	r = invoke(t, env, "debate", "Explain step by step how to implement async iterators", "--output-format", "json", "--rounds", "2", "--peer-review")
	var out struct {
		Result struct {
			Path        string            `json:"path"`
			Answer      string            `json:"answer"`
			Handoffs    []json.RawMessage `json:"handoffs"`
			Ranking     []json.RawMessage `json:"ranking"`
			Transitions []json.RawMessage `json:"transitions"`
			SearchNote  string            `json:"search_note"`
		} `json:"result"`
		Usage struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"usage"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
		t.Fatalf("complex: %+v", r)
	}
	if out.Result.Path != "complex" || len(out.Result.Handoffs) != 6 || len(out.Result.Ranking) != 3 || out.Usage.LLMCalls != 10 || len(out.Result.Transitions) < 8 || out.Result.SearchNote == "" {
		t.Fatalf("complex result: %+v", out)
	}
}

func TestDebateExplainRoute(t *testing.T) {
	env := mockEnv(t)
	r := invoke(t, env, "debate", "--explain-route", "Design a distributed cache architecture")
	for _, want := range []string{"level:       complex", "confidence:", "reasoning:   true design, architecture"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("explain-route lacks %q: %+v", want, r)
		}
	}
	if r := invoke(t, env, "debate", "--explain-route", "What is Rust?"); !strings.Contains(r.stdout, "level:       simple") {
		t.Fatalf("%+v", r)
	}
	if r := invoke(t, env, "runs", "list", "--output-format", "json"); strings.Contains(r.stdout, "debate") {
		t.Fatal("--explain-route must not start a run")
	}
}

func TestDebateREPL(t *testing.T) {
	env := mockEnv(t)
	var out, errb bytes.Buffer
	stdin := strings.NewReader("What is Rust?\n\n/reset\nDefine ownership\n/exit\nnever asked\n")
	code := run(context.Background(), []string{"debate"}, func(k string) string { return env[k] }, stdin, &out, &errb)
	if code != 0 || strings.Count(errb.String(), "simple path") != 2 || strings.Contains(out.String(), "never asked") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
}

// TestDebateREPLInterrupted: Ctrl-C ends a session that waits for a line
// that never comes, with the exit code of an interrupted command.
func TestDebateREPLInterrupted(t *testing.T) {
	env := mockEnv(t)
	stdin, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"debate"}, func(k string) string { return env[k] }, stdin, &out, &errb)
	}()
	if _, err := io.WriteString(w, "What is Rust?\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errb.String(), "simple path"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer: %s", errb.String())
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 130 || !strings.HasSuffix(errb.String(), "madspark: interrupted\n") {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ctrl-C did not end a session waiting for input")
	}
}

func TestDebateBadInput(t *testing.T) {
	env := mockEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"debate", " "}, "query must not be empty"},
		{[]string{"debate", "q", "--rounds", "9"}, "rounds must be 1..5"},
		{[]string{"debate", "q", "--mode", "fast"}, "mode must be auto, simple or complex"},
		{[]string{"debate", "q", "--role", "judge=0.1/100"}, "role config"},
		{[]string{"debate", "q", "--proposer-models", "cohere:x"}, "unknown provider"},
		{[]string{"debate", "q", "--model-path", "/nonexistent/model.gguf"}, "llama-server"},
		{[]string{"debate", "--explain-route"}, "needs a query"},
		{[]string{"serve", "--rounds", "0"}, "rounds must be 1..5"},
	} {
		r := invoke(t, env, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, r.code, r.stderr)
		}
	}
	env["MADSPARK_API_TOKEN"] = ""
	if r := invoke(t, env, "serve", "--addr", "0.0.0.0:0"); r.code != 2 || !strings.Contains(r.stderr, "MADSPARK_API_TOKEN") {
		t.Errorf("public bind without token: %+v", r)
	}
}

// syncBuffer is a bytes.Buffer safe to read while run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeAnswersOpenAIClients(t *testing.T) {
	env := mockEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
	}()
	addr := regexp.MustCompile(`serving http://([0-9.:]+)/v1`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base = "http://" + m[1] + "/v1"
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", errb.String())
		}
	}
	client := sdk.NewClient(option.WithBaseURL(base), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	c, err := client.Chat.Completions.New(ctx, sdk.ChatCompletionNewParams{Model: "madspark-debate",
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Compare B-trees and LSM trees")}})
	if err != nil || !strings.Contains(c.Choices[0].Message.Content, "Compare B-trees and LSM trees") || c.Usage.TotalTokens == 0 {
		t.Fatalf("%v %+v", err, c)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, sdk.ChatCompletionNewParams{Model: "madspark-direct",
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Explain quicksort step by step")}})
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current().Choices; len(ch) > 0 {
			text.WriteString(ch[0].Delta.Content)
		}
	}
	if stream.Err() != nil || !strings.Contains(text.String(), "answered directly") {
		t.Fatalf("direct model must not debate: %v %q", stream.Err(), text.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}
	list := invoke(t, env, "runs", "list", "--pipeline", "debate", "--output-format", "json")
	if strings.Count(list.stdout, `"pipeline": "debate"`) != 2 {
		t.Fatalf("server-side runs not recorded: %s", list.stdout)
	}
}

// TestDebateConversation: --conversation continues a stored conversation,
// with its exchanges as history, and keeps the new ones in it.
func TestDebateConversation(t *testing.T) {
	env := mockEnv(t)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, env["MADSPARK_DB"])
	if err != nil {
		t.Fatal(err)
	}
	conv := &madspark.Conversation{ID: "conv_1", Title: "Rust"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.CreateConversation(ctx, conv))
	must(db.AppendMessage(ctx, "conv_1", &madspark.ChatMessage{Role: madspark.ChatUser, Content: "What is Rust?"}))
	must(db.AppendMessage(ctx, "conv_1", &madspark.ChatMessage{Role: madspark.ChatAssistant, Content: "A systems language."}))
	must(db.Close())

	r := invoke(t, env, "debate", "--conversation", "conv_1", "--output-format", "json", "Is it safe?")
	var out struct {
		RunID string `json:"run_id"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
		t.Fatalf("one query: %+v", r)
	}
	var outb, errb bytes.Buffer
	if code := run(ctx, []string{"debate", "--conversation", "conv_1"}, func(k string) string { return env[k] }, strings.NewReader("And fast?\n"), &outb, &errb); code != 0 {
		t.Fatalf("REPL: exit %d: %s", code, errb.String())
	}

	db, err = sqlite.Open(ctx, env["MADSPARK_DB"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Conversation(ctx, "conv_1")
	must(err)
	if len(got.Messages) != 6 || got.Messages[2].Content != "Is it safe?" || got.Messages[3].RunID != out.RunID || got.Messages[4].Content != "And fast?" {
		t.Fatalf("conversation after continuing: %+v", got.Messages)
	}
	rec, err := db.Run(ctx, got.Messages[5].RunID)
	must(err)
	var p struct {
		History []struct{ Role, Content string } `json:"history"`
	}
	must(json.Unmarshal(rec.Params, &p))
	if len(p.History) != 4 || p.History[0].Content != "What is Rust?" || p.History[2].Content != "Is it safe?" || p.History[3].Content != got.Messages[3].Content {
		t.Errorf("the REPL's history = %+v, want both earlier exchanges", p.History)
	}

	if r := invoke(t, env, "debate", "--conversation", "nope", "q"); r.code != 2 || !strings.Contains(r.stderr, "no conversation nope") {
		t.Errorf("missing conversation: %+v", r)
	}
}
