package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/cache/redis"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/provider"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/tokens"
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
	_, err := promptLimit(getenv)
	return err
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
	maxPrompt, err := promptLimit(a.getenv)
	if err != nil {
		return err
	}
	chat := []server.Model{
		&debateModel{id: "madspark-debate", mode: "auto", d: d, settings: sc.Debate, maxPrompt: maxPrompt, provider: a.Info.Name},
		&debateModel{id: "madspark-direct", mode: "simple", d: d, settings: sc.Debate, maxPrompt: maxPrompt, provider: a.Info.Name},
	}
	rest, err := a.restAPI(reg, q, origins, chat, broken)
	if err != nil {
		return err
	}
	counter, err := tokens.New()
	if err != nil {
		return err
	}
	check := func(req *llm.Request) error { return provider.Check(a.Info.Name, req) }
	models := append(chat, api.PipelineModels(reg, a.Engine, a.apiInfo(), counter, check, "debate")...)
	var srv *server.Server
	srv, err = server.New(server.Config{
		Addr:           sc.Addr,
		Token:          a.getenv("MADSPARK_API_TOKEN"),
		MaxPromptBytes: maxPrompt,
		Logger:         a.cfg.Logger,
		Version:        Version,
		Models:         models,
		CORSOrigins:    origins,
		AllowedHosts:   splitList(cmp.Or(sc.AllowedHosts, a.getenv("MADSPARK_ALLOWED_HOSTS"))),
		Middleware:     rest.RateLimited,
		FileRoutes:     rest.FileRoutes(),
		// GET /mcp is a stream a page could follow: its origin is checked
		// as every POST's is.
		StreamRoutes: append(rest.StreamRoutes(), "GET "+MCPPath),
		Registry:     metrics,
		Public:       func(r *http.Request) bool { return servesUI(srv.Mux(), r) },
		Wrap:         a.Tracing.Handler,
		// A request refused for capacity, or while the provider is
		// paused, is refused before its run is recorded; an admitted
		// one's calls wait their turn.
		Admit: a.admit,
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
	// reconnect to the next one and resume. MCP tool calls stop at once,
	// recorded interrupted, so that their streams end too; /v1 requests
	// drain (server.Config.DrainTimeout), then are interrupted.
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
	err = srv.Serve(ctx, ln)
	// The tool calls the stop interrupted are recorded before Serve
	// returns (Close waits for them).
	mcp.Close()
	return err
}

// admit admits an OpenAI-compatible request: refused, before anything
// starts, while the provider's circuit breaker is open (503 with
// Retry-After) or when its calls fill the limit and the queue (429).
func (a *App) admit(ctx context.Context) (context.Context, func(), error) {
	if err := a.breaker.Check(); err != nil {
		return nil, nil, err
	}
	return a.limiter.Admit(ctx)
}

// debateModel serves the debate pipeline as an OpenAI model.
type debateModel struct {
	id       string
	mode     string
	d        *Debater
	settings debate.Settings
	// maxPrompt bounds the text of a debate's parameters (query,
	// instructions and history); 0 means input.DefaultMaxPromptBytes.
	maxPrompt int
	// provider names the provider of the roles that name none.
	provider string
}

func (m *debateModel) ID() string { return m.id }

// Settings are all of them: they apply to the call that writes the answer,
// but max_tool_calls, which bounds the debate's web search, and the tags,
// which label its run.
func (m *debateModel) Settings() server.Setting { return server.AllSettings }

// Complete runs one debate for the prompt's last user message, with the
// earlier messages as history, and records it as a run. The client's
// instructions, settings and tools go to the call that writes the answer
// (the direct answerer's or the aggregator's; see debate.Params), with the
// tool calls and results after the last user message.
func (m *debateModel) Complete(ctx context.Context, p server.Prompt, out *server.Stream) (*server.Completion, error) {
	params, err := m.params(p)
	if err != nil {
		return nil, err
	}
	a := m.d.app
	// A debate's stages are its reasoning; the direct answer has none.
	var thoughts *api.Thoughts
	var sink func(madspark.Event)
	if m.mode != "simple" {
		thoughts = api.NewThoughts(out)
		sink = thoughts.Sink
	}
	// A direct answer is one step: its step and progress event are
	// journaled with its outcome, in one write.
	run, err := a.Engine.Start(ctx, engine.RunInfo{Pipeline: "debate", Mode: a.Info.Mode(), Provider: a.Info.Name, Model: a.Info.Model, Params: params, Tags: p.Tags,
		Held: m.mode == "simple"}, sink)
	if err != nil {
		return nil, err
	}
	var onDelta func(string)
	if out != nil {
		onDelta = out.Text
	}
	res, err := m.d.pipe.Run(ctx, run, params, onDelta)
	if cause := server.StopCause(ctx); err != nil && cause != nil {
		// The server stopped: the run is interrupted, resumable.
		err = fmt.Errorf("%w: %w", cause, err)
	} else if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The client went away: nobody will read the answer.
		err = fmt.Errorf("%w: the client closed the connection", madspark.ErrCancelled)
	}
	if ferr := run.Finish(ctx, res, err); ferr != nil {
		a.cfg.Logger.Warn("could not record the run's outcome", "run", run.ID(), "err", ferr)
	}
	if err != nil {
		return nil, err
	}
	c := &server.Completion{Text: res.Answer, ToolCalls: res.ToolCalls, FinishReason: res.FinishReason, Usage: run.Usage(), RunID: run.ID()}
	if thoughts != nil {
		c.Reasoning = thoughts.String()
	}
	return c, nil
}

// Check checks p as Complete will, before the server admits the request:
// its text within the limit, its parameters, its format compiled, and
// the settings of the call that writes the answer against its provider's,
// so that a setting the provider cannot take is refused before the
// debate's other calls are paid for.
func (m *debateModel) Check(_ context.Context, p server.Prompt) error {
	params, err := m.params(p)
	if err != nil {
		return err
	}
	roles := []debate.Role{debate.Direct, debate.Aggregator}
	switch params.Mode {
	case "simple":
		roles = roles[:1]
	case "complex":
		roles = roles[1:]
	}
	for _, role := range roles {
		cfg := params.Roles[role]
		req := &llm.Request{Seed: cfg.Seed, ReasoningEffort: cfg.ReasoningEffort, Verbosity: cfg.Verbosity,
			Tools: params.Tools, ToolChoice: params.ToolChoice, ParallelToolCalls: params.ParallelToolCalls}
		if params.Format != nil {
			req.Schema = &llm.Schema{Name: params.Format.Name}
		}
		if err := provider.Check(cmp.Or(cfg.Provider, m.provider), req); err != nil {
			return err
		}
	}
	return nil
}

// params are the debate's parameters for p: the query, the earlier
// messages as history, the client's instructions, settings and format;
// their text within the limit, validated, the format compiled (and kept
// for the run). An error is the client's (server.InvalidRequest).
func (m *debateModel) params(p server.Prompt) (debate.Params, error) {
	s := m.settings
	s.Mode = m.mode
	history, query, turns := p.Split()
	params, err := s.Params(query)
	if err != nil {
		return params, server.InvalidRequest(err)
	}
	params.History, params.Turns = history, turns
	params.Tools, params.ToolChoice, params.ParallelToolCalls = p.Tools, p.ToolChoice, p.ParallelToolCalls
	if p.MaxToolCalls != nil && *p.MaxToolCalls == 0 {
		// No built-in tool call: the debate's one web search is off. A
		// bound of one or more holds as it is.
		params.NoSearch = true
	}
	answerSettings(&params, p)
	if err := input.CheckPrompt(p.Bytes(), m.maxPrompt); err != nil {
		return params, server.InvalidRequest(err)
	}
	if err := params.Validate(); err != nil {
		return params, server.InvalidRequest(err)
	}
	if err := m.d.pipe.CheckFormat(params.Format); err != nil {
		return params, server.InvalidRequest(err)
	}
	return params, nil
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
		if p.ReasoningEffort != "" {
			cfg.ReasoningEffort = p.ReasoningEffort
		}
		if p.Verbosity != "" {
			cfg.Verbosity = p.Verbosity
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
		ProviderConfigured: !a.Info.Mock, ProviderLocal: a.Info.Local, Breaker: a.breakerWatch, Database: "sqlite", Cache: "database", Endpoint: a.Info.BaseURL}
	if u, err := url.Parse(a.Info.BaseURL); err == nil && a.Info.Local && u.Host != "" {
		i.ProviderAddress = u.Host
	}
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
