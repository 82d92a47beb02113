package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/debate"
)

// Debater answers queries by debate on the app.
type Debater struct {
	app  *App
	pipe *debate.Pipeline
}

// Debater returns the debate pipeline, with web search from the settings.
func (a *App) Debater() (*Debater, error) {
	count, err := debate.NewTokenCounter()
	if err != nil {
		return nil, err
	}
	pipe, err := debate.New(count, a.webSearch(), a.cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &Debater{app: a, pipe: pipe}, nil
}

// Answer is one answered query.
type Answer struct {
	Result  *debate.Result
	Run     *engine.Run
	Elapsed time.Duration
}

// Ask answers one query as a run, streaming the answer's text to onDelta
// (when set).
func (d *Debater) Ask(ctx context.Context, p debate.Params, onDelta func(string), timeout time.Duration) (*Answer, error) {
	ans := &Answer{}
	var err error
	ans.Run, ans.Elapsed, err = d.app.Execute(ctx, Spec{Pipeline: "debate", Params: p, Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		ans.Result, err = d.pipe.Run(ctx, r, p, onDelta)
		return ans.Result, err
	})
	if err != nil {
		return nil, err
	}
	return ans, nil
}

// Conversation is a stored conversation a debate continues; its zero
// value is none.
type Conversation struct {
	store     madspark.ConversationStore
	ID, Title string
	Exchanges []debate.Exchange
}

// Conversation loads conversation id; an empty id is none, a missing one
// an InputError.
func (a *App) Conversation(ctx context.Context, id string) (*Conversation, error) {
	if id == "" {
		return &Conversation{}, nil
	}
	conv, err := a.Store.Conversation(ctx, id)
	if errNotFound(err) {
		return nil, Inputf("--conversation: no conversation %s", id)
	}
	if err != nil {
		return nil, err
	}
	return &Conversation{store: a.Store, ID: id, Title: conv.Title, Exchanges: debate.ExchangesOf(conv.Messages)}, nil
}

// Keep adds a question and its answer (by run runID) to the conversation,
// if there is one.
func (c *Conversation) Keep(ctx context.Context, question, answer, runID string) error {
	if c.ID == "" {
		return nil
	}
	if err := c.store.AppendMessage(ctx, c.ID, &madspark.ChatMessage{Role: madspark.ChatUser, Content: question}); err != nil {
		return fmt.Errorf("keep the question in conversation %s: %w", c.ID, err)
	}
	if err := c.store.AppendMessage(ctx, c.ID, &madspark.ChatMessage{Role: madspark.ChatAssistant, Content: answer, RunID: runID, Model: "madspark-debate"}); err != nil {
		return fmt.Errorf("keep the answer in conversation %s: %w", c.ID, err)
	}
	return nil
}

// Session is a conversation read line by line: an empty line is ignored,
// /exit or /quit ends it (as does the end of the input), /reset forgets
// the conversation so far.
type Session struct {
	In io.Reader
	// Prompt, if set, receives the prompt before each line: an
	// interactive session.
	Prompt io.Writer
	// Conversation is the stored conversation it continues and adds to.
	Conversation *Conversation
	// Ask answers a query with the parameters of settings, the
	// conversation so far as history.
	Ask func(ctx context.Context, p debate.Params) (*Answer, error)
	// Failed, if set, is told of a query that failed; the session goes
	// on.
	Failed func(error)
}

// Run reads and answers queries until the input ends, /exit, or ctx ends.
func (s *Session) Run(ctx context.Context, settings debate.Settings) error {
	failed := s.Failed
	if failed == nil {
		failed = func(error) {}
	}
	conv := s.Conversation
	exchanges := conv.Exchanges
	if s.Prompt != nil {
		fmt.Fprintln(s.Prompt, "madspark debate: ask anything; an empty line is ignored, /exit or Ctrl-D ends, /reset forgets the conversation.")
		if conv.ID != "" {
			fmt.Fprintf(s.Prompt, "madspark debate: continuing %q (%d earlier exchanges).\n", conv.Title, len(exchanges))
		}
	}
	// Lines are read aside, so that Ctrl-C ends a session waiting for one.
	lines, readErr := make(chan string), make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(s.In)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done:
				return
			}
		}
		readErr <- sc.Err()
	}()
	for {
		if s.Prompt != nil {
			fmt.Fprint(s.Prompt, "› ")
		}
		var text string
		var ok bool
		select {
		case <-ctx.Done():
			if s.Prompt != nil {
				fmt.Fprintln(s.Prompt)
			}
			return ctx.Err()
		case text, ok = <-lines:
		}
		if !ok {
			return <-readErr
		}
		line := strings.TrimSpace(text)
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			exchanges = nil
			continue
		}
		p, err := settings.Params(line)
		if err != nil {
			failed(err)
			continue
		}
		p.History = debate.ConversationHistory(exchanges)
		ans, err := s.Ask(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			failed(err)
			continue
		}
		if err := conv.Keep(ctx, line, ans.Result.Answer, ans.Run.ID()); err != nil {
			return err
		}
		exchanges = append(exchanges, debate.Exchange{Question: line, Answer: ans.Result.Answer})
		if len(exchanges) > debate.MaxHistory {
			exchanges = exchanges[1:]
		}
	}
}
