// Package llamaserver runs llama.cpp's llama-server as a subprocess, so that
// a user with a GGUF model file and llama-server on PATH needs no other
// set-up: the server is started on a free loopback port with one slot per
// concurrent agent and continuous batching, used through its
// OpenAI-compatible API, and stopped on exit.
package llamaserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config describes the server to start.
type Config struct {
	// Binary is the executable; default "llama-server", looked up on PATH.
	Binary string
	// ModelPath is the GGUF model file. One of ModelPath and HFRepo is
	// required.
	ModelPath string
	// HFRepo names a model for llama-server to fetch itself
	// ("USER/MODEL[:QUANT]", passed as --hf-repo), for a first run with no
	// file; the installed llama-server must support it.
	HFRepo string
	// Parallel is the number of slots (concurrent requests); default 3.
	Parallel int
	// ContextSize is the total context in tokens (-c); 0 leaves the default.
	ContextSize int
	// StartTimeout bounds the wait for the health endpoint; default 2m
	// (large models take a while to load).
	StartTimeout time.Duration
	// Log receives the server's output; nil discards it.
	Log    io.Writer
	Logger *slog.Logger
}

// Server is a running llama-server.
type Server struct {
	cmd  *exec.Cmd
	done chan error
	// tail keeps the end of the server's output, for errors.
	tail *tail
	// BaseURL is its OpenAI-compatible API, ending in /v1.
	BaseURL string
}

// Start starts llama-server and waits until it reports healthy. A missing
// binary or model file is a clear error, reported before anything starts.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Binary == "" {
		cfg.Binary = "llama-server"
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 3
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	bin, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("llama-server: %q not found on PATH; install llama.cpp or unset the model path", cfg.Binary)
	}
	var model []string
	switch {
	case cfg.ModelPath != "" && cfg.HFRepo != "":
		return nil, fmt.Errorf("llama-server: give a model file or a model to fetch (--hf-repo), not both")
	case cfg.HFRepo != "":
		if !supportsHF(ctx, bin) {
			return nil, fmt.Errorf("llama-server: the installed %s cannot fetch models (no --hf-repo in its --help); update llama.cpp or give a model file", bin)
		}
		model = []string{"--hf-repo", cfg.HFRepo}
	default:
		if st, err := os.Stat(cfg.ModelPath); err != nil || st.IsDir() {
			return nil, fmt.Errorf("llama-server: model file %q does not exist or is not a file", cfg.ModelPath)
		}
		model = []string{"-m", cfg.ModelPath}
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("llama-server: %w", err)
	}
	args := append(model, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--parallel", strconv.Itoa(cfg.Parallel), "--cont-batching")
	if cfg.ContextSize > 0 {
		args = append(args, "-c", strconv.Itoa(cfg.ContextSize))
	}
	cmd := exec.Command(bin, args...)
	t := &tail{}
	var out io.Writer = t
	if cfg.Log != nil {
		out = io.MultiWriter(t, cfg.Log)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("llama-server: start: %w", err)
	}
	s := &Server{cmd: cmd, done: make(chan error, 1), tail: t, BaseURL: fmt.Sprintf("http://127.0.0.1:%d/v1", port)}
	go func() { s.done <- cmd.Wait() }()
	cfg.Logger.Info("llama-server starting", "model", cfg.ModelPath, "hf_repo", cfg.HFRepo, "port", port, "parallel", cfg.Parallel)
	if err := s.waitHealthy(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", port), cfg.StartTimeout); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitHealthy polls the health endpoint until it answers 200, the process
// exits, or the timeout passes.
func (s *Server) waitHealthy(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("llama-server exited before it was ready (%v)%s", err, s.tail.said())
		case <-deadline.C:
			return fmt.Errorf("llama-server not healthy after %s%s", timeout, s.tail.said())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop terminates the server: SIGTERM, then SIGKILL after 5 seconds.
func (s *Server) Stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// supportsHF reports whether the llama-server at bin knows --hf-repo.
func supportsHF(ctx context.Context, bin string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	return bytes.Contains(out, []byte("--hf-repo"))
}

// tailLines is the number of the server's last output lines an error
// quotes.
const tailLines = 5

// tail keeps the last 16 KiB of what the server wrote. It is safe for
// concurrent use.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	const keep = 16 << 10
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > keep {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-keep:]...)
	}
	return len(p), nil
}

// said returns the server's last lines of output as the end of an error
// message (": error loading model: … | …"), or "" when it wrote nothing.
func (t *tail) said() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(string(t.buf), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return ": " + strings.Join(lines, " | ")
}
