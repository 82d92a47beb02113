package api_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
)

// floodEvents is an event hub whose runs never end: a subscription gets
// large progress events as fast as they are taken, until its context is
// done, which released reports.
type floodEvents struct {
	once     sync.Once
	released chan struct{}
}

func (f *floodEvents) Subscribe(ctx context.Context, runID string, _ int64) (<-chan madspark.Event, error) {
	ch := make(chan madspark.Event)
	big := strings.Repeat("x", 64<<10)
	go func() {
		defer close(ch)
		defer f.once.Do(func() { close(f.released) })
		for seq := int64(1); ; seq++ {
			select {
			case ch <- madspark.Event{RunID: runID, Seq: seq, Type: madspark.EventProgress, Stage: "s", Message: big, Time: time.Now()}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
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

// TestStalledClientReleased: a progress stream whose client stops reading
// ends, and gives up its subscription, once a write has waited
// WriteTimeout; over SSE and over the WebSocket.
func TestStalledClientReleased(t *testing.T) {
	for _, path := range []string{"/api/runs/%s/events", "/ws/runs/%s"} {
		t.Run(strings.Split(path, "/")[1], func(t *testing.T) {
			flood := &floodEvents{released: make(chan struct{})}
			hs := newHarness(t, options{config: func(c *api.Config) {
				c.Events, c.WriteTimeout, c.Heartbeat = flood, 100*time.Millisecond, time.Hour
			}})
			id := hs.startRun("spark", map[string]any{"topic": "x"}) // queued: no worker
			host := strings.TrimPrefix(hs.url, "http://")
			req := fmt.Sprintf("GET "+path+" HTTP/1.1\r\nHost: %s\r\n", id, host)
			if strings.HasPrefix(path, "/ws/") {
				req += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
			}
			stalledClient(t, host, req+"\r\n")
			select {
			case <-flood.released:
			case <-time.After(20 * time.Second):
				t.Fatal("the stream of a client that reads nothing still holds its subscription")
			}
		})
	}
}
