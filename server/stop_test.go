package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark"
)

// recordingModel holds each answer until its context ends, then takes a
// while to record the run, as a Model's run.Finish does.
type recordingModel struct {
	started  chan struct{}
	cause    atomic.Value // error: StopCause when the answer stopped
	recorded atomic.Bool
}

func (m *recordingModel) ID() string { return "madspark-direct" }

func (m *recordingModel) Complete(ctx context.Context, _ Prompt, _ *Stream) (*Completion, error) {
	close(m.started)
	<-ctx.Done()
	if c := StopCause(ctx); c != nil {
		m.cause.Store(c)
	}
	time.Sleep(100 * time.Millisecond) // recording the run
	m.recorded.Store(true)
	return nil, ctx.Err()
}

// TestServeStopInterruptsRequests: when the server stops, a request still
// in progress after the drain has its context cancelled with ErrStopped
// (an interruption, not its client going away), and Serve returns only
// once its model has returned, so that its run is recorded first.
func TestServeStopInterruptsRequests(t *testing.T) {
	m := &recordingModel{started: make(chan struct{})}
	s, err := New(Config{Models: []Model{m}, DrainTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"madspark-direct","messages":[{"role":"user","content":"hi"}]}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-m.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach its model")
	}
	stop()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "were stopped") {
			t.Errorf("Serve = %v, want the drain's end reported", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !m.recorded.Load() {
		t.Error("Serve returned before the model had recorded its run")
	}
	cause, _ := m.cause.Load().(error)
	if !errors.Is(cause, ErrStopped) || !errors.Is(cause, madspark.ErrInterrupted) {
		t.Errorf("the stopped request's cause is %v, want ErrStopped", cause)
	}
}

// TestStopCause: a context cancelled by its client, or past its deadline,
// is no interruption.
func TestStopCause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if StopCause(ctx) != nil {
		t.Error("a live context")
	}
	cancel()
	if StopCause(ctx) != nil {
		t.Error("a context its client cancelled")
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer dcancel()
	<-dctx.Done()
	if StopCause(dctx) != nil {
		t.Error("a context past its deadline")
	}
	sctx, scancel := context.WithCancelCause(context.Background())
	scancel(ErrStopped)
	if !errors.Is(StopCause(sctx), ErrStopped) {
		t.Error("a context the server stopped")
	}
}
