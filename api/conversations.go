package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/server"
)

// Limits of a conversation.
const (
	maxTitleRunes   = 200
	maxMessageBytes = 32000
	// titleRunes is how much of its first question names a conversation
	// that was given no title.
	titleRunes = 60
)

// CreateConversationRequest is the body of POST /api/conversations.
type CreateConversationRequest struct {
	// Title names the conversation; empty, it takes the start of the
	// first question.
	Title string `json:"title,omitempty" jsonschema:"maxLength=200"`
	// Model answers the conversation unless a message names another; the
	// first chat model (madspark-debate) when empty.
	Model string `json:"model,omitempty"`
}

// RenameConversationRequest is the body of PATCH /api/conversations/{id}.
type RenameConversationRequest struct {
	Title string `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
}

// PostMessageRequest is the body of POST /api/conversations/{id}/messages.
type PostMessageRequest struct {
	Content string `json:"content" jsonschema:"required,minLength=1,maxLength=32000"`
	// Model answers this message; the conversation's when empty.
	Model string `json:"model,omitempty"`
}

// RegenerateRequest is the body of POST
// /api/conversations/{id}/regenerate.
type RegenerateRequest struct {
	// Model answers again; the conversation's when empty.
	Model string `json:"model,omitempty"`
}

// ConversationList is a page of conversations, the most recently updated
// first, without their messages.
type ConversationList struct {
	Conversations []madspark.Conversation `json:"conversations"`
	Models        []string                `json:"models"`
	// MaxMessageBytes is the longest question a message may hold, in
	// bytes of UTF-8.
	MaxMessageBytes int  `json:"max_message_bytes"`
	Limit           int  `json:"limit"`
	Offset          int  `json:"offset"`
	NextOffset      *int `json:"next_offset" jsonschema:"nullable"`
}

// Conversation is a conversation with its messages, as GET
// /api/conversations/{id} and a rename answer it.
type Conversation struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Messages are the questions, their answers (a question answered
	// again has each of its answers, the last one current) and the
	// failures of answers (role error), oldest first.
	Messages []ChatMessage `json:"messages"`
}

// ChatMessage is a message of a conversation; a failed answer (role
// error) says what kind of failure it was.
type ChatMessage struct {
	madspark.ChatMessage
	Failure *failure.Failure `json:"failure,omitempty"`
}

// conversationOf describes c for the client of r.
func (h *Handler) conversationOf(r *http.Request, c *madspark.Conversation) Conversation {
	out := Conversation{ID: c.ID, Title: c.Title, Model: c.Model, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Messages: []ChatMessage{}}
	for _, m := range c.Messages {
		out.Messages = append(out.Messages, h.messageOf(r, m))
	}
	return out
}

// messageOf describes m for the client of r: a failed answer with its
// failure in words, addresses hidden from a client elsewhere.
func (h *Handler) messageOf(r *http.Request, m madspark.ChatMessage) ChatMessage {
	out := ChatMessage{ChatMessage: m}
	if m.Role == madspark.ChatError {
		out.Failure = h.failureOf(r, m.Content)
		out.Content = h.errorText(r, m.Content)
	}
	return out
}

// ChatDelta is the data of a "delta" event of an answer's stream: the next
// piece of the answer's text.
type ChatDelta struct {
	Text string `json:"text"`
}

// ChatRetry is the data of a "retry" event of an answer's stream: a call
// the answer needs failed with an error that may pass (a server error, a
// rate limit, a broken connection), and is sent again after a pause.
type ChatRetry struct {
	// Attempt is the attempt about to be made: 2 for the first retry.
	Attempt int `json:"attempt"`
	// MaxAttempts is the most attempts the call makes.
	MaxAttempts int `json:"max_attempts"`
	// DelayMS is the pause before it.
	DelayMS int64 `json:"delay_ms"`
	// Failure is what failed.
	Failure *failure.Failure `json:"failure"`
}

// chatModel returns the chat model named id; the first one when id is
// empty.
func (h *Handler) chatModel(id string) (server.Model, error) {
	if len(h.cfg.ChatModels) == 0 {
		return nil, conflict("this server answers no conversations: it has no chat model")
	}
	if id == "" {
		return h.cfg.ChatModels[0], nil
	}
	for _, m := range h.cfg.ChatModels {
		if m.ID() == id {
			return m, nil
		}
	}
	return nil, unprocessable("model", "model must be one of %s, got %q", strings.Join(h.chatModelIDs(), ", "), id)
}

func (h *Handler) chatModelIDs() []string {
	ids := make([]string, 0, len(h.cfg.ChatModels))
	for _, m := range h.cfg.ChatModels {
		ids = append(ids, m.ID())
	}
	return ids
}

func newConversationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "conv_" + hex.EncodeToString(b[:])
}

// checkTitle trims a title and checks its length.
func checkTitle(title string, required bool) (string, error) {
	title = oneLine(title)
	switch {
	case required && title == "":
		return "", unprocessable("title", "title must not be empty")
	case utf8.RuneCountInString(title) > maxTitleRunes:
		return "", unprocessable("title", "title is at most %d characters", maxTitleRunes)
	case !utf8.ValidString(title):
		return "", unprocessable("title", "title is not valid UTF-8")
	}
	return title, nil
}

func (h *Handler) listConversations(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", 50, 1, 200)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, 1_000_000)
	if err != nil {
		return err
	}
	cs, err := h.cfg.Store.Conversations(r.Context(), limit+1, offset)
	if err != nil {
		return err
	}
	out := ConversationList{Conversations: []madspark.Conversation{}, Models: h.chatModelIDs(), MaxMessageBytes: maxMessageBytes, Limit: limit, Offset: offset}
	if len(cs) > limit {
		cs = cs[:limit]
		next := offset + limit
		out.NextOffset = &next
	}
	for _, c := range cs {
		out.Conversations = append(out.Conversations, *c)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) createConversation(w http.ResponseWriter, r *http.Request) error {
	var req CreateConversationRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	title, err := checkTitle(req.Title, false)
	if err != nil {
		return err
	}
	m, err := h.chatModel(req.Model)
	if err != nil {
		return err
	}
	c := &madspark.Conversation{ID: newConversationID(), Title: title, Model: m.ID()}
	if err := h.cfg.Store.CreateConversation(r.Context(), c); err != nil {
		return err
	}
	w.Header().Set("Location", "/api/conversations/"+c.ID)
	writeJSON(w, http.StatusCreated, h.conversationOf(r, c))
	return nil
}

// loadConversation returns conversation id, or a 404.
func (h *Handler) loadConversation(ctx context.Context, id string) (*madspark.Conversation, error) {
	c, err := h.cfg.Store.Conversation(ctx, id)
	if errors.Is(err, madspark.ErrNotFound) {
		return nil, notFound("no conversation %s", id)
	}
	return c, err
}

func (h *Handler) getConversation(w http.ResponseWriter, r *http.Request) error {
	c, err := h.loadConversation(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.conversationOf(r, c))
	return nil
}

func (h *Handler) renameConversation(w http.ResponseWriter, r *http.Request) error {
	var req RenameConversationRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	title, err := checkTitle(req.Title, true)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := h.cfg.Store.RenameConversation(r.Context(), id, title); errors.Is(err, madspark.ErrNotFound) {
		return notFound("no conversation %s", id)
	} else if err != nil {
		return err
	}
	c, err := h.loadConversation(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h.conversationOf(r, c))
	return nil
}

func (h *Handler) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.cfg.Store.DeleteConversation(r.Context(), id); errors.Is(err, madspark.ErrNotFound) {
		return notFound("no conversation %s", id)
	} else if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) postMessage(w http.ResponseWriter, r *http.Request) error {
	var req PostMessageRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(req.Content) == "":
		return unprocessable("content", "content must not be empty")
	case len(req.Content) > maxMessageBytes:
		return unprocessable("content", "content is %d bytes long, more than the %d a message may hold", len(req.Content), maxMessageBytes)
	case !utf8.ValidString(req.Content):
		return unprocessable("content", "content is not valid UTF-8")
	}
	c, err := h.loadConversation(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	m, err := h.chatModel(orDefault(req.Model, c.Model))
	if err != nil {
		return err
	}
	history := debate.ConversationHistory(debate.ExchangesOf(c.Messages))
	q := &madspark.ChatMessage{Role: madspark.ChatUser, Content: req.Content}
	if err := h.cfg.Store.AppendMessage(r.Context(), c.ID, q); errors.Is(err, madspark.ErrNotFound) {
		return notFound("no conversation %s", c.ID)
	} else if err != nil {
		return err
	}
	if c.Title == "" {
		title := oneLine(req.Content)
		if utf8.RuneCountInString(title) > titleRunes {
			title = strings.TrimSpace(string([]rune(title)[:titleRunes])) + "…"
		}
		if err := h.cfg.Store.RenameConversation(r.Context(), c.ID, title); err != nil {
			h.log.Warn("could not title a conversation", "conversation", c.ID, "err", err)
		}
	}
	h.answer(w, r, c.ID, m, history, q)
	return nil
}

func (h *Handler) regenerate(w http.ResponseWriter, r *http.Request) error {
	var req RegenerateRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	c, err := h.loadConversation(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	m, err := h.chatModel(orDefault(req.Model, c.Model))
	if err != nil {
		return err
	}
	last := -1
	for i, msg := range c.Messages {
		if msg.Role == madspark.ChatUser {
			last = i
		}
	}
	if last < 0 {
		return conflict("conversation %s has no question to answer again", c.ID)
	}
	// The answers it had stay, before the new one: a person can go back
	// to them. The model is asked again, not the response cache.
	q := c.Messages[last]
	h.answer(w, r.WithContext(middleware.Fresh(r.Context())), c.ID, m, debate.ConversationHistory(debate.ExchangesOf(c.Messages[:last])), &q)
	return nil
}

// orDefault is a, or def when a is empty.
func orDefault(a, def string) string {
	if a != "" {
		return a
	}
	return def
}

// answer streams model m's answer to question q of conversation id as
// server-sent events: "question" (the stored question), "delta"s (pieces
// of the answer, in order) and "retry"s (a call failed and is sent again:
// ChatRetry), then "answer" (the stored answer, with the run that made it)
// or "error" (an ErrorBody with the failure's kind). A failed answer is
// kept as a message of role error, so that the question shows its failure
// and can be asked again after a reload. A client that goes away, or stops
// reading, stops the run and its model calls; the question stays
// unanswered, and what was written of the answer is kept as a message of
// role stopped. The run is tagged with the conversation
// (madspark.ParentTag), so that lists group it there.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, id string, m server.Model, history []llm.Message, q *madspark.ChatMessage) {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.SyncTimeout)
	defer cancel()
	ctx = engine.WithTags(ctx, madspark.ParentTag(madspark.ParentConversation, id))
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	var mu sync.Mutex
	open := true
	write := func(frame string) {
		mu.Lock()
		defer mu.Unlock()
		if !open {
			return
		}
		_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout))
		if _, err := io.WriteString(w, frame); err != nil {
			open = false
			cancel() // the client went away, or stopped reading
			return
		}
		if err := rc.Flush(); err != nil {
			open = false
			cancel()
		}
	}
	send := func(event string, v any) {
		if data, err := json.Marshal(v); err == nil {
			write("event: " + event + "\ndata: " + string(data) + "\n\n")
		}
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send("question", q)
	// Proposers can take a while before the first piece of the answer:
	// comments keep the idle stream alive through proxies.
	beat := time.NewTicker(h.cfg.Heartbeat)
	defer beat.Stop()
	stopBeat, beatDone := make(chan struct{}), make(chan struct{})
	defer func() { close(stopBeat); <-beatDone }()
	go func() {
		defer close(beatDone)
		for {
			select {
			case <-beat.C:
				write(": keep-alive\n\n")
			case <-stopBeat:
				return
			}
		}
	}()

	// Retries are told as they happen: a provider that is down takes
	// several seconds to give up on.
	ctx = llm.WithRetryObserver(ctx, func(rt llm.Retry) {
		send("retry", ChatRetry{Attempt: rt.Attempt + 1, MaxAttempts: rt.MaxAttempts, DelayMS: rt.Delay.Milliseconds(), Failure: h.failureOf(r, oneLine(rt.Err.Error()))})
	})
	msgs := append(slices.Clip(history), llm.Message{Role: llm.RoleUser, Content: q.Content})
	var written strings.Builder // Text is called from one goroutine
	comp, err := m.Complete(ctx, server.Prompt{Messages: msgs}, &server.Stream{Text: func(s string) {
		if s != "" {
			written.WriteString(s)
			send("delta", ChatDelta{Text: s})
		}
	}})
	if err == nil && comp == nil {
		err = fmt.Errorf("model %s returned no answer", m.ID())
	}
	if err != nil {
		mu.Lock()
		gone := !open
		mu.Unlock()
		if gone || r.Context().Err() != nil {
			// Nobody reads the answer: what was written of it is kept,
			// marked stopped, and answers nothing.
			sm := &madspark.ChatMessage{Role: madspark.ChatStopped, Content: written.String(), Model: m.ID()}
			if err := h.cfg.Store.AppendMessage(context.WithoutCancel(ctx), id, sm); err != nil {
				h.log.Warn("could not keep a conversation's stopped answer", "conversation", id, "err", err)
			}
			return
		}
		msg := oneLine(err.Error())
		h.log.Warn("a conversation's answer failed", "conversation", id, "model", m.ID(), "err", msg)
		fm := &madspark.ChatMessage{Role: madspark.ChatError, Content: msg, Model: m.ID()}
		if err := h.cfg.Store.AppendMessage(context.WithoutCancel(ctx), id, fm); err != nil {
			h.log.Warn("could not keep a conversation's failed answer", "conversation", id, "err", err)
		}
		f := h.failureOf(r, msg)
		send("error", ErrorBody{Error: ErrorDetail{Message: f.Line(), Type: typeInternal}, Failure: f})
		return
	}
	a := &madspark.ChatMessage{Role: madspark.ChatAssistant, Content: comp.Text, RunID: comp.RunID, Model: m.ID()}
	// The answer is kept even when the client left as it ended.
	if err := h.cfg.Store.AppendMessage(context.WithoutCancel(ctx), id, a); err != nil {
		h.log.Warn("could not keep a conversation's answer", "conversation", id, "err", err)
		send("error", ErrorBody{Error: ErrorDetail{Message: "the answer could not be kept; the server log says more", Type: typeInternal}})
		return
	}
	send("answer", a)
}
