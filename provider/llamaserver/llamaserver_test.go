package llamaserver

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as a fake llama-server when started through the script
// the tests put on PATH: it checks the arguments llama-server would get and
// serves /health.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_LLAMA_SERVER") == "1" {
		os.Exit(fakeServer())
	}
	os.Exit(m.Run())
}

func fakeServer() int {
	fs := flag.NewFlagSet("llama-server", flag.ContinueOnError)
	model := fs.String("m", "", "")
	host := fs.String("host", "", "")
	port := fs.Int("port", 0, "")
	parallel := fs.Int("parallel", 0, "")
	fs.Bool("cont-batching", false, "")
	if err := fs.Parse(os.Args[1:]); err != nil || *model == "" || *host != "127.0.0.1" || *parallel != 3 {
		fmt.Fprintln(os.Stderr, "bad arguments", os.Args)
		return 2
	}
	if os.Getenv("FAKE_LLAMA_CRASH") == "1" {
		return 1
	}
	started := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if time.Since(started) < 200*time.Millisecond {
			w.WriteHeader(http.StatusServiceUnavailable) // still loading the model
			return
		}
		fmt.Fprint(w, `{"status":"ok"}`)
	})
	srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", *port), Handler: mux}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return 1
	}
	return 0
}

// fakeOnPath puts a llama-server script that runs this test binary on PATH.
func fakeOnPath(t *testing.T, extraEnv string) string {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec env FAKE_LLAMA_SERVER=1 %s %q \"$@\"\n", extraEnv, self)
	if err := os.WriteFile(filepath.Join(dir, "llama-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	model := filepath.Join(dir, "model.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	return model
}

func TestStartAndStop(t *testing.T) {
	model := fakeOnPath(t, "")
	s, err := Start(context.Background(), Config{ModelPath: model, StartTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	health := strings.TrimSuffix(s.BaseURL, "/v1") + "/health"
	resp, err := http.Get(health)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health after start: %v", err)
	}
	resp.Body.Close()
	s.Stop()
	if _, err := http.Get(health); err == nil {
		t.Fatal("server still answering after Stop")
	}
}

func TestStartErrors(t *testing.T) {
	model := fakeOnPath(t, "")
	if _, err := Start(context.Background(), Config{Binary: "no-such-llama-server", ModelPath: model}); err == nil || !strings.Contains(err.Error(), "not found on PATH") {
		t.Fatalf("missing binary: %v", err)
	}
	if _, err := Start(context.Background(), Config{ModelPath: filepath.Join(t.TempDir(), "missing.gguf")}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing model: %v", err)
	}
	fakeOnPath(t, "FAKE_LLAMA_CRASH=1")
	if _, err := Start(context.Background(), Config{ModelPath: model, StartTimeout: 10 * time.Second}); err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("crashing server: %v", err)
	}
}
