package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/cache/redis"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/web"
)

// ServeConfig is how the server is run.
type ServeConfig struct {
	Addr string
	// NoWorker leaves queued runs to worker processes; else this process
	// works them too, with Worker's options.
	NoWorker bool
	Worker   WorkerOptions
	// AllowedOrigins and AllowedHosts are comma-separated; empty reads
	// MADSPARK_CORS_ORIGINS and MADSPARK_ALLOWED_HOSTS.
	AllowedOrigins, AllowedHosts string
	// PipelinesDir is a directory of pipeline files served beside the
	// built-in pipelines.
	PipelinesDir string
	// Debate are the settings of the debate models of /v1.
	Debate debate.Settings
	// Ready is told where the server listens and the models /v1 serves.
	Ready func(addr net.Addr, models []string)
}

// CheckServe checks what a server would be refused for, before anything
// starts: the debate settings, the worker's options, and an address other
// than loopback without MADSPARK_API_TOKEN.
func CheckServe(getenv func(string) string, sc ServeConfig) error {
	if err := sc.Debate.Check(); err != nil {
		return InputError{err}
	}
	if err := sc.Worker.Check(); err != nil {
		return err
	}
	if err := server.CheckAddr(sc.Addr, getenv("MADSPARK_API_TOKEN")); err != nil {
		return InputError{err}
	}
	return nil
}

// Serve serves the web UI, the REST API, the OpenAI-compatible API and MCP
// (at MCPPath) until ctx ends, then drains the HTTP server and, after it,
// the worker.
func (a *App) Serve(ctx context.Context, sc ServeConfig) error {
	d, err := a.Debater()
	if err != nil {
		return err
	}
	// Set before any run starts: the worker's runs count too. The GenAI
	// client metrics of every request are in it already.
	metrics := a.Metrics.Registry()
	if a.Engine.OnRepair, err = server.RepairMetric(metrics); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	reg, broken, err := a.ServeRegistry(sc.PipelinesDir)
	if err != nil {
		return err
	}
	var q *jobs.Queue
	if sc.NoWorker {
		if q, err = a.Queue(ctx, reg, 0, 0); err != nil {
			return err
		}
	} else {
		w, err := a.StartWorker(ctx, reg, sc.Worker)
		if err != nil {
			return err
		}
		// The worker drains after the HTTP server, before the store
		// closes.
		defer w.Stop(sc.Worker.Drain)
		q = w.Queue
	}
	origins := splitList(cmp.Or(sc.AllowedOrigins, a.getenv("MADSPARK_CORS_ORIGINS")))
	chat := []server.Model{
		&debateModel{id: "madspark-debate", mode: "auto", d: d, settings: sc.Debate},
		&debateModel{id: "madspark-direct", mode: "simple", d: d, settings: sc.Debate},
	}
	rest, err := a.restAPI(reg, q, origins, chat, broken)
	if err != nil {
		return err
	}
	models := append(chat, api.PipelineModels(reg, a.Engine, a.apiInfo(), "debate")...)
	var srv *server.Server
	srv, err = server.New(server.Config{
		Addr:         sc.Addr,
		Token:        a.getenv("MADSPARK_API_TOKEN"),
		Logger:       a.cfg.Logger,
		Version:      Version,
		Models:       models,
		CORSOrigins:  origins,
		AllowedHosts: splitList(cmp.Or(sc.AllowedHosts, a.getenv("MADSPARK_ALLOWED_HOSTS"))),
		Middleware:   rest.RateLimited,
		FileRoutes:   rest.FileRoutes(),
		StreamRoutes: rest.StreamRoutes(),
		Registry:     metrics,
		Public:       func(r *http.Request) bool { return servesUI(srv.Mux(), r) },
		Wrap:         a.Tracing.Handler,
		// A request refused for capacity is refused before its run is
		// recorded; an admitted one's calls wait their turn.
		Admit: a.limiter.Admit,
	})
	if err != nil {
		return InputError{err}
	}
	rest.Register(srv.Mux())
	// MCP over Streamable HTTP, behind the server's checks of hosts,
	// origins and the token like every other route.
	mcp, err := a.mcpServer(reg, sc.PipelinesDir, 0)
	if err != nil {
		return err
	}
	mh := mcp.Handler()
	for _, m := range []string{"GET ", "POST ", "DELETE "} {
		srv.Mux().Handle(m+MCPPath, mh)
	}
	srv.Mux().Handle(uiPattern, web.Handler()) // the web UI; every other route is more specific
	// Progress streams end when the server stops; their clients
	// reconnect to the next one and resume.
	stopStreams := context.AfterFunc(ctx, func() { rest.Close(); mcp.Close() })
	defer stopStreams()
	// Runs whose process is gone (this server's own /v1 runs, if it was
	// killed) are shown interrupted, now and as leases expire.
	watch, stopWatch := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() { a.Engine.WatchLeases(watch, engine.DefaultLeaseTTL/3); close(watching) }()
	defer func() { stopWatch(); <-watching }()
	ln, err := net.Listen("tcp", sc.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sc.Addr, err)
	}
	if sc.Ready != nil {
		ids := make([]string, len(models))
		for i, m := range models {
			ids[i] = m.ID()
		}
		sc.Ready(ln.Addr(), ids)
	}
	return srv.Serve(ctx, ln)
}

// debateModel serves the debate pipeline as an OpenAI model.
type debateModel struct {
	id       string
	mode     string
	d        *Debater
	settings debate.Settings
}

func (m *debateModel) ID() string { return m.id }

// Settings are all of them: they apply to the call that writes the answer.
func (m *debateModel) Settings() server.Setting { return server.AllSettings }

// Complete runs one debate for the prompt's last user message, with the
// earlier messages as history, and records it as a run. The client's
// instructions and settings go to the call that writes the answer (the
// direct answerer's or the aggregator's; see debate.Params).
func (m *debateModel) Complete(ctx context.Context, p server.Prompt, onDelta func(string)) (*server.Completion, error) {
	s := m.settings
	s.Mode = m.mode
	params, err := s.Params(p.Query())
	if err != nil {
		return nil, server.InvalidRequest(err)
	}
	for i, msg := range p.Messages {
		if i < len(p.Messages)-1 {
			params.History = append(params.History, msg)
		}
	}
	answerSettings(&params, p)
	if err := params.Validate(); err != nil {
		return nil, server.InvalidRequest(err)
	}
	if err := m.d.pipe.CheckFormat(params.Format); err != nil {
		return nil, server.InvalidRequest(err)
	}
	a := m.d.app
	run, err := a.Engine.Start(ctx, engine.RunInfo{Pipeline: "debate", Mode: a.Info.Mode(), Provider: a.Info.Name, Model: a.Info.Model, Params: params}, nil)
	if err != nil {
		return nil, err
	}
	res, err := m.d.pipe.Run(ctx, run, params, onDelta)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The client went away: nobody will read the answer.
		err = fmt.Errorf("%w: the client closed the connection", madspark.ErrCancelled)
	}
	if ferr := run.Finish(ctx, res, err); ferr != nil {
		a.cfg.Logger.Warn("could not record the run's outcome", "run", run.ID(), "err", ferr)
	}
	if err != nil {
		return nil, err
	}
	return &server.Completion{Text: res.Answer, FinishReason: res.FinishReason, Usage: run.Usage(), RunID: run.ID()}, nil
}

// answerSettings puts a client's instructions and settings on the roles
// that write a debate's answer (the direct answerer and the aggregator),
// and its format on the answer.
func answerSettings(params *debate.Params, p server.Prompt) {
	params.Instructions = p.System
	for _, role := range []debate.Role{debate.Direct, debate.Aggregator} {
		cfg := params.Roles[role]
		if p.Temperature != nil {
			cfg.Temperature = *p.Temperature
		}
		if p.MaxTokens > 0 {
			cfg.MaxTokens = p.MaxTokens
		}
		if p.TopP != nil {
			cfg.TopP = p.TopP
		}
		if p.Stop != nil {
			cfg.Stop = p.Stop
		}
		if p.Seed != nil {
			cfg.Seed = p.Seed
		}
		params.Roles[role] = cfg
	}
	if f := p.Format; f != nil {
		params.Format = &debate.Format{Name: f.Name, Schema: debate.Schema(f.Schema), Strict: f.Strict}
	}
}

// apiInfo describes the app to the REST API.
func (a *App) apiInfo() api.Info {
	i := api.Info{Version: Version, Mode: a.Info.Mode(), Provider: a.Info.Name, Model: a.Info.Model,
		ProviderConfigured: !a.Info.Mock, Database: "sqlite", Cache: "database", Endpoint: a.Info.BaseURL, Local: a.Info.Local}
	if _, ok := a.Store.(*postgres.DB); ok {
		i.Database = "postgres"
	}
	if rc, ok := a.Cache.(*redis.Cache); ok {
		i.Cache, i.CachePing = "redis", rc.Ping
	}
	return i
}

// restAPI builds the REST API over the app, its registry and its queue;
// chat are the models that answer conversations.
func (a *App) restAPI(reg *pipeline.Registry, q *jobs.Queue, origins []string, chat []server.Model, broken []api.BrokenPipeline) (*api.Handler, error) {
	font, err := PDFFont(a.cfg.Getenv)
	if err != nil {
		return nil, err
	}
	rate, burst := 0.0, 0
	if s := strings.TrimSpace(a.getenv("MADSPARK_RATE_LIMIT")); s != "" {
		if s == "off" || s == "0" {
			rate = -1
		} else if rate, err = strconv.ParseFloat(s, 64); err != nil || rate <= 0 {
			return nil, Inputf(`MADSPARK_RATE_LIMIT must be requests per second per client (such as 20) or "off", got %q`, s)
		}
	}
	if s := strings.TrimSpace(a.getenv("MADSPARK_RATE_BURST")); s != "" {
		if burst, err = strconv.Atoi(s); err != nil || burst < 1 {
			return nil, Inputf("MADSPARK_RATE_BURST must be a positive number of requests, got %q", s)
		}
	}
	h, err := api.New(api.Config{
		Registry: reg, Queue: q, Store: a.Store, Events: a.Events, Engine: a.Engine, Info: a.apiInfo(),
		Logger: a.cfg.Logger, RateLimit: rate, RateBurst: burst, AllowedOrigins: origins, PDFFont: font,
		ChatModels: chat, BrokenPipelines: broken,
		WebUI: true, // Serve mounts web.Handler at GET /
	})
	if err != nil {
		return nil, InputError{err}
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

// MCPPath is where the server serves MCP (Streamable HTTP).
const MCPPath = "/mcp"

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
