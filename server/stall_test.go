package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// floodModel streams large deltas until its context is done, which
// cancelled reports.
type floodModel struct {
	once      sync.Once
	cancelled chan struct{}
}

func (*floodModel) ID() string { return "flood" }

func (m *floodModel) Complete(ctx context.Context, _ Prompt, out *Stream) (*Completion, error) {
	chunk := strings.Repeat("x", 32<<10)
	for ctx.Err() == nil {
		if out != nil {
			out.Text(chunk)
		}
		// Paced, so that what queues while a write waits stays small.
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
		}
	}
	m.once.Do(func() { close(m.cancelled) })
	return nil, ctx.Err()
}

// stalledClient connects to addr with a tiny receive buffer, sends request
// and never reads.
func stalledClient(t *testing.T, addr, request string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestStalledStreamStopsTheRun: a streaming client that stops reading, its
// connection left open, is dropped after WriteTimeout, and its run is
// stopped.
func TestStalledStreamStopsTheRun(t *testing.T) {
	m := &floodModel{cancelled: make(chan struct{})}
	reg := prometheus.NewRegistry()
	s, err := New(Config{Models: []Model{m}, WriteTimeout: 100 * time.Millisecond, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	host := strings.TrimPrefix(ts.URL, "http://")
	body := `{"model":"flood","stream":true,"messages":[{"role":"user","content":"go"}]}`
	stalledClient(t, host, fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body))
	select {
	case <-m.cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the run of a client that reads nothing was not stopped")
	}
	eventually(t, "the stream to end", func() bool { return gauge(t, reg, "madspark_streams_in_flight") == 0 })
}

// TestClientDisconnectCancelsPlain: a client that goes away while waiting
// for a plain (not streamed) completion cancels the run's context, so its
// model calls stop.
func TestClientDisconnectCancelsPlain(t *testing.T) {
	m := newFake("madspark-debate", "a", "b")
	m.gate, m.gateAt = make(chan struct{}), 1
	srv := newTestServer(t, "", m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(hello))
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-m.reached // the model is at work
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the request was answered although its client went away")
	}
	select {
	case <-m.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the model's context was not cancelled when the client of a plain completion went away")
	}
	eventually(t, "the request log", func() bool { return strings.Contains(srv.logs.String(), `"status":499`) })
}
