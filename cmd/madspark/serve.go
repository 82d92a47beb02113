package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/provider/llamaserver"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/web"
)

// version is reported by the server's /health.
const version = "0.1.0"

// startLlamaServer starts llama-server for modelPath (or
// MADSPARK_MODEL_PATH) and points the OpenAI-compatible provider at it. It
// returns the function that stops it; with no model path it does nothing.
func (c *cli) startLlamaServer(ctx context.Context, modelPath string) (func(), error) {
	if modelPath == "" {
		modelPath = c.env("MADSPARK_MODEL_PATH")
	}
	if modelPath == "" {
		return func() {}, nil
	}
	s, err := llamaserver.Start(ctx, llamaserver.Config{ModelPath: modelPath, Parallel: len(debate.Proposers), Logger: c.logger})
	if err != nil {
		return nil, usageError{err}
	}
	outer := c.env
	c.env = func(k string) string {
		switch k {
		case "MADSPARK_PROVIDER":
			return "openai"
		case "OPENAI_BASE_URL":
			return s.BaseURL
		case "OPENAI_API_KEY":
			return ""
		}
		return outer(k)
	}
	fmt.Fprintf(c.stderr, "madspark: llama-server running at %s with %s\n", s.BaseURL, modelPath)
	return s.Stop, nil
}

// debateModel serves the debate pipeline as an OpenAI model.
type debateModel struct {
	id    string
	mode  string
	c     *cli
	d     *debater
	flags *debateFlags
}

func (m *debateModel) ID() string { return m.id }

// Complete runs one debate for the prompt's last user message, with the
// earlier messages as history, and records it as a run.
func (m *debateModel) Complete(ctx context.Context, p server.Prompt, onDelta func(string)) (*server.Completion, error) {
	f := *m.flags
	f.mode = m.mode
	params, err := f.params(p.Query())
	if err != nil {
		return nil, server.InvalidRequest(err)
	}
	for i, msg := range p.Messages {
		if i < len(p.Messages)-1 {
			params.History = append(params.History, msg)
		}
	}
	run, err := m.d.app.engine.Start(ctx, engine.RunInfo{Pipeline: "debate", Mode: m.d.app.info.Mode(), Provider: m.d.app.info.Name, Model: m.d.app.info.Model, Params: params}, nil)
	if err != nil {
		return nil, err
	}
	res, err := m.d.pipe.Run(ctx, run, params, onDelta)
	if ferr := run.Finish(ctx, res, err); ferr != nil {
		m.c.logger.Warn("could not record the run's outcome", "run", run.ID(), "err", ferr)
	}
	if err != nil {
		return nil, err
	}
	return &server.Completion{Text: res.Answer, FinishReason: "stop", Usage: run.Usage(), RunID: run.ID()}, nil
}

func (c *cli) serveCmd() *cobra.Command {
	f := &debateFlags{}
	var (
		addr    string
		noCache bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API: OpenAI-compatible chat completions with models madspark-debate and madspark-direct",
		Long: `Serves an OpenAI-compatible API at http://ADDR/v1 (GET /v1/models,
POST /v1/chat/completions, streaming included), GET /health and GET /metrics.

Binds 127.0.0.1:8080 by default. Binding any other address requires
MADSPARK_API_TOKEN; every request then needs "Authorization: Bearer TOKEN".`,
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := f.params("probe"); err != nil {
				return err
			}
			ctx := cmd.Context()
			d, closeAll, err := c.newDebater(ctx, f, !noCache)
			if err != nil {
				return err
			}
			defer closeAll()
			srv, err := server.New(server.Config{
				Addr:    addr,
				Token:   c.env("MADSPARK_API_TOKEN"),
				Logger:  c.logger,
				Version: version,
				Models: []server.Model{
					&debateModel{id: "madspark-debate", mode: "auto", c: c, d: d, flags: f},
					&debateModel{id: "madspark-direct", mode: "simple", c: c, d: d, flags: f},
				},
			})
			if err != nil {
				return usageError{err}
			}
			srv.Mux().Handle("GET /", web.Handler()) // the web UI; every other route is more specific
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			mode := d.app.info.Mode()
			fmt.Fprintf(c.stderr, "madspark: serving http://%s/v1 (models madspark-debate, madspark-direct; provider %s/%s, %s)\n", ln.Addr(), d.app.info.Name, d.app.info.Model, mode)
			start := time.Now()
			err = srv.Serve(ctx, ln)
			fmt.Fprintf(c.stderr, "madspark: server stopped after %s\n", time.Since(start).Round(time.Second))
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	f.mode = "auto"
	return cmd
}
