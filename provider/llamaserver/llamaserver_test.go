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
	if len(os.Args) > 1 && os.Args[1] == "--help" {
		fmt.Println("usage: llama-server [options]\n  -m, --model FNAME   model path")
		if os.Getenv("FAKE_LLAMA_NO_HF") != "1" {
			fmt.Println("  -hf, --hf-repo <user>/<model>[:quant]   Hugging Face model repository")
		}
		return 0
	}
	fs := flag.NewFlagSet("llama-server", flag.ContinueOnError)
	model := fs.String("m", "", "")
	hf := fs.String("hf-repo", "", "")
	host := fs.String("host", "", "")
	port := fs.Int("port", 0, "")
	parallel := fs.Int("parallel", 0, "")
	fs.Bool("cont-batching", false, "")
	if err := fs.Parse(os.Args[1:]); err != nil || (*model == "") == (*hf == "") || *host != "127.0.0.1" || *parallel != 3 {
		fmt.Fprintln(os.Stderr, "bad arguments", os.Args)
		return 2
	}
	if os.Getenv("FAKE_LLAMA_CRASH") == "1" {
		fmt.Fprintln(os.Stderr, "llama_model_load: loading model from", *model)
		fmt.Fprintln(os.Stderr, "gguf_init_from_file: invalid magic characters 'GGUX'")
		fmt.Fprintln(os.Stderr, "error loading model: llama_model_loader: failed to load model from", *model)
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
	_, err := Start(context.Background(), Config{ModelPath: model, StartTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready (exit status 1)") ||
		!strings.Contains(err.Error(), "error loading model: llama_model_loader: failed to load model") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("crashing server: %v", err)
	}
}

// TestHFRepo: a model to fetch is passed as --hf-repo when the installed
// llama-server knows it, and refused clearly when it does not.
func TestHFRepo(t *testing.T) {
	fakeOnPath(t, "")
	s, err := Start(context.Background(), Config{HFRepo: "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M", StartTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	fakeOnPath(t, "FAKE_LLAMA_NO_HF=1")
	if _, err := Start(context.Background(), Config{HFRepo: "ggml-org/x"}); err == nil || !strings.Contains(err.Error(), "cannot fetch models") {
		t.Fatalf("old llama-server: %v", err)
	}
	if _, err := Start(context.Background(), Config{HFRepo: "ggml-org/x", ModelPath: "m.gguf"}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("both: %v", err)
	}
}
