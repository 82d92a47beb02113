package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/termui"
)

// debateFlags are the debate's flags, shared by "debate" and "serve".
type debateFlags struct {
	debate.Settings
	modelPath, hfRepo string
}

func (f *debateFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntVar(&f.Rounds, "rounds", 1, "rounds of proposing (1-5); from round 2 proposers read each other's handoffs and revise")
	fs.BoolVar(&f.PeerReview, "peer-review", false, "proposers rank each other's anonymised handoffs; the aggregator sees the ranking")
	fs.StringVar(&f.ProposerModels, "proposer-models", "", "[provider:]model for drafter,critic,synthesizer, comma-separated (e.g. openai:gpt-4o-mini,,anthropic:claude-haiku-4-5)")
	fs.StringArrayVar(&f.Roles, "role", nil, "override a role's config: ROLE=TEMPERATURE/MAX_TOKENS (roles: drafter, critic, synthesizer, aggregator, direct); repeatable")
	fs.BoolVar(&f.NoSearch, "no-search", false, "do not search the web even when a search key is set")
	fs.StringVar(&f.modelPath, "model-path", "", "a GGUF model file: start llama-server with it (or MADSPARK_MODEL_PATH)")
	fs.StringVar(&f.hfRepo, "hf-repo", "", "USER/MODEL[:QUANT]: start llama-server with a model it fetches itself (or MADSPARK_HF_REPO)")
}

// params returns the debate parameters for query, validated.
func (f *debateFlags) params(query string) (debate.Params, error) {
	p, err := f.Params(query)
	if err != nil {
		return p, usageError{Err: err}
	}
	return p, nil
}

// open opens the app, starting llama-server for --model-path or
// --hf-repo, and the debate pipeline.
func (c *cli) openDebate(ctx context.Context, f *debateFlags, noCache bool) (*app.App, *app.Debater, error) {
	a, err := c.openWith(ctx, app.Config{NoCache: noCache, ModelPath: f.modelPath, HFRepo: f.hfRepo})
	if err != nil {
		return nil, nil, err
	}
	d, err := a.Debater()
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, d, nil
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
		Args: cmdline.Args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(format, "text", "json"); err != nil {
				return err
			}
			if err := cmdline.CheckTimeout(timeout); err != nil {
				return err
			}
			if explain {
				if len(args) == 0 {
					return usagef("--explain-route needs a query")
				}
				return c.explainRoute(args[0], format)
			}
			var p debate.Params
			if len(args) == 1 {
				var err error
				if p, err = f.params(args[0]); err != nil {
					return err
				}
			} else if err := f.Check(); err != nil {
				return usageError{Err: err}
			}
			ctx := cmd.Context()
			a, d, err := c.openDebate(ctx, f, noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			conv, err := a.Conversation(ctx, conversation)
			if err != nil {
				return err
			}
			ask := func(ctx context.Context, p debate.Params) (*app.Answer, error) {
				return c.ask(ctx, a, d, p, format, timeout)
			}
			if len(args) == 0 {
				s := &app.Session{In: c.stdin, Conversation: conv, Ask: ask,
					Failed: func(err error) { fmt.Fprintf(c.stderr, "madspark: %s\n", input.Show(c.words(err))) }}
				if termui.IsTerminal(c.stdin) {
					s.Prompt = c.stderr
				}
				return s.Run(ctx, f.Settings)
			}
			p.History = debate.ConversationHistory(conv.Exchanges)
			ans, err := ask(ctx, p)
			if err != nil {
				return err
			}
			return conv.Keep(ctx, args[0], ans.Result.Answer, ans.Run.ID())
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.Mode, "mode", "auto", "auto (route by complexity), simple or complex")
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
	_, err = io.WriteString(c.stdout, r.Explain())
	return err
}

// ask answers one query, streaming the answer to stdout in text format.
func (c *cli) ask(ctx context.Context, a *app.App, d *app.Debater, p debate.Params, format string, timeout time.Duration) (*app.Answer, error) {
	var onDelta func(string)
	if format == "text" {
		onDelta = func(s string) { io.WriteString(c.stdout, s) }
	}
	ans, err := d.Ask(ctx, p, onDelta, timeout)
	if err != nil {
		if format == "text" {
			fmt.Fprintln(c.stdout)
		}
		return nil, err
	}
	res, run := ans.Result, ans.Run
	if format == "json" {
		return ans, writeJSON(c, a.Envelope(run, "debate", res, ans.Elapsed))
	}
	fmt.Fprintln(c.stdout)
	note := ""
	if res.SearchNote != "" && res.Path == debate.Complex {
		note = " · " + res.SearchNote
	}
	note += pipeline.RepairsNote(res.Repairs)
	if a.Info.Mock {
		note += " · MOCK DATA"
	}
	fmt.Fprintf(c.stderr, "madspark: run %s · %s path · %s%s\n", run.ID(), res.Path, app.UsageLine(run, ans.Elapsed), note)
	return ans, nil
}
