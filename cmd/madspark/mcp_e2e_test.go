package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

// mcpWire answers spark as liveReply does and chaos as chaosWire does,
// but holds chaos's judge until the client gives up: a slow run to cancel.
func mcpWire(req *openaitest.ChatRequest) openaitest.Reply {
	if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
		switch name := req.ResponseFormat.JSONSchema.Name; {
		case strings.HasPrefix(name, "spark_"):
			return liveReply(req)
		case name == "chaos_judgement":
			return openaitest.Reply{Fault: &openaitest.Fault{Delay: time.Hour}}
		}
	}
	return chaosWire(req)
}

// TestMCPEndToEnd runs mcpserver/e2e/mcp.mjs, a client of the official
// TypeScript MCP SDK, against `madspark mcp` (spawned by the script over
// stdio) and `madspark serve`'s /mcp (Streamable HTTP, with a token), both
// calling an in-process OpenAI wire fake whose requests the script counts:
// tools listed, spark with progress, a bad call, a slow chaos cancelled,
// the run read as a resource, the token required, a foreign Origin
// refused (its POST and its GET), a session's end stopping its running
// call, and a body over 1 MiB refused.
//
// It needs node and mcpserver/e2e/node_modules (npm ci there). Without
// them it is skipped, saying what is missing, except in CI (CI set), where
// it fails.
func TestMCPEndToEnd(t *testing.T) {
	node, dir, _ := needNode(t, "MCP end-to-end test", "mcpserver/e2e", "@modelcontextprotocol/sdk")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pipelines, err := filepath.Abs(filepath.Join("..", "..", "examples", "pipelines"))
	if err != nil {
		t.Fatal(err)
	}

	srv := openaitest.NewServer(t, mcpWire)
	counts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reqs := srv.Requests()
		by := map[string]int{}
		for _, r := range reqs {
			if r.ResponseFormat != nil && r.ResponseFormat.JSONSchema != nil {
				by[r.ResponseFormat.JSONSchema.Name]++
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"total": len(reqs), "by_schema": by})
	}))
	defer counts.Close()

	const token = "mcp-e2e-token"
	serveEnv := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_API_TOKEN": token,
		"MADSPARK_DB": filepath.Join(t.TempDir(), "serve.db")}
	base, stop := startWebServe(t, serveEnv, "--pipelines", pipelines)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "mcp.mjs", "--command", self, "--arg=mcp", "--arg=--pipelines", "--arg="+pipelines,
		"--url", base, "--token", token, "--calls", counts.URL)
	cmd.Dir = dir
	// The environment of `madspark mcp`, which the script passes on: this
	// test binary acting as madspark, on a database of its own.
	cmd.Env = append(os.Environ(), "MADSPARK_TEST_AS_MAIN=1", "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=sk-test",
		"MADSPARK_DB="+filepath.Join(t.TempDir(), "stdio.db"))
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("mcp.mjs:\n%s", out)
	if err != nil {
		t.Errorf("the MCP end-to-end test failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^mcp e2e: [1-9][0-9]* passed, 0 failed$`).Match(out) {
		t.Errorf("the MCP end-to-end test did not report its steps as passed")
	}
}
