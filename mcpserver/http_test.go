package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/mcpserver"
)

// serveHTTP serves h's server over Streamable HTTP.
func (h *harness) serveHTTP(t *testing.T) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h.srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// connect connects a client of the official SDK to ts.
func connect(t *testing.T, ts *httptest.Server) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "madspark-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// holdJudge holds chaos's judge calls until their context ends, or until
// the returned release is called, and tells when one is held.
func (h *harness) holdJudge() (held <-chan struct{}, release func()) {
	ch := make(chan struct{}, 16)
	free := make(chan struct{})
	var once sync.Once
	h.model.setGate(func(ctx context.Context, req *llm.Request) error {
		if strings.HasPrefix(req.Agent, "chaos.judge") {
			select {
			case ch <- struct{}{}:
			default:
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-free:
			}
		}
		return nil
	})
	return ch, func() { once.Do(func() { close(free) }) }
}

// waitHeld waits for a held call.
func waitHeld(t *testing.T, held <-chan struct{}) {
	t.Helper()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("no model call was held")
	}
}

// settled waits, up to a generous deadline, until run id has left
// running, and returns it.
func (h *harness) settled(t *testing.T, id string) *madspark.Run {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := h.db.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != madspark.RunRunning {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s", id, r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// onlyRun is the one run recorded.
func (h *harness) onlyRun(t *testing.T) *madspark.Run {
	t.Helper()
	runs, err := h.db.Runs(context.Background(), madspark.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v, %v; want one", runs, err)
	}
	return runs[0]
}

// rawPost posts one JSON-RPC message to the session of cs, as any client
// would, on ctx.
func rawPost(ctx context.Context, ts *httptest.Server, cs *mcp.ClientSession, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if cs != nil {
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	}
	return http.DefaultClient.Do(req)
}

func chaosCall(id int) string {
	a, _ := json.Marshal(args["chaos"])
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"chaos","arguments":%s}}`, id, a)
}

// TestDeleteSessionCancelsCalls: a client that ends its session (DELETE)
// while a tool call runs stops the call's run at once, recorded cancelled
// and resumable with its finished steps, on both stores; the DELETE is
// answered without waiting for the run.
func TestDeleteSessionCancelsCalls(t *testing.T) {
	eachStore(t, harnessOptions{}, func(t *testing.T, h *harness) {
		held, _ := h.holdJudge()
		ts := h.serveHTTP(t)
		cs := connect(t, ts)
		go func() {
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chaos", Arguments: args["chaos"]})
		}()
		waitHeld(t, held)
		req, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
		req.Header.Set("Mcp-Session-Id", cs.ID())
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || time.Since(start) > 10*time.Second {
			t.Errorf("DELETE: %d after %s", resp.StatusCode, time.Since(start))
		}
		r := h.settled(t, h.onlyRun(t).ID)
		if r.Status != madspark.RunCancelled || !r.Status.Resumable() || !strings.Contains(r.Error, "the MCP client ended its session") {
			t.Errorf("run %s %q, want cancelled by the session's end", r.Status, r.Error)
		}
		if steps, _ := h.db.Steps(context.Background(), r.ID); len(steps) == 0 {
			t.Error("no finished step kept")
		}
	})
}

// TestDroppedConnectionCancelsCalls: a client that drops the connection
// its tool call came in on stops the call's run, recorded cancelled and
// resumable, on both stores: without an event store it could not resume
// the answer's stream.
func TestDroppedConnectionCancelsCalls(t *testing.T) {
	eachStore(t, harnessOptions{}, func(t *testing.T, h *harness) {
		held, _ := h.holdJudge()
		ts := h.serveHTTP(t)
		cs := connect(t, ts)
		ctx, drop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := rawPost(ctx, ts, cs, chaosCall(41)); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		waitHeld(t, held)
		drop()
		<-done
		r := h.settled(t, h.onlyRun(t).ID)
		if r.Status != madspark.RunCancelled || !r.Status.Resumable() || !strings.Contains(r.Error, "the MCP client closed the connection") {
			t.Errorf("run %s %q, want cancelled by the dropped connection", r.Status, r.Error)
		}
		// The session goes on.
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Errorf("the session after a dropped call: %v", err)
		}
	})
}

// TestCallsObeyCapacity: tool calls take their place in the provider's
// queue as /v1 requests do: beyond the calls in flight and the queue, a
// call is refused with an error that says when to call again, and no run
// is recorded; the admitted ones finish.
func TestCallsObeyCapacity(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{limit: 1, queue: 1})
	held, release := h.holdJudge()
	defer release()
	ts := h.serveHTTP(t)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	results := make(chan outcome, 2)
	for i := range 2 {
		cs := connect(t, ts)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chaos", Arguments: map[string]any{"prompt": fmt.Sprintf("a game about tides %d", i), "iterations": 1}})
			results <- outcome{res, err}
		}()
		if i == 0 {
			waitHeld(t, held)
		}
	}
	// The second is admitted: its run is recorded and waits its turn.
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs, _ := h.db.Runs(context.Background(), madspark.RunFilter{})
		if len(runs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs %d, want 2 admitted", len(runs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	third := connect(t, ts)
	res, err := third.CallTool(context.Background(), &mcp.CallToolParams{Name: "chaos", Arguments: map[string]any{"prompt": "a game about tides 3", "iterations": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if msg := text(t, res); !res.IsError || !strings.Contains(msg, "the model provider is busy") || !strings.Contains(msg, "no run was started, call the tool again in ") {
		t.Errorf("the call beyond capacity: %v %q", res.IsError, msg)
	}
	if runs, _ := h.db.Runs(context.Background(), madspark.RunFilter{}); len(runs) != 2 {
		t.Errorf("%d runs recorded, want the 2 admitted", len(runs))
	}
	release()
	for range 2 {
		o := <-results
		if o.err != nil || o.res.IsError {
			t.Errorf("an admitted call: %v %+v", o.err, o.res)
		}
	}
}

// TestSessionsBounded: at most MaxSessions sessions are kept; a new one
// takes the place of the least recently used idle one (whose client is
// then told its session is gone), and is refused with a clear 503 when
// every session has a call in progress.
func TestSessionsBounded(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{config: func(c *mcpserver.Config) { c.MaxSessions = 2 }})
	held, release := h.holdJudge()
	defer release()
	ts := h.serveHTTP(t)
	a := connect(t, ts)
	b := connect(t, ts)
	time.Sleep(10 * time.Millisecond)
	if _, err := a.ListTools(context.Background(), nil); err != nil { // b is now the least recently used
		t.Fatal(err)
	}
	c := connect(t, ts)
	if _, err := b.ListTools(context.Background(), nil); err == nil {
		t.Error("the least recently used session was kept beyond the bound")
	}
	for name, cs := range map[string]*mcp.ClientSession{"a": a, "c": c} {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Errorf("session %s: %v", name, err)
		}
	}
	// Both kept sessions busy: a new one is refused, saying why.
	for _, cs := range []*mcp.ClientSession{a, c} {
		go func() {
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chaos", Arguments: args["chaos"]})
		}()
		waitHeld(t, held)
	}
	resp, err := rawPost(context.Background(), ts, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "too many MCP sessions") {
		t.Errorf("a session beyond the bound: %d %s", resp.StatusCode, body)
	}
	release()
}

// TestBodyLimit: a request body over 1 MiB, the REST API's limit, is
// refused with 413 before it is read whole.
func TestBodyLimit(t *testing.T) {
	h := newHarness(t, 0)
	ts := h.serveHTTP(t)
	cs := connect(t, ts)
	big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"debate","arguments":{"query":"` + strings.Repeat("x", mcpserver.MaxBodyBytes) + `"}}}`
	resp, err := rawPost(context.Background(), ts, cs, big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: %d", resp.StatusCode)
	}
	if runs, _ := h.db.Runs(context.Background(), madspark.RunFilter{}); len(runs) != 0 {
		t.Errorf("%d runs recorded", len(runs))
	}
}

// TestInvalidCursor: a cursor the server did not give is an invalid
// parameter (-32602), as the protocol's clients expect.
func TestInvalidCursor(t *testing.T) {
	h := newHarness(t, 0)
	_, err := h.client.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: "not-a-cursor"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "not-a-cursor") {
		t.Errorf("an invalid cursor: %v", err)
	}
}

// TestStdioMalformedLine: over standard input and output, a line that is
// not a JSON-RPC message is answered with a JSON-RPC error (-32700 for
// text that is not JSON, -32600 for JSON that is not a message, with its
// ID when it has one) and the session goes on.
func TestStdioMalformedLine(t *testing.T) {
	h := newHarness(t, 0)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- h.srv.ServeStdio(ctx, inR, outW) }()
	lines := make(chan map[string]any, 16)
	go func() {
		dec := json.NewDecoder(outR)
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				close(lines)
				return
			}
			lines <- m
		}
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("the session ended")
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no reply")
		}
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"`, jsonrpc.CodeParseError, nil},
		{`this is not JSON`, jsonrpc.CodeParseError, nil},
		{`{"id":3,"hello":"world"}`, jsonrpc.CodeInvalidRequest, 3.0},
		{`[]`, jsonrpc.CodeInvalidRequest, nil},
		{`"just a string"`, jsonrpc.CodeInvalidRequest, nil},
	} {
		send(tc.line)
		m := next()
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != tc.code || m["id"] != tc.id || m["jsonrpc"] != "2.0" {
			t.Errorf("%s: %v, want error %v with id %v", tc.line, m, tc.code, tc.id)
		}
		send(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`)
		if m := next(); m["result"] == nil || m["id"] != 10.0 {
			t.Fatalf("after %s, tools/list: %v", tc.line, m)
		}
	}
	inW.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("ServeStdio did not end with its input")
	}
}

// TestCloseInterruptsCalls: a server that stops (Close) stops its tool
// calls and records their runs interrupted, resumable, before Close
// returns, on both stores; a call made after is refused.
func TestCloseInterruptsCalls(t *testing.T) {
	eachStore(t, harnessOptions{}, func(t *testing.T, h *harness) {
		held, _ := h.holdJudge()
		ts := h.serveHTTP(t)
		cs := connect(t, ts)
		go func() {
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chaos", Arguments: args["chaos"]})
		}()
		go func() {
			_, _ = h.call(context.Background(), "chaos", map[string]any{"prompt": "a game about rivers", "iterations": 1}, "")
		}()
		waitHeld(t, held)
		waitHeld(t, held)
		h.srv.Close()
		runs, err := h.db.Runs(context.Background(), madspark.RunFilter{})
		if err != nil || len(runs) != 2 {
			t.Fatalf("runs %+v, %v", runs, err)
		}
		for _, r := range runs {
			if r.Status != madspark.RunInterrupted || !r.Status.Resumable() || !strings.Contains(r.Error, "the server stopped") {
				t.Errorf("run %s: %s %q, want interrupted when Close returned", r.ID, r.Status, r.Error)
			}
		}
		res, err := h.call(context.Background(), "spark", args["spark"], "")
		if err == nil && (!res.IsError || !strings.Contains(text(t, res), "the server is stopping")) {
			t.Errorf("a call after Close: %+v", res)
		}
	})
}

// TestPromptLimitOnCalls: a tool call whose text — a debate's query and
// history together — is over the limit is the tool's error naming it,
// before any run is recorded or model called, on both stores.
func TestPromptLimitOnCalls(t *testing.T) {
	eachStore(t, harnessOptions{}, func(t *testing.T, h *harness) {
		h.reg.LimitPrompt(2000)
		turn := func(role string) map[string]string {
			return map[string]string{"role": role, "content": strings.Repeat("x", 900)}
		}
		res, err := h.call(context.Background(), "debate", map[string]any{"query": "and now?", "history": []any{turn("user"), turn("assistant"), turn("user")}}, "")
		if err != nil {
			t.Fatal(err)
		}
		if msg := text(t, res); !res.IsError || !strings.Contains(msg, "limit is 2000 bytes") {
			t.Errorf("a call over the limit: %v %q", res.IsError, msg)
		}
		if runs, _ := h.db.Runs(context.Background(), madspark.RunFilter{}); len(runs) != 0 || h.model.count() != 0 {
			t.Errorf("%d runs recorded, %d model calls", len(runs), h.model.count())
		}
		res, err = h.call(context.Background(), "debate", map[string]any{"query": "and now?", "history": []any{turn("user"), turn("assistant")}}, "")
		if err != nil || res.IsError {
			t.Errorf("a call within the limit: %v %+v", err, res)
		}
	})
}
