package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/search"
)

// debateFlags are the debate's flags, shared by "debate" and "serve".
type debateFlags struct {
	mode           string
	rounds         int
	peerReview     bool
	proposerModels string
	roles          []string
	noSearch       bool
	modelPath      string
	hfRepo         string
}

func (f *debateFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntVar(&f.rounds, "rounds", 1, "rounds of proposing (1-5); from round 2 proposers read each other's handoffs and revise")
	fs.BoolVar(&f.peerReview, "peer-review", false, "proposers rank each other's anonymised handoffs; the aggregator sees the ranking")
	fs.StringVar(&f.proposerModels, "proposer-models", "", "[provider:]model for drafter,critic,synthesizer, comma-separated (e.g. openai:gpt-4o-mini,,anthropic:claude-haiku-4-5)")
	fs.StringArrayVar(&f.roles, "role", nil, "override a role's config: ROLE=TEMPERATURE/MAX_TOKENS (roles: drafter, critic, synthesizer, aggregator, direct); repeatable")
	fs.BoolVar(&f.noSearch, "no-search", false, "do not search the web even when a search key is set")
	fs.StringVar(&f.modelPath, "model-path", "", "a GGUF model file: start llama-server with it (or MADSPARK_MODEL_PATH)")
	fs.StringVar(&f.hfRepo, "hf-repo", "", "USER/MODEL[:QUANT]: start llama-server with a model it fetches itself (or MADSPARK_HF_REPO)")
}

// params returns the debate parameters for query, validated.
func (f *debateFlags) params(query string) (debate.Params, error) {
	return f.check(query, true)
}

// settings checks the flags alone, before there is a query.
func (f *debateFlags) settings() error {
	_, err := f.check("", false)
	return err
}

func (f *debateFlags) check(query string, withQuery bool) (debate.Params, error) {
	p := debate.DefaultParams()
	p.Query, p.Mode, p.Rounds, p.PeerReview, p.NoSearch = query, f.mode, f.rounds, f.peerReview, f.noSearch
	for _, spec := range f.roles {
		if err := debate.ParseRoleConfig(p.Roles, spec); err != nil {
			return p, usageError{err}
		}
	}
	if err := debate.ParseProposerModels(p.Roles, f.proposerModels); err != nil {
		return p, usageError{err}
	}
	validate := p.Validate
	if !withQuery {
		validate = p.ValidateSettings
	}
	if err := validate(); err != nil {
		return p, usageError{err}
	}
	return p, nil
}

// debater is a debate pipeline bound to an app.
type debater struct {
	app  *app
	pipe *debate.Pipeline
}

// newDebater opens the app (starting llama-server for --model-path) and the
// pipeline with web search from the environment.
func (c *cli) newDebater(ctx context.Context, f *debateFlags, useCache bool) (*debater, func(), error) {
	stopLlama, err := c.startLlamaServer(ctx, f.modelPath, f.hfRepo)
	if err != nil {
		return nil, nil, err
	}
	a, err := c.openApp(ctx, useCache)
	if err != nil {
		stopLlama()
		return nil, nil, err
	}
	count, err := debate.NewTokenCounter()
	if err != nil {
		a.Close()
		stopLlama()
		return nil, nil, err
	}
	var searcher search.Provider
	if s := search.FromEnv(c.env); s != nil {
		searcher = search.Cached(s, a.cache, 24*time.Hour)
	}
	pipe, err := debate.New(count, searcher, c.logger)
	if err != nil {
		a.Close()
		stopLlama()
		return nil, nil, err
	}
	return &debater{app: a, pipe: pipe}, func() { a.Close(); stopLlama() }, nil
}

func (c *cli) debateCmd() *cobra.Command {
	f := &debateFlags{}
	var (
		explain, noCache bool
		format           string
		conversation     string
		timeout          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "debate [QUERY]",
		Short: "Answer a query by multi-agent debate (MoA-Lite); without a query, an interactive session",
		Long: `Routes the query by complexity: a simple one gets one direct answer, a complex
one a debate of drafter, critic and synthesizer whose handoffs an aggregator
turns into the final answer. The answer streams to standard output.

Without QUERY, reads queries line by line (an interactive session when
standard input is a terminal); the conversation is kept between queries.

--conversation ID continues a conversation of the web UI (or of
/api/conversations): its earlier exchanges are the history, and the new
questions and answers are added to it.`,
		Args: argsError(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			if explain {
				if len(args) == 0 {
					return usagef("--explain-route needs a query")
				}
				return c.explainRoute(args[0], format)
			}
			if len(args) == 1 {
				p, err := f.params(args[0])
				if err != nil {
					return err
				}
				d, closeAll, err := c.newDebater(cmd.Context(), f, !noCache)
				if err != nil {
					return err
				}
				defer closeAll()
				conv, err := openConversation(cmd.Context(), d, conversation)
				if err != nil {
					return err
				}
				p.History = debate.ConversationHistory(conv.exchanges)
				res, runID, err := c.runDebate(cmd.Context(), d, p, format, timeout)
				if err != nil {
					return err
				}
				return conv.keep(cmd.Context(), args[0], res.Answer, runID)
			}
			if err := f.settings(); err != nil {
				return err
			}
			return c.debateREPL(cmd.Context(), f, format, timeout, !noCache, conversation)
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.mode, "mode", "auto", "auto (route by complexity), simple or complex")
	fs.BoolVar(&explain, "explain-route", false, "print how the query would be routed, and why, without calling a model")
	fs.StringVar(&format, "output-format", "text", "text (the streamed answer) or json (the whole result)")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "give up on a query after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	fs.StringVar(&conversation, "conversation", "", "continue the stored conversation with this ID, adding the new exchanges to it")
	return cmd
}

func (c *cli) explainRoute(query, format string) error {
	count, err := debate.NewTokenCounter()
	if err != nil {
		return err
	}
	r := debate.Classify(query, count)
	if format == "json" {
		return writeJSON(c, r)
	}
	f := r.Features
	fmt.Fprintf(c.stdout, "level:       %s\nconfidence:  %.2f\ntokens:      %d (threshold %d)\ncode block:  %v\nreasoning:   %v %s\nmulti-step:  %v\n",
		r.Level, r.Confidence, f.TokenCount, debate.TokenThreshold, f.HasCodeBlock, f.HasReasoningKeywords, strings.Join(f.Keywords, ", "), f.HasMultiStepIndicators)
	return nil
}

// runDebate answers one query, streaming the answer to stdout in text format.
func (c *cli) runDebate(ctx context.Context, d *debater, p debate.Params, format string, timeout time.Duration) (*debate.Result, string, error) {
	var onDelta func(string)
	if format == "text" {
		onDelta = func(s string) { io.WriteString(c.stdout, s) }
	}
	var res *debate.Result
	run, elapsed, err := c.execute(ctx, d.app, "debate", p, timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = d.pipe.Run(ctx, r, p, onDelta)
		return res, err
	})
	if err != nil {
		if format == "text" {
			fmt.Fprintln(c.stdout)
		}
		return nil, "", err
	}
	if format == "json" {
		return res, run.ID(), writeJSON(c, map[string]any{
			"run_id": run.ID(), "pipeline": "debate", "mode": d.app.info.Mode(), "provider": d.app.info.Name, "model": d.app.info.Model,
			"result": res, "usage": run.Usage(), "duration_ms": elapsed.Milliseconds(),
		})
	}
	fmt.Fprintln(c.stdout)
	note := ""
	if res.SearchNote != "" && res.Path == debate.Complex {
		note = " · " + res.SearchNote
	}
	note += pipeline.RepairsNote(res.Repairs)
	if d.app.info.Mock {
		note += " · MOCK DATA"
	}
	fmt.Fprintf(c.stderr, "madspark: run %s · %s path · %s%s\n", run.ID(), res.Path, usageLine(run, elapsed), note)
	return res, run.ID(), nil
}

// debateREPL answers queries read line by line, keeping the conversation.
func (c *cli) debateREPL(ctx context.Context, f *debateFlags, format string, timeout time.Duration, useCache bool, conversation string) error {
	d, closeAll, err := c.newDebater(ctx, f, useCache)
	if err != nil {
		return err
	}
	defer closeAll()
	conv, err := openConversation(ctx, d, conversation)
	if err != nil {
		return err
	}
	interactive := isTerminalReader(c.stdin)
	if interactive {
		fmt.Fprintln(c.stderr, "madspark debate: ask anything; an empty line is ignored, /exit or Ctrl-D ends, /reset forgets the conversation.")
	}
	exchanges := conv.exchanges
	if interactive && conv.id != "" {
		fmt.Fprintf(c.stderr, "madspark debate: continuing %q (%d earlier exchanges).\n", conv.title, len(exchanges))
	}
	// Lines are read aside, so that Ctrl-C ends a session waiting for one.
	lines, readErr := make(chan string), make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(c.stdin)
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
		if interactive {
			fmt.Fprint(c.stderr, "› ")
		}
		var text string
		var ok bool
		select {
		case <-ctx.Done():
			if interactive {
				fmt.Fprintln(c.stderr)
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
		p, err := f.params(line)
		if err != nil {
			fmt.Fprintf(c.stderr, "madspark: %s\n", oneLine(err.Error()))
			continue
		}
		p.History = debate.ConversationHistory(exchanges)
		res, runID, err := c.runDebate(ctx, d, p, format, timeout)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "madspark: %s\n", oneLine(err.Error()))
			continue
		}
		if err := conv.keep(ctx, line, res.Answer, runID); err != nil {
			return err
		}
		exchanges = append(exchanges, debate.Exchange{Question: line, Answer: res.Answer})
		if len(exchanges) > debate.MaxHistory {
			exchanges = exchanges[1:]
		}
	}
}

// storedConversation is a stored conversation the debate continues; its
// zero value is none.
type storedConversation struct {
	store     madspark.ConversationStore
	id, title string
	exchanges []debate.Exchange
}

// openConversation loads conversation id from the app's store; an empty id
// is none, a missing one a usage error.
func openConversation(ctx context.Context, d *debater, id string) (*storedConversation, error) {
	if id == "" {
		return &storedConversation{}, nil
	}
	conv, err := d.app.db.Conversation(ctx, id)
	if errors.Is(err, madspark.ErrNotFound) {
		return nil, usagef("--conversation: no conversation %s", id)
	}
	if err != nil {
		return nil, err
	}
	return &storedConversation{store: d.app.db, id: id, title: conv.Title, exchanges: debate.ExchangesOf(conv.Messages)}, nil
}

// keep adds a question and its answer to the conversation, if there is one.
func (s *storedConversation) keep(ctx context.Context, question, answer, runID string) error {
	if s.id == "" {
		return nil
	}
	if err := s.store.AppendMessage(ctx, s.id, &madspark.ChatMessage{Role: madspark.ChatUser, Content: question}); err != nil {
		return fmt.Errorf("keep the question in conversation %s: %w", s.id, err)
	}
	if err := s.store.AppendMessage(ctx, s.id, &madspark.ChatMessage{Role: madspark.ChatAssistant, Content: answer, RunID: runID, Model: "madspark-debate"}); err != nil {
		return fmt.Errorf("keep the answer in conversation %s: %w", s.id, err)
	}
	return nil
}
