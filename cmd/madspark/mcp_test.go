package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/store/sqlite"
)

// TestMCPStdio runs `madspark mcp` in this process with the Go SDK's client
// on its standard input and output: the tools are listed and spark runs;
// the notices go to standard error.
func TestMCPStdio(t *testing.T) {
	env := mockEnv(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"mcp"}, func(k string) string { return env[k] }, inR, outW, &errb)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools: %v %v", err, tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spark", Arguments: map[string]any{"topic": "urban farming"}})
	if err != nil || res.IsError {
		t.Fatalf("spark: %v %+v", err, res)
	}
	if id, _ := res.StructuredContent.(map[string]any)["run_id"].(string); id == "" {
		t.Fatalf("no run_id: %v", res.StructuredContent)
	}
	bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chaos", Arguments: map[string]any{"prompt": "x", "iterations": 0}})
	if err != nil || !bad.IsError || bad.Content[0].(*mcp.TextContent).Text != "iterations must be 1..10, got 0" {
		t.Fatalf("a bad call: %v %+v", err, bad)
	}
	// The command line says the same of the same value.
	if r := invoke(t, env, "chaos", "x", "--iterations", "0"); r.code != 2 || r.stderr != "madspark: iterations must be 1..10, got 0\n" {
		t.Fatalf("the command line: %+v", r)
	}
	cs.Close() // closes its standard input: the command ends
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if s := errb.String(); !strings.Contains(s, "mock mode") || !strings.Contains(s, "serving MCP on standard input and output: 6 pipelines") {
		t.Errorf("standard error: %s", s)
	}
}

// TestServeMCPChecks: serve's /mcp answers an MCP client, and is behind the
// server's checks: a page of another origin is refused, a name the server
// does not answer to too, and a method it does not serve is a 405.
func TestServeMCPChecks(t *testing.T) {
	base, stop := startWebServe(t, mockEnv(t))
	defer stop()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "debate", Arguments: map[string]any{"query": "Is tea better than coffee?"}})
	if err != nil || res.IsError {
		t.Fatalf("debate over HTTP: %v %+v", err, res)
	}
	cs.Close()

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`
	for _, c := range []struct {
		name, method string
		header       map[string]string
		status       int
	}{
		{"the server's own origin", "POST", map[string]string{"Origin": base}, 200},
		{"a foreign origin", "POST", map[string]string{"Origin": "https://evil.example"}, 403},
		{"a cross-site fetch", "POST", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"a rebound name", "POST", map[string]string{"Host": "evil.example"}, 421},
		{"a form", "POST", map[string]string{"Content-Type": "text/plain"}, 415},
		{"PUT", "PUT", nil, 405},
		// The stream of server messages is a stream a page could follow.
		{"a foreign origin's GET", "GET", map[string]string{"Origin": "https://evil.example"}, 403},
		{"a cross-site GET", "GET", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"the own origin's GET, without a session", "GET", map[string]string{"Origin": base}, 400},
	} {
		req, _ := http.NewRequest(c.method, base+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range c.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
	// A body over 1 MiB, the API's limit, is refused.
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + strings.Repeat("x", 1<<20) + `","version":"1"}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: status %d, want 413", resp.StatusCode)
	}
}

// TestServeStopRecordsMCPCalls: when serve stops (SIGTERM, Ctrl-C) with a
// tool call in progress, the call's run is recorded interrupted, and
// resumable, before serve exits.
func TestServeStopRecordsMCPCalls(t *testing.T) {
	env := mockEnv(t)
	env["MADSPARK_MOCK_LATENCY"] = "1m"
	base, stop := startWebServe(t, env)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "debate", Arguments: map[string]any{"query": "Is tea better than coffee?"}})
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/api/runs")
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Runs []struct {
				Status string `json:"status"`
			} `json:"runs"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list.Runs) == 1 && list.Runs[0].Status == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call's run did not start: %+v", list)
		}
	}
	stop() // as SIGTERM does: serve's context ends
	db, err := sqlite.Open(context.Background(), env["MADSPARK_DB"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(context.Background(), madspark.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	if r := runs[0]; r.Status != madspark.RunInterrupted || !r.Status.Resumable() || !strings.Contains(r.Error, "the server stopped") {
		t.Errorf("after serve stopped, the call's run is %s %q, want interrupted", r.Status, r.Error)
	}
}
