package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/failure"
)

// Message is a progress message of a run, in the seed's shape: {type,
// stage, progress 0-100, message, data} with the run and the event's
// sequence number. A result message carries the run's result in data, an
// error message the error; both are final. A retry message (data: a
// RunRetry) tells that a call of the run failed with an error that may
// pass and is sent again after a pause, then how that call ended.
type Message struct {
	Type     madspark.EventType `json:"type" jsonschema:"enum=progress,enum=retry,enum=result,enum=error"`
	Seq      int64              `json:"seq"`
	RunID    string             `json:"run_id"`
	Stage    string             `json:"stage"`
	Progress int                `json:"progress" jsonschema:"minimum=0,maximum=100"`
	Message  string             `json:"message"`
	Data     json.RawMessage    `json:"data,omitempty"`
	Time     time.Time          `json:"time"`
}

// RunRetry is the data of a run's retry message: a call of the run failed
// with an error that may pass (a server error, a rate limit, a refused or
// broken connection) and is sent again after a pause; or, with ended set,
// a call that was retried ended.
type RunRetry struct {
	// Call names the call among the run's: the messages of one call share
	// it.
	Call string `json:"call"`
	// Agent is the agent that made the call, when known.
	Agent string `json:"agent,omitempty"`
	// Attempt is the attempt about to be made (2 for the first retry); for
	// an ended call, the attempts it made.
	Attempt int `json:"attempt"`
	// MaxAttempts is the most attempts the call makes.
	MaxAttempts int `json:"max_attempts"`
	// DelayMS is the pause before the attempt.
	DelayMS int64 `json:"delay_ms"`
	// Failure is what failed: the attempt before, or the call that ended
	// failed.
	Failure *failure.Failure `json:"failure,omitempty"`
	// Ended is how the call ended after its retries; empty while it is
	// retried.
	Ended string `json:"ended,omitempty" jsonschema:"enum=succeeded,enum=failed"`
}

// message is e for the client of r: an error's message in plain words,
// without addresses for a client elsewhere; a retry's data a RunRetry, its
// failure in words for that client.
func (h *Handler) message(r *http.Request, e madspark.Event) Message {
	switch e.Type {
	case madspark.EventError:
		e.Message = h.errorText(r, e.Message)
	case madspark.EventRetry:
		var d madspark.RetryData
		if json.Unmarshal(e.Data, &d) == nil {
			e.Data, _ = json.Marshal(RunRetry{Call: d.Call, Agent: d.Agent, Attempt: d.Attempt, MaxAttempts: d.MaxAttempts,
				DelayMS: d.DelayMS, Failure: h.failureOf(r, d.Error), Ended: d.Ended})
		} else {
			e.Data = nil
		}
	}
	return Message{Type: e.Type, Seq: e.Seq, RunID: e.RunID, Stage: e.Stage, Progress: min(max(e.Progress, 0), 100),
		Message: e.Message, Data: e.Data, Time: e.Time.UTC()}
}

// after reads where a client's replay starts: ?after=SEQ, else the
// Last-Event-ID header of a reconnecting EventSource, else 0 (everything).
func after(r *http.Request) (int64, error) {
	s, field := r.URL.Query().Get("after"), "after"
	if s == "" {
		s, field = strings.TrimSpace(r.Header.Get("Last-Event-ID")), "Last-Event-ID"
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, invalid(field, "%s must be a sequence number (0 or more), not %q", field, s)
	}
	return n, nil
}

// subscribe subscribes to run id's events after seq, for as long as ctx
// and the Handler last.
func (h *Handler) subscribe(ctx context.Context, id string, seq int64) (<-chan madspark.Event, context.CancelFunc, error) {
	seq, err := h.currentAttempt(ctx, id, seq)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.base, cancel)
	ch, err := h.cfg.Events.Subscribe(ctx, id, seq)
	if err != nil {
		stop()
		cancel()
		if errors.Is(err, madspark.ErrNotFound) {
			return nil, nil, notFound("no run %s", id)
		}
		return nil, nil, err
	}
	return ch, func() { stop(); cancel() }, nil
}

// currentAttempt returns where to follow run id from, given after: past
// the final events of earlier attempts when the run was resumed since, so
// that the stream follows the run's last attempt (the one under way, or
// the one that ended it) instead of ending with one that failed or was
// interrupted.
func (h *Handler) currentAttempt(ctx context.Context, id string, after int64) (int64, error) {
	rec, err := h.cfg.Store.Run(ctx, id)
	if errors.Is(err, madspark.ErrNotFound) {
		return 0, notFound("no run %s", id)
	}
	if err != nil {
		return 0, err
	}
	var finals []int64
	for cursor := after; ; {
		evs, err := h.cfg.Store.Events(ctx, id, cursor, 1000)
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			if e.Final() {
				finals = append(finals, e.Seq)
			}
		}
		if len(evs) < 1000 {
			break
		}
		cursor = evs[len(evs)-1].Seq
	}
	// A run that is over keeps its last final event: it is the outcome.
	if rec.Status != madspark.RunQueued && rec.Status != madspark.RunRunning && len(finals) > 0 {
		finals = finals[:len(finals)-1]
	}
	if len(finals) > 0 {
		return finals[len(finals)-1], nil
	}
	return after, nil
}

// runEvents streams a run's progress as server-sent events: "id: SEQ",
// "event: TYPE", "data: MESSAGE", until the final message.
func (h *Handler) runEvents(w http.ResponseWriter, r *http.Request) error {
	seq, err := after(r)
	if err != nil {
		return err
	}
	ch, stop, err := h.subscribe(r.Context(), r.PathValue("id"), seq)
	if err != nil {
		return err
	}
	defer stop()
	rc := http.NewResponseController(w)
	// A client that stops reading must not hold the stream and the run's
	// subscription: each write has WriteTimeout, after which the
	// connection is dropped. A stream that ends well leaves no deadline
	// on the connection, which may serve another request.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	send := func(s string) error {
		_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout))
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		return rc.Flush()
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no") // proxies: do not hold the stream back
	w.WriteHeader(http.StatusOK)
	// An EventSource that loses the stream reconnects after this many
	// milliseconds, sending the last id it saw.
	if err := send("retry: 2000\n\n"); err != nil {
		return nil
	}
	beat := time.NewTicker(h.cfg.Heartbeat)
	defer beat.Stop()
	var buf strings.Builder
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return nil
			}
			data, err := json.Marshal(h.message(r, e))
			if err != nil {
				return nil
			}
			buf.Reset()
			if e.Seq > 0 {
				fmt.Fprintf(&buf, "id: %d\n", e.Seq)
			}
			fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", e.Type, data)
			if err := send(buf.String()); err != nil {
				return nil // the client went away, or stopped reading
			}
			if e.Final() {
				return nil
			}
		case <-beat.C:
			if err := send(": keep-alive\n\n"); err != nil {
				return nil
			}
		}
	}
}

// runWebSocket sends a run's progress messages as text frames, then closes
// the socket normally after the final one.
func (h *Handler) runWebSocket(w http.ResponseWriter, r *http.Request) error {
	seq, err := after(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	// The run is looked up before the upgrade, so that a missing one is
	// an ordinary 404.
	if _, err := h.loadRun(r.Context(), id); err != nil {
		return err
	}
	patterns := make([]string, 0, len(h.cfg.AllowedOrigins))
	for _, o := range h.cfg.AllowedOrigins {
		host, _ := originHost(o)
		patterns = append(patterns, host)
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: patterns})
	if err != nil {
		return nil // Accept answered the client
	}
	defer conn.CloseNow()
	// The client sends nothing; reading handles its pings and its close.
	ctx := conn.CloseRead(r.Context())
	ch, stop, err := h.subscribe(ctx, id, seq)
	if err != nil {
		_ = conn.Close(websocket.StatusInternalError, "could not follow the run")
		return nil
	}
	defer stop()
	beat := time.NewTicker(h.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				if ctx.Err() == nil {
					_ = conn.Close(websocket.StatusGoingAway, "server stopping; reconnect with ?after=SEQ")
				}
				return nil
			}
			data, err := json.Marshal(h.message(r, e))
			if err != nil {
				return nil
			}
			wctx, cancel := context.WithTimeout(ctx, h.cfg.WriteTimeout)
			err = conn.Write(wctx, websocket.MessageText, data)
			cancel()
			if err != nil {
				return nil
			}
			if e.Final() {
				_ = conn.Close(websocket.StatusNormalClosure, "run finished")
				return nil
			}
		case <-beat.C:
			pctx, cancel := context.WithTimeout(ctx, h.cfg.WriteTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return nil
			}
		}
	}
}

// originHost returns the host[:port] of an origin such as
// https://ui.example.org:8443, as the WebSocket origin check compares it.
func originHost(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", errors.New("want scheme://host[:port], such as https://ui.example.org")
	}
	return u.Host, nil
}
