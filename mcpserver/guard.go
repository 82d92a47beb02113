package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/madspark/madspark"
)

// What keeps MCP over HTTP as safe as /v1: what ends a session or a
// connection stops its tool calls, the sessions are bounded, and so are
// the bodies (the checks of hosts, origins, tokens and the rate limit are
// the HTTP server's, around Handler).

// Why a tool call was stopped, as the cause of its context.
var (
	// errSessionEnded: the client ended its session (DELETE).
	errSessionEnded = errors.New("the MCP client ended its session")
	// errClientGone: the connection the call was made on closed before
	// its answer; without an event store the client cannot resume the
	// stream, so nobody would read the answer.
	errClientGone = errors.New("the MCP client closed the connection")
	// errServerStopped: the server is stopping (Close); a run it stops
	// is interrupted, not cancelled.
	errServerStopped = fmt.Errorf("%w: the server stopped", madspark.ErrInterrupted)
)

// MaxBodyBytes bounds the body of an MCP request over HTTP, as the REST
// API and /v1 bound theirs.
const MaxBodyBytes = 1 << 20

// Defaults of Config.
const (
	// DefaultMaxSessions is how many MCP sessions over HTTP are kept at
	// once when Config.MaxSessions is zero.
	DefaultMaxSessions = 100
	// DefaultSessionIdle is how long a session may go without a request
	// before it is forgotten, when Config.SessionIdle is zero.
	DefaultSessionIdle = 10 * time.Minute
)

// calls are the tool calls in progress, by session, so that what ends a
// session (DELETE, the server stopping) stops them, and Close can wait for
// their runs to be recorded.
type calls struct {
	mu      sync.Mutex
	bySess  map[string]map[*callEntry]bool
	stopped bool
	wg      sync.WaitGroup
}

type callEntry struct {
	session string
	cancel  context.CancelCauseFunc
}

// start registers a call of session, stopped with cancel; false when the
// server is stopping.
func (c *calls) start(session string, cancel context.CancelCauseFunc) (*callEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, false
	}
	if c.bySess == nil {
		c.bySess = map[string]map[*callEntry]bool{}
	}
	e := &callEntry{session: session, cancel: cancel}
	if c.bySess[session] == nil {
		c.bySess[session] = map[*callEntry]bool{}
	}
	c.bySess[session][e] = true
	c.wg.Add(1)
	return e, true
}

// end unregisters e, once its run is recorded.
func (c *calls) end(e *callEntry) {
	c.mu.Lock()
	delete(c.bySess[e.session], e)
	if len(c.bySess[e.session]) == 0 {
		delete(c.bySess, e.session)
	}
	c.mu.Unlock()
	c.wg.Done()
}

// stopSession stops the calls of session with cause.
func (c *calls) stopSession(session string, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := range c.bySess[session] {
		e.cancel(cause)
	}
}

// stopAll stops every call with cause, and refuses new ones.
func (c *calls) stopAll(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for _, es := range c.bySess {
		for e := range es {
			e.cancel(cause)
		}
	}
}

// wait waits up to d for the calls to end.
func (c *calls) wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// sessions tracks the MCP sessions over HTTP: when each was last asked
// something, and how many of its POST requests are in progress (a tool
// call's, whose answer is streamed), so that the least recently used idle
// one makes room for a new one. A GET stream, which clients keep open for
// the server's notifications, does not make a session busy.
type sessions struct {
	mu   sync.Mutex
	seen map[string]time.Time
	busy map[string]int
}

// touch records a request of session id; busy, one that is in progress
// until done.
func (t *sessions) touch(id string, busy bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen, t.busy = map[string]time.Time{}, map[string]int{}
	}
	t.seen[id] = time.Now()
	if busy {
		t.busy[id]++
	}
}

// done records the end of a busy request of session id.
func (t *sessions) done(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[id] = time.Now()
	if t.busy[id]--; t.busy[id] <= 0 {
		delete(t.busy, id)
	}
}

// room makes room for a new session among live, at most max: it closes
// the least recently used session that has no request in progress when
// max are live, and reports false when every one is busy.
func (t *sessions) room(live []*mcp.ServerSession, max int) bool {
	if len(live) < max {
		return true
	}
	t.mu.Lock()
	var oldest *mcp.ServerSession
	var when time.Time
	alive := map[string]bool{}
	for _, ss := range live {
		id := ss.ID()
		alive[id] = true
		if t.busy[id] > 0 {
			continue
		}
		if seen := t.seen[id]; oldest == nil || seen.Before(when) {
			oldest, when = ss, seen
		}
	}
	// Forget the sessions that ended.
	for id := range t.seen {
		if !alive[id] && t.busy[id] == 0 {
			delete(t.seen, id)
		}
	}
	t.mu.Unlock()
	if oldest == nil {
		return false
	}
	_ = oldest.Close()
	return true
}

// callHeader carries, from Handler to a tool call, the key of the HTTP
// request the call came in: the SDK hands a call the request's header,
// not its context. A client's own value is replaced.
const callHeader = "X-Madspark-Call"

// requests are the contexts of the HTTP requests in progress, by the key
// Handler put in their callHeader.
type requests struct{ m sync.Map }

func (rq *requests) add(r *http.Request) func() {
	key := rand.Text()
	r.Header.Set(callHeader, key)
	rq.m.Store(key, r.Context())
	return func() { rq.m.Delete(key) }
}

// of returns the context of the HTTP request a call came in, or nil (over
// standard input and output, or a request that has ended).
func (rq *requests) of(req *mcp.CallToolRequest) context.Context {
	if req.Extra == nil || req.Extra.Header == nil {
		return nil
	}
	ctx, ok := rq.m.Load(req.Extra.Header.Get(callHeader))
	if !ok {
		return nil
	}
	return ctx.(context.Context)
}

// guard wraps the SDK's Streamable HTTP handler: it bounds the sessions,
// stops a session's calls when the client ends it (DELETE), and gives each
// call the context of the request it came in, so that a dropped
// connection stops it.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		r.Header.Del(callHeader)
		switch {
		case id == "" && r.Method == http.MethodPost:
			// A new session.
			var live []*mcp.ServerSession
			for ss := range s.mcp.Sessions() {
				if ss.ID() != "" {
					live = append(live, ss)
				}
			}
			if !s.sessions.room(live, s.cfg.MaxSessions) {
				w.Header().Set("Retry-After", "5")
				writeRPCError(w, http.StatusServiceUnavailable, fmt.Sprintf(
					"too many MCP sessions: %d are open and busy, the most this server keeps; end one (DELETE /mcp) or retry shortly", len(live)))
				return
			}
			w = &sessionStart{ResponseWriter: w, sessions: &s.sessions}
		case id != "":
			busy := r.Method == http.MethodPost
			s.sessions.touch(id, busy)
			if busy {
				defer s.sessions.done(id)
			}
			if r.Method == http.MethodDelete {
				// The SDK closes a session once its calls have returned:
				// they are stopped first.
				s.calls.stopSession(id, errSessionEnded)
			}
		}
		if r.Method == http.MethodPost {
			defer s.requests.add(r)()
		}
		h.ServeHTTP(w, r)
	})
}

// sessionStart records the session that a response creates.
type sessionStart struct {
	http.ResponseWriter
	sessions *sessions
	once     sync.Once
}

func (w *sessionStart) record() {
	w.once.Do(func() {
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			w.sessions.touch(id, false)
		}
	})
}

func (w *sessionStart) WriteHeader(code int) {
	w.record()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionStart) Write(b []byte) (int, error) {
	w.record()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the stream.
func (w *sessionStart) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeRPCError answers with a JSON-RPC error without an ID, for a
// request refused before it reached the protocol.
func writeRPCError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32000, "message": msg}})
}
