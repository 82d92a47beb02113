// Package mcpserver serves madspark over the Model Context Protocol, with
// the protocol's official Go SDK, so that assistants and editors that speak
// it (Claude Desktop, VS Code, command-line agents) run the pipelines:
//
//   - every registered pipeline is a tool of the same name, whose input
//     schema is the pipeline's parameters' JSON Schema (the one the REST
//     API and the web UI's forms use) and whose output schema is its
//     result's, with the run's ID;
//   - a call is a run like any other (journal, response cache, cost,
//     repairs, the inspector), made in this process; its result comes back
//     as structured content, its Markdown report as text;
//   - with a progress token, each stage of the run is a progress
//     notification, and a run never goes silent for longer than
//     Config.Heartbeat; the client's cancel notification cancels the run;
//   - runs are resources, madspark://runs/{id} (the run as JSON), the
//     recent ones listed, and a succeeded run's Markdown and PDF exports are
//     madspark://runs/{id}/export.md and madspark://runs/{id}/export.pdf.
//
// The same Server serves a client on standard input and output (ServeStdio,
// `madspark mcp`) and clients over Streamable HTTP (Handler, mounted at
// /mcp by `madspark serve`, behind the server's host, origin and token
// checks).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/pipeline"
)

// Store is what the server reads runs from.
type Store interface {
	madspark.RunStore
	madspark.EventStore
}

// Config configures a Server. Registry, Engine and Store are required.
type Config struct {
	// Registry holds the pipelines served as tools.
	Registry *pipeline.Registry
	// Engine records the runs; its Events, if set, get their events too.
	Engine *engine.Engine
	// Store is read for the runs as resources.
	Store Store
	// Mode ("mock" or "live"), Provider and Model are recorded with each
	// run.
	Mode, Provider, Model string
	// Version is the server's version, told to clients.
	Version string
	// Logger receives the server's warnings; nil discards them.
	Logger *slog.Logger
	// PDFFont is the PDF export's fallback font (export.Options.Font).
	PDFFont []byte
	// Heartbeat is the longest a run with a progress token goes without a
	// progress notification: when no stage began for that long, the
	// current one is told again with the time it has taken. Zero means
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// Timeout bounds each run; zero means DefaultTimeout.
	Timeout time.Duration
	// ResumeArgs are what `madspark resume RUN_ID` needs besides the ID to
	// finish a run of this server, such as "--pipelines DIR" (quoted for
	// a shell), which a failed call's message tells.
	ResumeArgs string
	// Admit, when not nil, is asked whether a tool call may start its run,
	// as server.Config.Admit is for /v1 (ctx is marked with
	// middleware.RefuseWhenBusy): a refusal for capacity is the call's
	// error, saying when to call again, and records no run.
	Admit func(ctx context.Context) (context.Context, func(), error)
	// MaxSessions bounds the sessions over HTTP kept at once: a new one
	// takes the place of the least recently used idle one, and is refused
	// when all are busy. Zero means DefaultMaxSessions.
	MaxSessions int
	// SessionIdle is how long a session over HTTP may go without a
	// request before it is forgotten. Zero means DefaultSessionIdle.
	SessionIdle time.Duration
}

// Defaults of Config.
const (
	DefaultHeartbeat = 3 * time.Second
	DefaultTimeout   = 30 * time.Minute
)

// Server is madspark's MCP server. Create it with New.
type Server struct {
	cfg Config
	mcp *mcp.Server
	log *slog.Logger
	// calls are the tool calls in progress; sessions and requests those
	// over HTTP (guard.go).
	calls    calls
	sessions sessions
	requests requests
}

// New returns a Server with a tool for each pipeline of cfg.Registry and
// the runs of cfg.Store as resources. It fails when a pipeline's schemas
// cannot be had.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil || cfg.Engine == nil || cfg.Store == nil {
		return nil, errors.New("mcpserver: Registry, Engine and Store are required")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "madspark", Title: "madspark", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       log,
		// Tools and resources, and no list-changed notifications: the
		// tools are fixed, and runs are listed as they are asked for.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
	})
	for _, d := range cfg.Registry.List() {
		t, err := s.tool(d)
		if err != nil {
			return nil, err
		}
		s.mcp.AddTool(t, s.call(d))
	}
	s.addResources()
	return s, nil
}

const instructions = "madspark runs multi-agent LLM pipelines. Each tool is a pipeline: its arguments are the pipeline's " +
	"parameters, and it returns the result as structured content with the run's ID (run_id), and its report in " +
	"Markdown. Runs take from seconds to minutes and report their stages as progress. Every run is kept: read it " +
	"again as the resource madspark://runs/{run_id}, its report as madspark://runs/{run_id}/export.md."

// Connect serves one client over t, such as one of the SDK's in-memory
// transports, until either side closes the session.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, t, nil)
}

// Handler returns the Streamable HTTP handler of the server, to mount at
// /mcp behind the HTTP server's checks of hosts, origins and tokens, which
// it leaves to that server: it checks none itself.
//
// A tool call's run stops, recorded cancelled (resumable), when its client
// ends the session (DELETE) or drops the connection the call came in on;
// at most Config.MaxSessions sessions are kept (the least recently used
// idle one makes room for a new one; when all are busy a new one is
// refused with 503), an idle one is forgotten after Config.SessionIdle,
// and a body is at most MaxBodyBytes.
func (s *Server) Handler() http.Handler {
	return s.guard(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger: s.log,
		// The HTTP server checks the Host header, with the names it was
		// told to answer to, and the token that lets remote clients in.
		DisableLocalhostProtection: true,
		// Idle sessions are forgotten, so that clients that went away
		// without saying so hold nothing.
		SessionTimeout:      s.cfg.SessionIdle,
		MaxRequestBodyBytes: MaxBodyBytes,
	}))
}

// closeWait bounds how long Close waits for the runs it stopped to be
// recorded: Run.Finish gives its writes 10 s.
const closeWait = 15 * time.Second

// Close stops the tool calls in progress, waits (up to 15 s) until their
// runs are recorded interrupted (resumable), then ends every session, so
// that streams open on Handler end and an HTTP server can drain. Calls
// made after it are refused.
func (s *Server) Close() {
	s.calls.stopAll(errServerStopped)
	if !s.calls.wait(closeWait) {
		s.log.Warn("tool calls still running after the server stopped them; their runs will show interrupted once their leases lapse", "waited", closeWait)
	}
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}

// errResult is a tool call's error, in one line.
func errResult(msg string, content ...mcp.Content) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: append([]mcp.Content{&mcp.TextContent{Text: msg}}, content...)}
}

// oneLine joins the lines of s.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// tool describes pipeline d as a tool.
func (s *Server) tool(d pipeline.Definition) (*mcp.Tool, error) {
	in, err := s.cfg.Registry.ParamsSchema(d.Name)
	if err != nil {
		return nil, err
	}
	out, err := outputSchema(s.cfg.Registry, d.Name)
	if err != nil {
		return nil, err
	}
	desc := d.Description
	if desc == "" {
		desc = "The " + d.Name + " pipeline."
	}
	desc += " Runs it as a recorded run (progress while it runs; cancel stops it) and returns its result, " +
		"its report in Markdown and its run_id; the run is the resource madspark://runs/{run_id}."
	yes, no := true, false
	return &mcp.Tool{
		Name: d.Name, Title: d.Title, Description: desc, InputSchema: in, OutputSchema: out,
		// A run calls models, and perhaps searches the web; it changes
		// nothing but madspark's own records.
		Annotations: &mcp.ToolAnnotations{Title: d.Title, ReadOnlyHint: false, DestructiveHint: &no, OpenWorldHint: &yes},
	}, nil
}

// outputSchema is the result schema of pipeline name with the run's ID.
func outputSchema(reg *pipeline.Registry, name string) (json.RawMessage, error) {
	raw, err := reg.ResultSchema(name)
	if err != nil {
		return nil, err
	}
	s := map[string]any{"type": "object"}
	if raw != nil {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("mcpserver: result schema of %s: %w", name, err)
		}
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	props["run_id"] = map[string]any{"type": "string", "description": "The run's ID: the resource madspark://runs/{run_id}, and what madspark resume and the REST API take."}
	req, _ := s["required"].([]any)
	if !slices.Contains(req, any("run_id")) {
		s["required"] = append(req, "run_id")
	}
	return json.Marshal(s)
}

// toolError turns an error of a run into what the client is told: a
// provider's failure in plain words, and the run to resume.
func (s *Server) toolError(runID string, err error) string {
	resume := "madspark resume " + runID
	if s.cfg.ResumeArgs != "" {
		resume += " " + s.cfg.ResumeArgs
	}
	if pe, ok := errors.AsType[*madspark.RunHeldError](err); ok {
		return oneLine(pe.Error())
	}
	// In words (package failure), without the provider's address.
	line := failure.Scrub(failure.Of(oneLine(err.Error())).Sentence())
	return oneLine(fmt.Sprintf("run %s (%s/%s) failed: %s The finished steps are kept; once the cause is fixed, %s finishes the run.",
		runID, s.cfg.Provider, s.cfg.Model, line, resume))
}
