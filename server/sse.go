package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// sseWriter sends server-sent events from any goroutine. The goroutine
// that sends an event while no write is in progress writes it (and
// flushes) at once, itself: a model's tokens go out from the goroutine
// that reads them, with no hand-over to another goroutine per token.
// Events sent while a write is in progress queue, and the writing
// goroutine sends them together in its next write before it returns, so
// a fast model does not cost one system call per token.
//
// Each write has a deadline, timeout (7/8 of it at least: the deadline is
// not moved on for every token): a client that stops reading (without
// closing its connection) fails the write, after which onErr is called
// once, so that the answer's run can be stopped, and later events are
// dropped instead of queued.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	onErr   func()

	mu      sync.Mutex
	pending []byte
	spare   []byte
	writing bool // a goroutine is writing
	// deadline is the write deadline set last; only the writing
	// goroutine touches it.
	deadline time.Time
	idle     *sync.Cond // broadcast when it stops
	closed   bool
	failed   bool
	err      error
}

func newSSEWriter(w http.ResponseWriter, timeout time.Duration, onErr func()) *sseWriter {
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout, onErr: onErr}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// queue queues frames, to be written with what is sent next (or at
// close): the frames that open a stream go out with its first content,
// in one write.
func (s *sseWriter) queue(frames []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.failed {
		return
	}
	s.pending = append(s.pending, frames...)
}

// send writes frames, whole events ("data: ...\n\n"), or queues them
// for the goroutine that is writing.
func (s *sseWriter) send(frames []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.failed {
		return
	}
	s.pending = append(s.pending, frames...)
	if !s.writing {
		s.drain()
	}
}

// drain writes what is pending until nothing is, or a write fails. It is
// called with s.mu held, which it releases while it writes.
func (s *sseWriter) drain() {
	s.writing = true
	defer s.idle.Broadcast()
	for len(s.pending) > 0 && !s.failed {
		// Take pending and give senders the spare buffer; while buf is
		// being written, neither pending nor spare shares its array.
		buf := s.pending
		s.pending, s.spare = s.spare[:0], nil
		s.mu.Unlock()
		// A writer that cannot take deadlines (ErrNotSupported) is
		// written without. The deadline is moved on when less than
		// 7/8 of the timeout is left of it, not for every write (a
		// token's): each write has 7/8 of the timeout at least.
		if now := time.Now(); s.deadline.Sub(now) < s.timeout-s.timeout/8 {
			s.deadline = now.Add(s.timeout)
			_ = s.rc.SetWriteDeadline(s.deadline)
		}
		_, err := s.w.Write(buf)
		if err == nil {
			err = s.rc.Flush()
		}
		s.mu.Lock()
		s.spare = buf[:0]
		if err != nil && !s.failed {
			s.failed, s.err = true, err
			s.pending = nil
			if s.onErr != nil {
				s.onErr()
			}
		}
	}
	s.writing = false
}

// close sends what is queued and stops the writer; nothing is written
// after it returns, and events sent later, from any goroutine, are
// dropped. It may be called more than once. It leaves no write deadline
// on a connection that may serve another request.
func (s *sseWriter) close() {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	if first && !s.writing {
		s.drain()
	}
	for s.writing {
		s.idle.Wait()
	}
	failed := s.failed
	s.mu.Unlock()
	if first && !failed {
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
}

// appendData appends the frame "data: payload\n\n" to b.
func appendData(b, payload []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, payload...)
	return append(b, "\n\n"...)
}

// chunker encodes chat.completion.chunk frames for one stream from a
// prefix computed once.
type chunker struct {
	id, model string
	created   int64
	prefix    []byte // the frame up to the delta's content value
}

func newChunker(id string, created int64, model string) *chunker {
	p := `data: {"id":` + string(appendJSONString(nil, id)) + `,"object":"chat.completion.chunk","created":` + strconv.FormatInt(created, 10) +
		`,"model":` + string(appendJSONString(nil, model)) + `,"choices":[{"index":0,"delta":`
	return &chunker{id: id, model: model, created: created, prefix: []byte(p)}
}

// content encodes a delta carrying text.
func (c *chunker) content(text string) []byte { return c.field(`{"content":`, text) }

// reasoningContent encodes a delta carrying reasoning.
func (c *chunker) reasoningContent(text string) []byte { return c.field(`{"reasoning_content":`, text) }

// field encodes a delta of one member, opened by key, with text as its
// value.
func (c *chunker) field(key, text string) []byte {
	b := make([]byte, 0, len(c.prefix)+len(key)+len(text)+37)
	b = append(b, c.prefix...)
	b = append(b, key...)
	b = appendJSONString(b, text)
	return append(b, "},\"finish_reason\":null}]}\n\n"...)
}

// delta encodes a chunk with a delta object and a finish reason ("" for
// null).
func (c *chunker) delta(delta string, finish string) []byte {
	b := append([]byte(nil), c.prefix...)
	b = append(b, delta...)
	if finish == "" {
		return append(b, ",\"finish_reason\":null}]}\n\n"...)
	}
	b = append(b, `,"finish_reason":`...)
	b = appendJSONString(b, finish)
	return append(b, "}]}\n\n"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
