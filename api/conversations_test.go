package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/server"
)

// debateModel is the debate assistant as `madspark serve` serves it: the
// last message is the query, the others its history; the answer streams
// and the debate is recorded as a run.
type debateModel struct {
	id, mode string
	pipe     *debate.Pipeline
	engine   *engine.Engine
}

func (m *debateModel) ID() string { return m.id }

func (m *debateModel) Complete(ctx context.Context, p server.Prompt, out *server.Stream) (*server.Completion, error) {
	params := debate.DefaultParams()
	params.Query, params.Mode = p.Query(), m.mode
	params.History = p.Messages[:len(p.Messages)-1]
	run, err := m.engine.Start(ctx, engine.RunInfo{Pipeline: "debate", Mode: "mock", Provider: mock.Name, Model: mock.Model, Params: params}, nil)
	if err != nil {
		return nil, err
	}
	var onDelta func(string)
	if out != nil {
		onDelta = out.Text
	}
	res, err := m.pipe.Run(ctx, run, params, onDelta)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: the client went away", madspark.ErrCancelled)
	}
	if ferr := run.Finish(context.WithoutCancel(ctx), res, err); ferr != nil {
		return nil, ferr
	}
	if err != nil {
		return nil, err
	}
	return &server.Completion{Text: res.Answer, FinishReason: "stop", Usage: run.Usage(), RunID: run.ID()}, nil
}

func chatModels(t testing.TB, e *engine.Engine) []server.Model {
	t.Helper()
	count, err := debate.NewTokenCounter()
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := debate.New(count, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return []server.Model{&debateModel{"madspark-debate", "auto", pipe, e}, &debateModel{"madspark-direct", "simple", pipe, e}}
}

// chatEvent is an event of an answer's stream.
type chatEvent struct {
	event string
	data  json.RawMessage
}

func parseChat(t testing.TB, body []byte) []chatEvent {
	t.Helper()
	var out []chatEvent
	var cur chatEvent
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
			}
			cur = chatEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

// ask posts a question and returns the streamed answer's pieces and the
// kept answer.
func (hs *harness) ask(t *testing.T, path string, body any) ([]string, madspark.ChatMessage) {
	t.Helper()
	r := hs.do("POST", path, body)
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("POST %s: %d %s: %s", path, r.status, r.header.Get("Content-Type"), clip(r.body))
	}
	evs := parseChat(t, r.body)
	if len(evs) < 2 || evs[0].event != "question" || evs[len(evs)-1].event != "answer" {
		t.Fatalf("events of %s: %s", path, clip(r.body))
	}
	var deltas []string
	for _, e := range evs[1 : len(evs)-1] {
		var d struct{ Text string }
		if e.event != "delta" || json.Unmarshal(e.data, &d) != nil || d.Text == "" {
			t.Fatalf("event %s %s between question and answer", e.event, e.data)
		}
		deltas = append(deltas, d.Text)
	}
	var a madspark.ChatMessage
	if err := json.Unmarshal(evs[len(evs)-1].data, &a); err != nil {
		t.Fatal(err)
	}
	return deltas, a
}

func (hs *harness) conversation(t *testing.T, id string) madspark.Conversation {
	t.Helper()
	r := hs.do("GET", "/api/conversations/"+id, nil)
	if r.status != 200 {
		t.Fatalf("GET conversation: %d %s", r.status, r.body)
	}
	var c madspark.Conversation
	r.json(t, &c)
	return c
}

func TestConversationLifecycle(t *testing.T) {
	hs := newHarness(t, options{})
	r := hs.do("POST", "/api/conversations", map[string]any{})
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var c madspark.Conversation
	r.json(t, &c)
	if c.ID == "" || c.Model != "madspark-debate" || r.header.Get("Location") != "/api/conversations/"+c.ID {
		t.Fatalf("created %+v, Location %q", c, r.header.Get("Location"))
	}
	path := "/api/conversations/" + c.ID + "/messages"

	// A simple question: a direct answer, streamed in pieces that add up
	// to the kept answer, recorded as a debate run.
	deltas, a := hs.ask(t, path, map[string]any{"content": "What is a goroutine?"})
	if len(deltas) < 2 || strings.Join(deltas, "") != a.Content || a.Role != madspark.ChatAssistant || a.RunID == "" || a.Seq != 2 || a.Model != "madspark-debate" {
		t.Fatalf("answer %+v from %d pieces %q", a, len(deltas), deltas)
	}
	run := hs.run(a.RunID)
	var res debate.Result
	if err := json.Unmarshal(run.Result, &res); err != nil || run.Pipeline != "debate" || res.Answer != a.Content || res.Path != debate.Simple {
		t.Fatalf("run %+v: %v", run, err)
	}

	// A follow-up carries the first exchange; a complex one debates.
	follow := "Explain step by step how to design a worker pool in Go, compare the trade-offs of buffered and unbuffered channels, and why cancellation matters."
	_, b := hs.ask(t, path, map[string]any{"content": follow})
	run2 := hs.run(b.RunID)
	var p debate.Params
	if err := json.Unmarshal(run2.Params, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.History) != 2 || p.History[0].Content != "What is a goroutine?" || p.History[1].Content != a.Content {
		t.Errorf("the follow-up's history = %+v, want the first exchange", p.History)
	}
	if err := json.Unmarshal(run2.Result, &res); err != nil || res.Path != debate.Complex || len(res.Handoffs) == 0 || run2.Usage.LLMCalls < 4 {
		t.Errorf("complex run: path %s, %d handoffs, %d calls, %v", res.Path, len(res.Handoffs), run2.Usage.LLMCalls, err)
	}

	got := hs.conversation(t, c.ID)
	if got.Title != "What is a goroutine?" || len(got.Messages) != 4 || got.Messages[3].Content != b.Content || got.Messages[2].Content != follow {
		t.Fatalf("conversation after two questions: %+v", got)
	}

	// Regenerate answers the last question again with the same history,
	// after the answer it had, which stays; madspark-direct answers
	// without debating.
	_, b2 := hs.ask(t, "/api/conversations/"+c.ID+"/regenerate", map[string]any{"model": "madspark-direct"})
	if b2.Seq != 5 || b2.RunID == b.RunID || b2.Model != "madspark-direct" {
		t.Errorf("regenerated %+v", b2)
	}
	if err := json.Unmarshal(hs.run(b2.RunID).Result, &res); err != nil || res.Path != debate.Simple {
		t.Errorf("madspark-direct took the %s path", res.Path)
	}
	if got := hs.conversation(t, c.ID); len(got.Messages) != 5 || got.Messages[3].RunID != b.RunID || got.Messages[4].RunID != b2.RunID {
		t.Errorf("after regenerating: %+v", got.Messages)
	}

	// Rename, list, delete.
	r = hs.do("PATCH", "/api/conversations/"+c.ID, map[string]any{"title": "  Go   concurrency "})
	if r.status != 200 {
		t.Fatalf("rename: %d %s", r.status, r.body)
	}
	var list struct {
		Conversations   []madspark.Conversation
		Models          []string
		MaxMessageBytes int `json:"max_message_bytes"`
	}
	hs.do("POST", "/api/conversations", map[string]any{"title": "newer", "model": "madspark-direct"})
	r = hs.do("GET", "/api/conversations", nil)
	r.json(t, &list)
	if len(list.Conversations) != 2 || list.Conversations[1].ID != c.ID || list.Conversations[1].Title != "Go concurrency" ||
		list.Conversations[0].Model != "madspark-direct" || strings.Join(list.Models, ",") != "madspark-debate,madspark-direct" || list.MaxMessageBytes != 32000 {
		t.Errorf("list = %+v", list)
	}
	if r := hs.do("DELETE", "/api/conversations/"+c.ID, nil); r.status != 204 {
		t.Errorf("delete: %d", r.status)
	}
	if r := hs.do("GET", "/api/conversations/"+c.ID, nil); r.status != 404 {
		t.Errorf("deleted conversation: %d", r.status)
	}
	if r := hs.do("GET", "/api/runs/"+a.RunID, nil); r.status != 200 {
		t.Errorf("the runs of a deleted conversation are kept: %d", r.status)
	}
}

func TestConversationBadInput(t *testing.T) {
	hs := newHarness(t, options{})
	var c madspark.Conversation
	hs.do("POST", "/api/conversations", map[string]any{"title": "t"}).json(t, &c)
	msgs := "/api/conversations/" + c.ID + "/messages"
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		field        string
	}{
		{"POST", "/api/conversations", map[string]any{"model": "gpt-4"}, 422, "model"},
		{"POST", "/api/conversations", map[string]any{"title": strings.Repeat("x", 201)}, 422, "title"},
		{"POST", "/api/conversations", map[string]any{"titel": "x"}, 400, "titel"},
		{"PATCH", "/api/conversations/" + c.ID, map[string]any{"title": "  "}, 422, "title"},
		{"PATCH", "/api/conversations/nope", map[string]any{"title": "x"}, 404, ""},
		{"DELETE", "/api/conversations/nope", nil, 404, ""},
		{"POST", msgs, map[string]any{"content": " \n"}, 422, "content"},
		{"POST", msgs, map[string]any{"content": 3}, 400, "content"},
		{"POST", msgs, map[string]any{"content": "hi", "model": "madspark-spark"}, 422, "model"},
		{"POST", msgs, map[string]any{"content": strings.Repeat("x", 32001)}, 422, "content"},
		{"POST", "/api/conversations/nope/messages", map[string]any{"content": "hi"}, 404, ""},
		{"POST", "/api/conversations/" + c.ID + "/regenerate", map[string]any{}, 409, ""},
		{"GET", "/api/conversations?limit=0", nil, 422, "limit"},
	} {
		r := hs.do(tc.method, tc.path, tc.body)
		if r.status != tc.status {
			t.Errorf("%s %s %v: %d, want %d: %s", tc.method, tc.path, tc.body, r.status, tc.status, clip(r.body))
			continue
		}
		if e := r.err(t); e.Error.Field != tc.field {
			t.Errorf("%s %s: field %q, want %q", tc.method, tc.path, e.Error.Field, tc.field)
		}
	}
	// Nothing was kept by the refused requests, and no run started.
	if got := hs.conversation(t, c.ID); len(got.Messages) != 0 || got.Title != "t" {
		t.Errorf("after bad requests: %+v", got)
	}
	if runs, _ := hs.db.Runs(context.Background(), madspark.RunFilter{}); len(runs) != 0 {
		t.Errorf("%d runs started by bad requests", len(runs))
	}
}

// TestConversationStop: a client that closes the stream stops the run and
// its model calls; the run is recorded as cancelled and the question stays,
// unanswered, to be answered again.
func TestConversationStop(t *testing.T) {
	// Until Stop, the model answers nothing until its call is cancelled.
	calling := make(chan struct{}, 16)
	var stalled atomic.Bool
	stalled.Store(true)
	hs := newHarness(t, options{client: func(next llm.Client) llm.Client {
		return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			if !stalled.Load() {
				return next.Generate(ctx, req)
			}
			select {
			case calling <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}})
	var c madspark.Conversation
	hs.do("POST", "/api/conversations", map[string]any{}).json(t, &c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", hs.url+"/api/conversations/"+c.ID+"/messages",
		strings.NewReader(`{"content":"Explain step by step how to design a rate limiter, and compare the trade-offs of token buckets and sliding windows."}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() || sc.Text() != "event: question" {
		t.Fatalf("first line %q", sc.Text())
	}
	select {
	case <-calling:
	case <-time.After(10 * time.Second):
		t.Fatal("no model call was made")
	}
	cancel() // Stop, while the proposers are at work
	var runs []*madspark.Run
	res.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runs, err = hs.db.Runs(context.Background(), madspark.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 && runs[0].Status.Final() || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(runs) != 1 || runs[0].Status != madspark.RunCancelled {
		t.Fatalf("runs after Stop: %+v", runs)
	}
	if runs[0].Usage.LLMCalls > 0 {
		t.Errorf("the stopped run completed %d model calls", runs[0].Usage.LLMCalls)
	}
	// The question stays, unanswered: the answer stopped before any of it
	// was written is kept as such.
	got := hs.conversation(t, c.ID)
	if len(got.Messages) != 2 || got.Messages[0].Role != madspark.ChatUser || got.Messages[1].Role != madspark.ChatStopped || got.Messages[1].Content != "" {
		t.Fatalf("after Stop: %+v", got.Messages)
	}
	// Regenerate answers the unanswered question.
	stalled.Store(false)
	_, a := hs.ask(t, "/api/conversations/"+c.ID+"/regenerate", map[string]any{})
	if got := hs.conversation(t, c.ID); len(got.Messages) != 3 || got.Messages[2].Content != a.Content {
		t.Errorf("after regenerating: %+v", got.Messages)
	}
}

// flaky is a client that fails as a provider's server does while down is
// set.
type flaky struct {
	next llm.Client
	down atomic.Bool
}

func (f *flaky) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if f.down.Load() {
		return nil, fmt.Errorf("gave up after 4 attempts: %w", &llm.Error{Provider: "openai", Status: 500, Message: "The server had an error while processing your request.", Retryable: true})
	}
	return f.next.Generate(ctx, req)
}

// TestConversationFailureAndRegenerate: a failed answer is kept as such,
// with its kind, and the question is answered once the provider is back;
// Regenerate asks the model again rather than the response cache, and the
// answers it replaces stay.
func TestConversationFailureAndRegenerate(t *testing.T) {
	var f *flaky
	hs := newHarness(t, options{client: func(c llm.Client) llm.Client {
		f = &flaky{next: c}
		return middleware.Cache(middleware.CacheConfig{Provider: mock.Name, DefaultModel: mock.Model})(f)
	}})
	var c madspark.Conversation
	hs.do("POST", "/api/conversations", map[string]any{"model": "madspark-direct"}).json(t, &c)
	path := "/api/conversations/" + c.ID
	_, a1 := hs.ask(t, path+"/messages", map[string]any{"content": "What is a goroutine?"})
	_, a2 := hs.ask(t, path+"/regenerate", map[string]any{})
	if u := hs.run(a2.RunID).Usage; u.LLMCalls != 1 || u.CachedCalls != 0 {
		t.Errorf("a regenerated answer made %d calls, %d cached; want the model asked again", u.LLMCalls, u.CachedCalls)
	}
	if got := hs.conversation(t, c.ID).Messages; len(got) != 3 || got[1].RunID != a1.RunID || got[2].RunID != a2.RunID {
		t.Fatalf("after Regenerate: %+v", got)
	}

	f.down.Store(true)
	r := hs.do("POST", path+"/messages", map[string]any{"content": "And a channel?"})
	evs := parseChat(t, r.body)
	if r.status != 200 || len(evs) != 2 || evs[1].event != "error" {
		t.Fatalf("a failed answer's stream: %d %s", r.status, clip(r.body))
	}
	var e struct {
		Error   struct{ Message string }
		Failure struct{ Kind, Provider string }
	}
	if err := json.Unmarshal(evs[1].data, &e); err != nil || e.Failure.Kind != "provider_error" || e.Failure.Provider != "openai" || !strings.Contains(e.Error.Message, "HTTP 500") {
		t.Fatalf("error event %s: %v", evs[1].data, err)
	}
	var got struct {
		Messages []struct {
			Role    string
			Content string
			Failure *struct{ Kind string }
		}
	}
	hs.do("GET", path, nil).json(t, &got)
	if n := len(got.Messages); n != 5 || got.Messages[3].Content != "And a channel?" || got.Messages[4].Role != "error" ||
		got.Messages[4].Failure == nil || got.Messages[4].Failure.Kind != "provider_error" {
		t.Fatalf("after a failed answer: %+v", got.Messages)
	}

	// Back up: Retry answers the question, with the last answer of the
	// first one as its history.
	f.down.Store(false)
	_, a3 := hs.ask(t, path+"/regenerate", map[string]any{})
	var p debate.Params
	if err := json.Unmarshal(hs.run(a3.RunID).Params, &p); err != nil || len(p.History) != 2 || p.History[1].Content != a2.Content || p.Query != "And a channel?" {
		t.Fatalf("the retried answer's params: %+v, %v", p, err)
	}
	if got := hs.conversation(t, c.ID).Messages; len(got) != 6 || got[5].RunID != a3.RunID {
		t.Fatalf("after Retry: %+v", got)
	}
}
