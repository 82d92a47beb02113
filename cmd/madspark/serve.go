package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/cache/redis"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/provider/llamaserver"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/web"
)

// version is reported by the server's /health.
const version = "0.1.0"

// startLlamaServer starts llama-server for modelPath (or
// MADSPARK_MODEL_PATH), or for a model it fetches, hfRepo (or
// MADSPARK_HF_REPO), and points the OpenAI-compatible provider at it. It
// returns the function that stops it; with neither it does nothing.
func (c *cli) startLlamaServer(ctx context.Context, modelPath, hfRepo string) (func(), error) {
	if modelPath == "" && hfRepo == "" {
		modelPath, hfRepo = c.env("MADSPARK_MODEL_PATH"), c.env("MADSPARK_HF_REPO")
	}
	if modelPath == "" && hfRepo == "" {
		return func() {}, nil
	}
	s, err := llamaserver.Start(ctx, llamaserver.Config{ModelPath: modelPath, HFRepo: hfRepo, Parallel: len(debate.Proposers), Logger: c.logger})
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
	fmt.Fprintf(c.stderr, "madspark: llama-server running at %s with %s\n", s.BaseURL, modelPath+hfRepo)
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
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The client went away: nobody will read the answer.
		err = fmt.Errorf("%w: the client closed the connection", madspark.ErrCancelled)
	}
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
	wf := &workerFlags{}
	var (
		addr           string
		noCache        bool
		noWorker       bool
		allowedOrigins string
		allowedHosts   string
		pipelinesDir   string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the web UI, the REST API of runs and bookmarks, and OpenAI-compatible chat completions",
		Long: `Serves the web UI at http://ADDR/, the REST API at http://ADDR/api (runs
of every pipeline, their live progress over SSE and WebSocket, exports,
bookmarks; its OpenAPI document is /api/openapi.json), an OpenAI-compatible
API at http://ADDR/v1 (GET /v1/models, POST /v1/chat/completions, streaming
included), GET /health, GET /health/detailed and GET /metrics.

Pages of other sites cannot use it: a state-changing request from a page
of another origin is refused (403), as is a body that is not
application/json (415), and, without a token, a request for a host name
other than the bound address, localhost or a loopback address (421, so
that DNS rebinding cannot read it). --allowed-origins (or
MADSPARK_CORS_ORIGINS; comma-separated scheme://host[:port]) lets other
sites' pages call it, for a web UI served elsewhere; --allowed-hosts (or
MADSPARK_ALLOWED_HOSTS; comma-separated names) adds host names it answers
to. MADSPARK_RATE_LIMIT (requests per second per client, default 20, "off"
for none) and MADSPARK_RATE_BURST (default 120) bound each client of /api.

Binds 127.0.0.1:8080 by default. Binding any other address requires
MADSPARK_API_TOKEN; every request then needs "Authorization: Bearer TOKEN".

Unless --no-worker, the server also works queued runs as madspark worker
does (--max-concurrent, --lease, --drain-timeout), resuming at start the
runs it was working when it stopped; on Ctrl-C it drains them after the
HTTP server.`,
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.settings(); err != nil {
				return err
			}
			if err := wf.check(); err != nil {
				return err
			}
			// Refused before the worker or anything else starts.
			if err := server.CheckAddr(addr, c.env("MADSPARK_API_TOKEN")); err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			d, closeAll, err := c.newDebater(ctx, f, !noCache)
			if err != nil {
				return err
			}
			defer closeAll()
			// Set before any run starts: the worker's runs count too.
			metrics := prometheus.NewRegistry()
			if d.app.engine.OnRepair, err = server.RepairMetric(metrics); err != nil {
				return fmt.Errorf("metrics: %w", err)
			}
			reg, err := c.registry(d.app)
			if err != nil {
				return err
			}
			if err := c.registerDir(reg, pipelinesDir); err != nil {
				return err
			}
			var q *jobs.Queue
			if noWorker {
				if q, err = c.openQueue(ctx, d.app, reg, queueOptions{}); err != nil {
					return err
				}
			} else {
				var stopWorker func()
				if q, stopWorker, err = c.startWorker(ctx, d.app, reg, wf); err != nil {
					return err
				}
				// Deferred after closeAll, so it runs first: the worker
				// drains before the store closes.
				defer stopWorker()
			}
			if allowedOrigins == "" {
				allowedOrigins = c.env("MADSPARK_CORS_ORIGINS")
			}
			if allowedHosts == "" {
				allowedHosts = c.env("MADSPARK_ALLOWED_HOSTS")
			}
			origins := splitList(allowedOrigins)
			chat := []server.Model{
				&debateModel{id: "madspark-debate", mode: "auto", c: c, d: d, flags: f},
				&debateModel{id: "madspark-direct", mode: "simple", c: c, d: d, flags: f},
			}
			rest, err := c.restAPI(d.app, reg, q, origins, chat)
			if err != nil {
				return err
			}
			models := append(chat, api.PipelineModels(reg, d.app.engine, apiInfo(d.app), "debate")...)
			var srv *server.Server
			srv, err = server.New(server.Config{
				Addr:         addr,
				Token:        c.env("MADSPARK_API_TOKEN"),
				Logger:       c.logger,
				Version:      version,
				Models:       models,
				CORSOrigins:  origins,
				AllowedHosts: splitList(allowedHosts),
				Middleware:   rest.RateLimited,
				FileRoutes:   rest.FileRoutes(),
				Registry:     metrics,
				Public:       func(r *http.Request) bool { return servesUI(srv.Mux(), r) },
				Wrap:         d.app.tracing.Handler,
			})
			if err != nil {
				return usageError{err}
			}
			rest.Register(srv.Mux())
			srv.Mux().Handle(uiPattern, web.Handler()) // the web UI; every other route is more specific
			// Progress streams end when the server stops; their clients
			// reconnect to the next one and resume.
			stopStreams := context.AfterFunc(ctx, rest.Close)
			defer stopStreams()
			// Runs whose process is gone (this server's own /v1 runs,
			// if it was killed) are shown interrupted, now and as
			// leases expire.
			watch, stopWatch := context.WithCancel(ctx)
			watching := make(chan struct{})
			go func() { d.app.engine.WatchLeases(watch, engine.DefaultLeaseTTL/3); close(watching) }()
			defer func() { stopWatch(); <-watching }()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			mode := d.app.info.Mode()
			ids := make([]string, len(models))
			for i, m := range models {
				ids[i] = m.ID()
			}
			fmt.Fprintf(c.stderr, "madspark: serving http://%s/v1 (models %s; provider %s/%s, %s) and the REST API at http://%s/api\n"+
				"madspark: web UI at http://%s/ (Ctrl-C stops the server)\n",
				ln.Addr(), strings.Join(ids, ", "), d.app.info.Name, d.app.info.Model, mode, ln.Addr(), ln.Addr())
			start := time.Now()
			err = srv.Serve(ctx, ln)
			fmt.Fprintf(c.stderr, "madspark: server stopped after %s\n", time.Since(start).Round(time.Second))
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	cmd.Flags().BoolVar(&noWorker, "no-worker", false, "do not work queued runs in this process (madspark worker processes do)")
	cmd.Flags().StringVar(&allowedOrigins, "allowed-origins", "", "comma-separated origins (scheme://host[:port]) whose pages may call the server (default $MADSPARK_CORS_ORIGINS)")
	cmd.Flags().StringVar(&allowedHosts, "allowed-hosts", "", "comma-separated host names the server answers to besides its address and localhost (default $MADSPARK_ALLOWED_HOSTS)")
	cmd.Flags().StringVar(&pipelinesDir, "pipelines", "", "a directory of pipeline files (*.yaml, *.yml) to serve beside the built-in pipelines")
	wf.register(cmd)
	f.mode = "auto"
	return cmd
}

// apiInfo describes the app to the REST API.
func apiInfo(a *app) api.Info {
	i := api.Info{Version: version, Mode: a.info.Mode(), Provider: a.info.Name, Model: a.info.Model,
		ProviderConfigured: !a.info.Mock, Database: "sqlite", Cache: "database"}
	if _, ok := a.db.(*postgres.DB); ok {
		i.Database = "postgres"
	}
	if rc, ok := a.cache.(*redis.Cache); ok {
		i.Cache, i.CachePing = "redis", rc.Ping
	}
	return i
}

// restAPI builds the REST API over the app, its registry and its queue;
// chat are the models that answer conversations.
func (c *cli) restAPI(a *app, reg *pipeline.Registry, q *jobs.Queue, origins []string, chat []server.Model) (*api.Handler, error) {
	font, err := c.pdfFont()
	if err != nil {
		return nil, err
	}
	rate, burst := 0.0, 0
	if s := strings.TrimSpace(c.env("MADSPARK_RATE_LIMIT")); s != "" {
		if s == "off" || s == "0" {
			rate = -1
		} else if rate, err = strconv.ParseFloat(s, 64); err != nil || rate <= 0 {
			return nil, usagef(`MADSPARK_RATE_LIMIT must be requests per second per client (such as 20) or "off", got %q`, s)
		}
	}
	if s := strings.TrimSpace(c.env("MADSPARK_RATE_BURST")); s != "" {
		if burst, err = strconv.Atoi(s); err != nil || burst < 1 {
			return nil, usagef("MADSPARK_RATE_BURST must be a positive number of requests, got %q", s)
		}
	}
	h, err := api.New(api.Config{
		Registry: reg, Queue: q, Store: a.db, Events: a.events, Engine: a.engine, Info: apiInfo(a),
		Logger: c.logger, RateLimit: rate, RateBurst: burst, AllowedOrigins: origins, PDFFont: font,
		ChatModels: chat,
		WebUI:      true, // serveCmd mounts web.Handler at GET /
	})
	if err != nil {
		return nil, usageError{err}
	}
	return h, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// uiPattern routes to the web UI whatever no other route matches.
const uiPattern = "GET /"

// servesUI reports whether r reads the web UI's own files: the mux routes it
// to the UI, outside the server's reserved paths. Those files hold no data,
// so they are served without the API token; the page asks for it.
func servesUI(mux *http.ServeMux, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	_, pattern := mux.Handler(r)
	return pattern == uiPattern && !web.IsReserved(r.URL.Path)
}
