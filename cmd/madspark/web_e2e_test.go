package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

// TestWebUIEndToEnd runs web/e2e/e2e.mjs in a real headless Chromium
// against `madspark serve` in mock mode, started in this process: the spark
// form, live progress, results with their charts, a bookmark found again in
// the bookmarks view, evals, chat, cancelling, and every page at 1280 and
// 375 px, light and dark. A second server, in live mode against an
// in-process fake of OpenAI's API whose failures the script switches on and
// off, shows how a failing provider reads, a paused provider, and replies
// that were repaired. A third, in mock mode, is stopped and started again
// on the same address by the script while a run goes on. The screenshots
// are written to web/e2e/screenshots (or $MADSPARK_E2E_SCREENSHOTS).
//
// It needs node, web/node_modules (npm ci in web/) and Chromium
// (/usr/bin/chromium, or $MADSPARK_CHROMIUM). Without them it is skipped,
// saying what is missing, except in CI (CI set), where it fails.
func TestWebUIEndToEnd(t *testing.T) {
	node, webDir, missing := needNode(t, "browser test", "web", "playwright-core")
	chromium := os.Getenv("MADSPARK_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing(chromium + " is missing: apt-get install chromium (or set MADSPARK_CHROMIUM)")
	}
	shots := os.Getenv("MADSPARK_E2E_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(webDir, "e2e", "screenshots")
	}
	if err := os.RemoveAll(shots); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", shots)

	env := mockEnv(t)
	env["MADSPARK_MOCK_LATENCY"] = "600ms" // slow enough to watch the stages go by, and an answer being written, on a busy machine
	// A pipeline file beside the built-in pipelines: e2e.mjs runs it
	// from the form its inputs generate.
	base, stop := startWebServe(t, env, "--pipelines", filepath.Join("..", "..", "examples", "pipelines"))
	defer stop()
	live, fault := startFailingServe(t)
	restarting, restart := startRestartableServe(t)

	e2eCtx, e2eCancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer e2eCancel()
	cmd := exec.CommandContext(e2eCtx, node, filepath.Join("e2e", "e2e.mjs"), "--url", base, "--live-url", live, "--fault-url", fault,
		"--restart-url", restarting, "--restart-control", restart, "--screenshots", shots, "--chromium", chromium)
	cmd.Dir = webDir
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("e2e.mjs:\n%s", out)
	if err != nil {
		t.Errorf("the browser test failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^e2e: [1-9][0-9]* passed, 0 failed$`).Match(out) {
		t.Errorf("the browser test did not report its steps as passed")
	}
}

// startFailingServe starts a second `madspark serve`, in live mode against
// an in-process fake of OpenAI's chat completions, and returns its URL and
// the URL that switches the fake's failures: POST ?status=500 makes every
// call fail with that HTTP status (as OpenAI answers it), ?status=0 ends
// the failure, and ?status=503&count=2 makes only the next two calls
// fail (a call retried twice, then answered). Answers are plain text, as a simple chat question gets (a
// debate's proposers, asked for JSON, get prose: their replies are
// repaired). The circuit breaker pauses the provider for 10 s.
func startFailingServe(t *testing.T) (string, string) {
	t.Helper()
	var status, left atomic.Int32 // left: the failing calls still to come; 0 for all of them
	fake := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if s := status.Load(); s != 0 {
			if left.Load() > 0 && left.Add(-1) == 0 {
				status.Store(0)
			}
			return openaitest.Reply{Fault: &openaitest.Fault{Status: int(s), Message: "The server had an error while processing your request."}}
		}
		return openaitest.Reply{Content: "A goroutine is a function running concurrently with others, scheduled by the Go runtime onto a few threads.", PromptTokens: 20, CompletionTokens: 18}
	})
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("status"))
		count := 0
		if c := r.URL.Query().Get("count"); c != "" && err == nil {
			count, err = strconv.Atoi(c)
		}
		if r.Method != http.MethodPost || err != nil || count < 0 {
			http.Error(w, "POST ?status=N[&count=N]", http.StatusBadRequest)
			return
		}
		left.Store(int32(count))
		status.Store(int32(n))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(control.Close)
	env := map[string]string{"OPENAI_BASE_URL": fake.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "live.db"),
		"MADSPARK_BREAKER_COOLDOWN": "10s"}
	base, stop := startWebServe(t, env)
	t.Cleanup(stop)
	return base, control.URL
}

// startRestartableServe starts a third `madspark serve`, in mock mode with
// a slow mock, and returns its URL and the URL that stops it (POST
// ?action=stop: at once, its running runs put back in the queue, as a
// server killed and restarted would leave them) and starts it again on the
// same address with the same database (POST ?action=start).
func startRestartableServe(t *testing.T) (string, string) {
	t.Helper()
	env := mockEnv(t)
	env["MADSPARK_MOCK_LATENCY"] = "600ms"
	args := []string{"--drain-timeout", "0s"}
	base, first := startWebServe(t, env, args...)
	addr := strings.TrimPrefix(base, "http://")
	var mu sync.Mutex
	// current stops the server running now, if one is.
	current := func() error { first(); return nil }
	running := true
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if running {
			if err := current(); err != nil {
				t.Errorf("the restarted server: %v", err)
			}
		}
	})
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch action := r.URL.Query().Get("action"); {
		case r.Method != http.MethodPost:
			http.Error(w, "POST ?action=stop|start", http.StatusBadRequest)
		case action == "stop" && running:
			running = false
			if err := current(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		case action == "start" && !running:
			stop, err := serveAt(env, append(args, "--addr", addr)...)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			current, running = stop, true
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, fmt.Sprintf("cannot %s: the server is running=%v", action, running), http.StatusConflict)
		}
	}))
	t.Cleanup(control.Close)
	return base, control.URL
}

// serveAt starts `madspark serve` in this process with env and args, and
// waits until it serves; it returns a function that stops it and says how
// it exited. It is startWebServe for a goroutine that is not the test's.
func serveAt(env map[string]string, args ...string) (func() error, error) {
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(errb.String(), "serving http://"); time.Sleep(10 * time.Millisecond) {
		select {
		case code := <-done:
			cancel()
			return nil, fmt.Errorf("serve exited with %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			return nil, fmt.Errorf("the server did not start: %s", errb.String())
		}
	}
	return func() error {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				return fmt.Errorf("serve exited with %d: %s", code, errb.String())
			}
			return nil
		case <-time.After(40 * time.Second):
			return fmt.Errorf("serve did not stop: %s", errb.String())
		}
	}, nil
}

// startWebServe starts `madspark serve` in this process on a free port with
// env and the extra arguments, and returns its base URL and a function that stops it and checks its
// exit (the server's log is reported on failure).
func startWebServe(t *testing.T, env map[string]string, extra ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, extra...), func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
	}()
	addr := regexp.MustCompile(`serving http://([0-9.:]+)`)
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base = "http://" + m[1]
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited with %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the server did not start: %s", errb.String())
		}
	}
	return base, func() {
		t.Helper()
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited with %d: %s", code, errb.String())
			}
		case <-time.After(40 * time.Second):
			t.Errorf("serve did not stop: %s", errb.String())
		}
		if t.Failed() {
			t.Logf("server log:\n%s", errb.String())
		}
	}
}

// TestServeWebUI checks that `madspark serve` serves the embedded UI at its
// root, its client routes and its assets, beside the API.
func TestServeWebUI(t *testing.T) {
	base, stop := startWebServe(t, mockEnv(t))
	defer stop()
	get := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, index := get("GET", "/")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(index, `<div id="root">`) {
		t.Fatalf("GET /: %d %s %.200q", res.StatusCode, res.Header.Get("Content-Type"), index)
	}
	if res, b := get("GET", "/runs/0123456789abcdef"); res.StatusCode != 200 || b != index {
		t.Errorf("a client route is not the application: %d", res.StatusCode)
	}
	script := regexp.MustCompile(`src="(/assets/[^"]+\.js)"`).FindStringSubmatch(index)
	if script == nil {
		t.Fatalf("index.html loads no script: %q", index)
	}
	if res, b := get("GET", script[1]); res.StatusCode != 200 || !strings.Contains(res.Header.Get("Cache-Control"), "immutable") || len(b) < 1000 {
		t.Errorf("GET %s: %d %q, %d bytes", script[1], res.StatusCode, res.Header.Get("Cache-Control"), len(b))
	}
	if res, b := get("GET", "/api/no-such-endpoint"); res.StatusCode != 404 || !strings.Contains(b, `"type":"not_found"`) {
		t.Errorf("an unknown API path: %d %s", res.StatusCode, b)
	}
	if res, _ := get("POST", "/bookmarks"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST to a page: %d", res.StatusCode)
	}
	if res, b := get("GET", "/health"); res.StatusCode != 200 || !strings.Contains(b, `"status"`) {
		t.Errorf("the UI hides /health: %d %s", res.StatusCode, b)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if res, b := get("GET", "/api/openapi.json"); res.StatusCode != 200 || json.Unmarshal([]byte(b), &doc) != nil || doc.Paths["/"]["get"] == nil {
		t.Errorf("the OpenAPI document does not list GET / (the UI): %d", res.StatusCode)
	}
}

// TestServeWebUIWithToken: with MADSPARK_API_TOKEN set, the UI's own files
// load without the token (a browser cannot send it for a page), and
// everything that holds data still needs it.
func TestServeWebUIWithToken(t *testing.T) {
	env := mockEnv(t)
	env["MADSPARK_API_TOKEN"] = "s3cret-token"
	base, stop := startWebServe(t, env)
	defer stop()
	status := func(method, path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/", "", 200},
		{"GET", "/bookmarks", "", 200},
		{"HEAD", "/", "", 200},
		{"GET", "/health", "", 200},
		{"GET", "/api/runs", "", 401},
		{"GET", "/api/runs", "wrong", 401},
		{"GET", "/api/runs", "s3cret-token", 200},
		{"GET", "/api/no-such-endpoint", "", 401},
		{"GET", "/v1/models", "", 401},
		{"GET", "/metrics", "", 401},
		{"GET", "/health/detailed", "", 401},
		{"POST", "/", "", 401},
	} {
		if got := status(c.method, c.path, c.token); got != c.want {
			t.Errorf("%s %s (token %q): %d, want %d", c.method, c.path, c.token, got, c.want)
		}
	}
}
