package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// The answering core: both OpenAI APIs (chat.go, responses.go) read a
// request into an exchange, and the core does the rest, the same for
// both:
//
//	read the body → the API decodes it → the model named, and the
//	settings it applies → admission → the model answers → the API's
//	JSON body, or its server-sent events as the model writes
//
// Until the first byte of an answer is sent, a failure is answered with
// its own status in OpenAI's error shape (errors.go); after it, the API's
// stream carries it.

// exchange is a request of one of the OpenAI APIs, decoded: what is asked
// of which model, and how the answer is written.
type exchange struct {
	// name is the model the client asked for.
	name   string
	prompt Prompt
	// given are the settings the request gives, which the model must
	// apply.
	given  given
	stream bool
	// wire writes the answer in the API's format.
	wire wire
}

// wire is one API's side of an answer: its encoding.
type wire interface {
	// body is the whole answer of a request that does not stream.
	body(c *Completion) any
	// events encodes the answer of a request that streams.
	events() eventStream
}

// eventStream encodes the server-sent events of one streamed answer in an
// API's format; each method returns whole frames ("data: ...\n\n").
type eventStream interface {
	// open returns the frames that start the stream, sent with its first
	// text or reasoning.
	open() []byte
	// reasoning returns the frame of a piece of the model's account of
	// its work, which comes before the answer.
	reasoning(delta string) []byte
	// text returns the frame of a piece of the answer.
	text(delta string) []byte
	// done returns the frames that end the stream of a completed answer.
	done(c *Completion) []byte
	// failed returns the frame that ends the stream of an answer that
	// failed after the stream started.
	failed(err error) []byte
}

// decoder reads a request body of one API into an exchange. It returns the
// exchange, as far as it was read, with an error too, so that the request
// log names the model and whether it streams.
type decoder func(body []byte) (*exchange, error)

// api returns the handler of an OpenAI API whose requests decode reads.
func (s *Server) api(decode decoder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		x, m, err := s.read(w, r, decode)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		if x.stream {
			s.answerStream(w, r, m, x)
			return
		}
		s.answer(w, r, m, x)
	}
}

// read reads, decodes and checks a request: the model it names must be
// served and apply the settings it gives.
func (s *Server) read(w http.ResponseWriter, r *http.Request, decode decoder) (*exchange, Model, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, nil, err
	}
	x, err := decode(body)
	if x != nil {
		info := infoOf(r.Context())
		info.model, info.stream, info.given = x.name, x.stream, x.given
	}
	if err != nil {
		return nil, nil, err
	}
	m, ok := s.models[x.name]
	if !ok {
		return nil, nil, modelNotFound(x.name, s.order)
	}
	if err := x.given.check(m); err != nil {
		return nil, nil, err
	}
	return x, m, nil
}

// readBody reads a request's body, bounded by Config.MaxBodyBytes, and
// checks that it is UTF-8.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &requestError{status: http.StatusRequestEntityTooLarge, code: "request_too_large",
				msg: fmt.Sprintf("request body is larger than %d bytes", s.cfg.MaxBodyBytes)}
		}
		return nil, badRequest("", "could not read the request body")
	}
	if !utf8.Valid(body) {
		return nil, badRequest("", "request body is not valid UTF-8")
	}
	return body, nil
}

// admit checks the request (prepare), then asks Config.Admit, if set,
// whether a request for m may go on, and returns the context the model
// runs in (calls that wait for the provider rather than be refused once
// admitted) and the function that ends the admission. A refusal is an
// error answered 429 with Retry-After.
func (s *Server) admit(r *http.Request, m Model, p Prompt) (context.Context, func(), error) {
	if err := s.prepare(r, m, p); err != nil {
		return nil, nil, err
	}
	ctx := middleware.RefuseWhenBusy(r.Context())
	if s.cfg.Admit == nil {
		return ctx, func() {}, nil
	}
	return s.cfg.Admit(ctx)
}

// answer runs model for x, once the request is admitted, and writes its
// whole answer.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, model Model, x *exchange) {
	ctx, release, err := s.admit(r, model, x.prompt)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer release()
	c, err := s.complete(ctx, model, x.prompt, nil)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	s.done(r, model, c)
	writeJSON(w, http.StatusOK, x.wire.body(c))
}

// done records a completion in the request log and the metrics.
func (s *Server) done(r *http.Request, model Model, c *Completion) {
	infoOf(r.Context()).runID = c.RunID
	s.metrics.usage(model.ID(), c.Usage)
}

// complete calls m.Complete and turns a panic or a nil Completion into an
// error.
func (s *Server) complete(ctx context.Context, m Model, p Prompt, out *Stream) (c *Completion, err error) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("model panicked", "model", m.ID(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			c, err = nil, &panicError{val: v}
		}
	}()
	c, err = m.Complete(ctx, p, out)
	if err == nil && c == nil {
		err = fmt.Errorf("model %s returned no completion", m.ID())
	}
	return c, err
}

// answerStream answers with server-sent events as the model writes. The
// stream starts (status 200, its first frames) with the first text or
// reasoning, or with a keep-alive comment after Config.KeepAlive without
// one: until then the request can still be refused with its own status,
// such as a 429 for capacity or a 400 a model found, as a JSON error.
// Reasoning that comes once the text has begun is not sent.
func (s *Server) answerStream(w http.ResponseWriter, r *http.Request, model Model, x *exchange) {
	ctx, release, err := s.admit(r, model, x.prompt)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer release()
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	es := x.wire.events()
	// A client that stops reading fails a write after WriteTimeout; the
	// run is then stopped as if the client had gone away.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		open   = true
		sse    *sseWriter
		spoken bool // the model's first text was sent
	)
	start := func() {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		sse = newSSEWriter(w, s.cfg.WriteTimeout, cancel)
		// Written with what follows: the first text, a keep-alive
		// comment, or the end.
		sse.queue(es.open())
	}
	// Until the first text, a comment now and then keeps the connection
	// from looking idle. The timer is set under mu, which its function
	// takes first.
	var beat *time.Timer
	mu.Lock()
	beat = time.AfterFunc(s.cfg.KeepAlive, func() {
		mu.Lock()
		defer mu.Unlock()
		if !open || spoken {
			return
		}
		if sse == nil {
			start()
		}
		sse.send([]byte(": waiting for the model\n\n"))
		beat.Reset(s.cfg.KeepAlive)
	})
	mu.Unlock()
	// Deltas are taken until Complete returns, and never after: a model
	// that sends them late cannot slip text after the end.
	c, err := s.complete(ctx, model, x.prompt, &Stream{
		Text: func(text string) {
			mu.Lock()
			defer mu.Unlock()
			if !open || text == "" {
				return
			}
			if sse == nil {
				start()
			}
			spoken = true
			sse.send(es.text(text))
		},
		Reasoning: func(text string) {
			mu.Lock()
			defer mu.Unlock()
			if !open || spoken || text == "" {
				return
			}
			if sse == nil {
				start()
			}
			sse.send(es.reasoning(text))
		},
	})
	mu.Lock()
	open = false // no beat writes after this
	started := sse != nil
	mu.Unlock()
	beat.Stop()
	if !started {
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		start()
	}
	defer sse.close()
	if err != nil {
		infoOf(r.Context()).err = err
		if ctx.Err() == nil {
			sse.send(es.failed(err))
		}
		return
	}
	s.done(r, model, c)
	sse.send(es.done(c))
}

// finishReason is why the model that wrote c stopped, in OpenAI's words:
// a provider's own reason ("end_turn", "max_tokens", "tool_use",
// "safety"…) as the OpenAI one that means the same; when the model did
// not say, "tool_calls" for an answer that calls tools, else "stop".
func finishReason(c *Completion) string {
	switch c.FinishReason {
	case "":
		if len(c.ToolCalls) > 0 {
			return llm.FinishToolCalls
		}
		return "stop"
	case "end_turn", "stop_sequence", "pause_turn":
		return "stop"
	case "max_tokens":
		return "length"
	case "tool_use":
		return llm.FinishToolCalls
	case "safety", "recitation", "blocklist", "prohibited_content", "spii", "refusal":
		return "content_filter"
	}
	return c.FinishReason
}

// extension is madspark's own addition to a completion, in both APIs.
type extension struct {
	RunID       string `json:"run_id,omitempty"`
	LLMCalls    int    `json:"llm_calls"`
	CachedCalls int    `json:"cached_calls"`
	// CostUSD is null when a model has no known price (Priced false).
	CostUSD *float64 `json:"cost_usd"`
	Priced  bool     `json:"priced"`
}

func extensionOf(c *Completion) *extension {
	x := &extension{RunID: c.RunID, LLMCalls: c.Usage.LLMCalls, CachedCalls: c.Usage.CachedCalls, Priced: c.Usage.Priced()}
	if x.Priced {
		x.CostUSD = &c.Usage.CostUSD
	}
	return x
}

// mustJSON encodes one of the server's own response types, which cannot
// fail, without escaping HTML characters.
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
