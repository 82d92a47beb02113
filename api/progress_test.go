package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/madspark/madspark/api"
)

// sse reads a run's event stream until it ends, and returns its messages
// with the SSE ids and event names they came with.
type sseEvent struct {
	id, event string
	msg       api.Message
}

func (hs *harness) sse(ctx context.Context, path string, header ...string) ([]sseEvent, int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", hs.url+path, nil)
	if err != nil {
		return nil, 0, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return nil, res.StatusCode, nil
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		return nil, res.StatusCode, fmt.Errorf("content type %q", ct)
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
				received(ctx)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.msg); err != nil {
				return out, 200, fmt.Errorf("data %q: %w", line, err)
			}
		}
	}
	return out, 200, sc.Err()
}

// checkStream checks the messages of one run's stream: all of run id,
// consecutive from after+1, ending with the final message, nothing after.
func (hs *harness) checkStream(t *testing.T, who, id string, msgs []api.Message, after int64) {
	t.Helper()
	if len(msgs) == 0 {
		t.Fatalf("%s: no messages", who)
	}
	schema := hs.doc.Components.Schemas["Message"].Value
	for i, m := range msgs {
		// Each message as the document describes it.
		raw, _ := json.Marshal(m)
		var v any
		_ = json.Unmarshal(raw, &v)
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Fatalf("%s: message %d does not match the documented Message: %v", who, i, err)
		}
		if m.RunID != id {
			t.Fatalf("%s: message %d is of run %s, not %s: %+v", who, i, m.RunID, id, m)
		}
		if m.Seq != after+int64(i)+1 {
			t.Fatalf("%s: message %d has seq %d, want %d", who, i, m.Seq, after+int64(i)+1)
		}
		final := m.Type == "result" || m.Type == "error"
		if final != (i == len(msgs)-1) {
			t.Fatalf("%s: message %d (%s) of %d: the final message must be last", who, i, m.Type, len(msgs))
		}
	}
	last := msgs[len(msgs)-1]
	if last.Type != "result" || last.Progress != 100 || !strings.Contains(string(last.Data), "candidates") {
		t.Errorf("%s: last message %+v", who, last)
	}
}

// TestSSE: two clients following two runs at once each see only their own
// run's progress; a client that connects after the run finished receives
// everything it missed; Last-Event-ID and ?after= resume.
func TestSSE(t *testing.T) {
	hs := newHarness(t, options{workers: 2, latency: 40 * time.Millisecond})
	ids := []string{hs.startRun("spark", map[string]any{"topic": "first topic"}), hs.startRun("spark", map[string]any{"topic": "second topic"})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	got := make([][]sseEvent, 2)
	errs := make([]error, 2)
	for i, id := range ids {
		wg.Go(func() { got[i], _, errs[i] = hs.sse(ctx, "/api/runs/"+id+"/events") })
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		var msgs []api.Message
		for _, e := range got[i] {
			if e.id != strconv.FormatInt(e.msg.Seq, 10) || e.event != string(e.msg.Type) {
				t.Errorf("client %d: SSE id %q / event %q for message %+v", i, e.id, e.event, e.msg)
			}
			msgs = append(msgs, e.msg)
		}
		hs.checkStream(t, fmt.Sprintf("client %d", i), id, msgs, 0)
		var stages []string
		for _, m := range msgs {
			stages = append(stages, m.Stage)
		}
		// "queued" comes first, unless a worker took the job before the
		// run was recorded (it then records the run itself, already
		// under way).
		if s := strings.Join(stages, ","); !strings.Contains(s, "generate,evaluate,advocate,improve,re_evaluate") ||
			slices.Contains(stages, "queued") && stages[0] != "queued" {
			t.Errorf("client %d stages: %s", i, s)
		}
	}
	// A late client: the run is over; it gets every event, then the end.
	late, _, err := hs.sse(ctx, "/api/runs/"+ids[0]+"/events")
	if err != nil || len(late) != len(got[0]) {
		t.Fatalf("late client: %d events (%v), the first client had %d", len(late), err, len(got[0]))
	}
	// A reconnecting client: only what came after the last id it saw.
	for _, how := range [][]string{{"Last-Event-ID", "3"}, nil} {
		path := "/api/runs/" + ids[0] + "/events"
		if how == nil {
			path += "?after=3"
		}
		resumed, _, err := hs.sse(ctx, path, how...)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []api.Message
		for _, e := range resumed {
			msgs = append(msgs, e.msg)
		}
		hs.checkStream(t, "resumed "+path, ids[0], msgs, 3)
	}
	for q, status := range map[string]int{"?after=-1": 400, "?after=x": 400} {
		if r := hs.do("GET", "/api/runs/"+ids[0]+"/events"+q, nil); r.status != status || r.err(t).Error.Field != "after" {
			t.Errorf("events%s: %d %s", q, r.status, r.body)
		}
	}
	if r := hs.do("GET", "/api/runs/"+ids[0]+"/events", nil, "Last-Event-ID", "abc"); r.status != 400 || r.err(t).Error.Field != "Last-Event-ID" {
		t.Errorf("Last-Event-ID abc: %d %s", r.status, r.body)
	}
	// The documented answer of a finished run's stream.
	if r := hs.do("GET", "/api/runs/"+ids[1]+"/events", nil); r.status != 200 || !strings.Contains(string(r.body), "event: result") {
		t.Errorf("events of a finished run: %d %s", r.status, clip(r.body))
	}
}

// wsRead reads a run's progress over a WebSocket until the server closes
// it, and returns the messages and the close status.
func (hs *harness) ws(ctx context.Context, path string, origin string) ([]api.Message, websocket.StatusCode, error) {
	opts := &websocket.DialOptions{}
	if origin != "" {
		opts.HTTPHeader = http.Header{"Origin": {origin}}
	}
	if hs.token != "" {
		if opts.HTTPHeader == nil {
			opts.HTTPHeader = http.Header{}
		}
		opts.HTTPHeader.Set("Authorization", "Bearer "+hs.token)
	}
	conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.url, "http")+path, opts)
	if err != nil {
		if res != nil {
			return nil, websocket.StatusCode(res.StatusCode), err
		}
		return nil, 0, err
	}
	defer conn.CloseNow()
	var out []api.Message
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return out, websocket.CloseStatus(err), nil
		}
		if typ != websocket.MessageText {
			return out, 0, errors.New("a binary frame")
		}
		var m api.Message
		if err := json.Unmarshal(data, &m); err != nil {
			return out, 0, err
		}
		out = append(out, m)
		received(ctx)
	}
}

type onMessageKey struct{}

// onMessage returns ctx with fn, which sse and ws call with each message
// they receive.
func onMessage(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, onMessageKey{}, fn)
}

func received(ctx context.Context) {
	if fn, ok := ctx.Value(onMessageKey{}).(func()); ok {
		fn()
	}
}

// TestWebSocket: as TestSSE, over WebSockets: two clients on two runs see
// only their own run; the socket closes normally after the final message;
// a late client receives what it missed; ?after= resumes.
func TestWebSocket(t *testing.T) {
	hs := newHarness(t, options{workers: 2, latency: 40 * time.Millisecond, origins: []string{"https://ui.example.org"}})
	ids := []string{hs.startRun("spark", map[string]any{"topic": "first topic"}), hs.startRun("spark", map[string]any{"topic": "second topic"})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	got := make([][]api.Message, 2)
	codes := make([]websocket.StatusCode, 2)
	errs := make([]error, 2)
	for i, id := range ids {
		wg.Go(func() { got[i], codes[i], errs[i] = hs.ws(ctx, "/ws/runs/"+id, "") })
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil || codes[i] != websocket.StatusNormalClosure {
			t.Fatalf("client %d: %v, close status %v", i, errs[i], codes[i])
		}
		hs.checkStream(t, fmt.Sprintf("ws client %d", i), id, got[i], 0)
	}
	// A client that joins in the middle of a run: first what it missed,
	// then the rest live.
	mid := hs.startRun("spark", map[string]any{"topic": "third topic"})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if p := hs.run(mid).Progress; p != nil && p.Stage == "evaluate" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the third run did not reach evaluate")
		}
	}
	msgs, code, err := hs.ws(ctx, "/ws/runs/"+mid, "")
	if err != nil || code != websocket.StatusNormalClosure {
		t.Fatalf("mid-run client: %v %v", err, code)
	}
	hs.checkStream(t, "mid-run ws client", mid, msgs, 0)
	if len(msgs) < 7 || msgs[0].Stage != "queued" {
		t.Errorf("mid-run client got %d messages starting with %q", len(msgs), msgs[0].Stage)
	}
	late, code, err := hs.ws(ctx, "/ws/runs/"+ids[1], "")
	if err != nil || code != websocket.StatusNormalClosure || len(late) != len(got[1]) {
		t.Fatalf("late client: %d messages (%v, %v), want %d", len(late), err, code, len(got[1]))
	}
	resumed, _, err := hs.ws(ctx, "/ws/runs/"+ids[1]+"?after=2", "")
	if err != nil {
		t.Fatal(err)
	}
	hs.checkStream(t, "ws ?after=2", ids[1], resumed, 2)
	// Pages of an allowed origin may follow a run; others may not.
	if msgs, _, err := hs.ws(ctx, "/ws/runs/"+ids[0], "https://ui.example.org"); err != nil || len(msgs) == 0 {
		t.Errorf("allowed origin: %d messages, %v", len(msgs), err)
	}
	if _, code, err := hs.ws(ctx, "/ws/runs/"+ids[0], "https://evil.example"); err == nil || code != http.StatusForbidden {
		t.Errorf("other origin: %v, status %d", err, code)
	}
	if r := hs.do("GET", "/ws/runs/"+ids[0], nil); r.status != http.StatusUpgradeRequired {
		t.Errorf("plain GET of the WebSocket: %d %s", r.status, r.body)
	}
}

// TestStreamsEndWhenTheServerStops: Close ends the streams of runs still
// going, so that the server can stop; the clients resume elsewhere.
func TestStreamsEndWhenTheServerStops(t *testing.T) {
	hs := newHarness(t, options{})
	id := hs.startRun("spark", map[string]any{"topic": "x"}) // no worker: it stays queued
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		n    int
		code websocket.StatusCode
	}
	sseDone, wsDone := make(chan int, 1), make(chan result, 1)
	// Each client gets the queued event; then the server stops.
	first := make(chan struct{}, 2)
	var sseOnce, wsOnce sync.Once
	sctx := onMessage(ctx, func() { sseOnce.Do(func() { first <- struct{}{} }) })
	wctx := onMessage(ctx, func() { wsOnce.Do(func() { first <- struct{}{} }) })
	go func() { evs, _, _ := hs.sse(sctx, "/api/runs/"+id+"/events"); sseDone <- len(evs) }()
	go func() { msgs, code, _ := hs.ws(wctx, "/ws/runs/"+id, ""); wsDone <- result{len(msgs), code} }()
	for range 2 {
		select {
		case <-first:
		case <-ctx.Done():
			t.Fatal("the clients did not get the queued event")
		}
	}
	hs.h.Close()
	select {
	case n := <-sseDone:
		if n != 1 {
			t.Errorf("SSE client got %d events before the end, want the queued one", n)
		}
	case <-ctx.Done():
		t.Fatal("the SSE stream did not end")
	}
	select {
	case r := <-wsDone:
		if r.n != 1 || r.code != websocket.StatusGoingAway {
			t.Errorf("WebSocket client: %d messages, close %v; want 1 and going away", r.n, r.code)
		}
	case <-ctx.Done():
		t.Fatal("the WebSocket did not close")
	}
}
