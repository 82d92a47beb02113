// Package llamaserver runs llama.cpp's llama-server as a subprocess, so that
// a user with a GGUF model file and llama-server on PATH needs no other
// set-up: the server is started on a free loopback port with one slot per
// concurrent agent and continuous batching, used through its
// OpenAI-compatible API, and stopped on exit.
package llamaserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Config describes the server to start.
type Config struct {
	// Binary is the executable; default "llama-server", looked up on PATH.
	Binary string
	// ModelPath is the GGUF model file. Required.
	ModelPath string
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
	if st, err := os.Stat(cfg.ModelPath); err != nil || st.IsDir() {
		return nil, fmt.Errorf("llama-server: model file %q does not exist or is not a file", cfg.ModelPath)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("llama-server: %w", err)
	}
	args := []string{"-m", cfg.ModelPath, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--parallel", strconv.Itoa(cfg.Parallel), "--cont-batching"}
	if cfg.ContextSize > 0 {
		args = append(args, "-c", strconv.Itoa(cfg.ContextSize))
	}
	cmd := exec.Command(bin, args...)
	if cfg.Log != nil {
		cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("llama-server: start: %w", err)
	}
	s := &Server{cmd: cmd, done: make(chan error, 1), BaseURL: fmt.Sprintf("http://127.0.0.1:%d/v1", port)}
	go func() { s.done <- cmd.Wait() }()
	cfg.Logger.Info("llama-server starting", "model", cfg.ModelPath, "port", port, "parallel", cfg.Parallel)
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
			return fmt.Errorf("llama-server exited before it was ready: %v", err)
		case <-deadline.C:
			return fmt.Errorf("llama-server not healthy after %s", timeout)
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
