// Package api is madspark's REST API for runs, their progress, their
// exports, batches of runs from a CSV or JSON file (package batch) and
// bookmarks: the JSON endpoints under /api/, the progress
// WebSocket under /ws/, and GET /health/detailed, with an OpenAPI 3.1
// document of them all at /api/openapi.json.
//
// It knows pipelines only through the registry (package pipeline): a
// registered pipeline appears in GET /api/pipelines with its parameters'
// JSON Schema and defaults, and can be started, followed, exported and
// bookmarked with no change here. Runs go through the job queue (package
// jobs); their progress comes from the event hub (package events), so a
// client sees the events of the runs it asks for and of no other, and a
// client that connects late first receives what it missed.
//
// The handlers are mounted on the server's mux (server.Server.Mux), behind
// its authentication, request logs and metrics; this package adds per-client
// rate limits and body size limits. Errors are JSON: {"error": {"message",
// "type", "field"}}.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/server"
)

// Queue is what the API needs of the job queue (*jobs.Queue).
type Queue interface {
	Enqueue(ctx context.Context, req jobs.Request) (*madspark.Run, error)
	EnqueueMany(ctx context.Context, reqs []jobs.Request) ([]*madspark.Run, error)
	// Cancel returns jobs.ErrFinished, jobs.ErrNotQueued or
	// madspark.ErrNotFound (wrapped) when the run cannot be cancelled.
	Cancel(ctx context.Context, runID string) (madspark.RunStatus, error)
	// Resume queues a failed, cancelled or interrupted run to be resumed;
	// another status gives jobs.ErrNotResumable (wrapped).
	Resume(ctx context.Context, runID string) (*madspark.Run, error)
}

// Events is what the API needs of the event hub (*events.Hub).
type Events interface {
	Subscribe(ctx context.Context, runID string, afterSeq int64) (<-chan madspark.Event, error)
}

// Store is what the API reads and writes: runs, their events, batches,
// bookmarks, conversations, and the workers' leases (for health).
type Store interface {
	madspark.RunStore
	madspark.BatchStore
	madspark.EventStore
	madspark.BookmarkStore
	madspark.LeaseStore
	madspark.RunLeaseStore
	madspark.ConversationStore
}

// Info describes the serving process, for GET /health/detailed.
type Info struct {
	Version string
	// Mode is "mock" or "live"; Provider and Model are those of the runs
	// this process starts.
	Mode, Provider, Model string
	// ProviderConfigured reports whether credentials for a model provider
	// are set (false in mock mode for want of them).
	ProviderConfigured bool
	// ProviderLocal reports a model served on this machine or its network
	// (the mock, Ollama, a local OpenAI-compatible server), and
	// ProviderAddress, for such a server, the host and port it is reached
	// at.
	ProviderLocal   bool
	ProviderAddress string
	// Breaker, when not nil, says whether the provider's calls are paused
	// (GET /api/provider).
	Breaker *middleware.BreakerWatch
	// Endpoint is the provider's address, named in error messages to a
	// client on this machine only (package failure).
	Endpoint string
	// Database names the store's driver: "sqlite" or "postgres".
	Database string
	// Cache names the response cache's durable tier ("redis", or
	// "database" when it is the store), and CachePing checks it; nil means
	// the cache is the database.
	Cache     string
	CachePing func(ctx context.Context) error
}

// Defaults of Config.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxImportBytes = 16 << 20
	DefaultMaxImportItems = 10000
	DefaultRateLimit      = 20
	DefaultRateBurst      = 120
	DefaultSyncTimeout    = 10 * time.Minute
	DefaultWriteTimeout   = 10 * time.Second
)

// Config configures a Handler.
type Config struct {
	// Registry, Queue, Store and Events are required.
	Registry *pipeline.Registry
	Queue    Queue
	Store    Store
	Events   Events
	// Engine runs the synchronous POST /api/generate-ideas in the
	// request; required.
	Engine *engine.Engine
	Info   Info
	// Logger receives problems; nil discards.
	Logger *slog.Logger
	// MaxBodyBytes bounds a JSON request body (413 beyond); 0 means
	// DefaultMaxBodyBytes. MaxImportBytes bounds a bookmarks import; 0
	// means DefaultMaxImportBytes.
	MaxBodyBytes, MaxImportBytes int64
	// MaxImportItems bounds the bookmarks of one import (413 beyond); 0
	// means DefaultMaxImportItems.
	MaxImportItems int
	// RateLimit is each client's sustained rate of requests per second
	// (a token bucket per client: the server's token when the server
	// checked it, else the IP address, an IPv6 one by its /64), and
	// RateBurst the bucket's size; 0 means the defaults, a negative
	// RateLimit no limit.
	RateLimit float64
	RateBurst int
	// AllowedOrigins are the origins (scheme://host[:port]) of other
	// sites whose pages may open the progress WebSocket, as
	// MADSPARK_CORS_ORIGINS allows them the rest of the API; the page's
	// own origin always may.
	AllowedOrigins []string
	// PDFFont is the fallback TrueType font of PDF exports; nil for none.
	PDFFont []byte
	// SyncTimeout bounds a synchronous run; 0 means DefaultSyncTimeout.
	SyncTimeout time.Duration
	// Heartbeat is how often an idle progress stream sends a keep-alive;
	// 0 means 15s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to a progress stream (SSE or
	// WebSocket): a client that reads nothing for that long is dropped,
	// and its subscription with it. 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// BatchPoll is how often a batch's progress stream reads the batch;
	// 0 means 500ms.
	BatchPoll time.Duration
	// ChatModels answer conversations (/api/conversations), the first
	// by default: the debate assistant, as madspark-debate and
	// madspark-direct. Each answer is recorded as a run by the model.
	// Without any, conversations can be kept but not answered.
	ChatModels []server.Model
	// BrokenPipelines are the pipeline files the server could not serve,
	// listed by GET /api/pipelines beside the pipelines it serves.
	BrokenPipelines []BrokenPipeline
	// WebUI says that the server also serves the web UI at / (mounted by
	// its caller), so that the OpenAPI document lists GET / too.
	WebUI bool
}

// Handler serves the API. Create one with New, mount it with Register,
// and call Close when the server stops.
type Handler struct {
	cfg     Config
	log     *slog.Logger
	routes  []route
	limiter *limiter
	batches *batch.Service

	docOnce sync.Once
	doc     []byte
	docErr  error

	// base is cancelled by Close; progress streams end with it.
	base    context.Context
	stopAll context.CancelFunc

	// swept is when runs whose process is gone were last looked for
	// (Unix nanoseconds).
	swept atomic.Int64

	// finished keeps what batch rows show of runs that ended.
	finished finishedCache
}

// route is one endpoint: its method and path (a ServeMux pattern, which is
// also its OpenAPI path), its handler and its documentation.
type route struct {
	method, path string
	handle       func(w http.ResponseWriter, r *http.Request) error
	doc          operation
}

// New checks cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Registry == nil || cfg.Queue == nil || cfg.Store == nil || cfg.Events == nil || cfg.Engine == nil {
		return nil, errors.New("api: Registry, Queue, Store, Events and Engine are required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxImportBytes <= 0 {
		cfg.MaxImportBytes = DefaultMaxImportBytes
	}
	if cfg.MaxImportItems <= 0 {
		cfg.MaxImportItems = DefaultMaxImportItems
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = DefaultRateBurst
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = DefaultSyncTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.BatchPoll <= 0 {
		cfg.BatchPoll = 500 * time.Millisecond
	}
	for _, o := range cfg.AllowedOrigins {
		if _, err := originHost(o); err != nil {
			return nil, fmt.Errorf("api: allowed origin %q: %w", o, err)
		}
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, batches: batch.New(cfg.Registry, cfg.Queue, cfg.Store)}
	h.base, h.stopAll = context.WithCancel(context.Background())
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if cfg.RateLimit > 0 {
		h.limiter = newLimiter(cfg.RateLimit, cfg.RateBurst)
	}
	h.routes = h.table()
	return h, nil
}

// FileRoutes are the API's paths whose POST body is a file (text/csv or
// multipart/form-data) rather than JSON, for server.Config.FileRoutes.
func (h *Handler) FileRoutes() []string { return []string{"/api/batches"} }

// StreamRoutes are the API's routes that a browser follows as a stream
// (the progress streams, over SSE and WebSocket), as ServeMux patterns,
// for server.Config.StreamRoutes: a page of another origin is refused
// them as it is refused every state-changing request.
func (h *Handler) StreamRoutes() []string {
	var out []string
	for _, rt := range h.routes {
		if rt.stream() {
			out = append(out, rt.method+" "+rt.path)
		}
	}
	return out
}

// stream reports whether rt is a progress stream a browser can follow.
func (rt route) stream() bool { return rt.method == http.MethodGet && rt.doc.tag == "progress" }

// Register adds the API's routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	for _, rt := range h.routes {
		mux.Handle(rt.method+" "+rt.path, h.serve(rt))
	}
}

// Route is an endpoint of the API.
type Route struct{ Method, Path string }

// Routes lists the API's endpoints, as Register adds them.
func (h *Handler) Routes() []Route {
	out := make([]Route, len(h.routes))
	for i, rt := range h.routes {
		out[i] = Route{rt.method, rt.path}
	}
	return out
}

// Close ends the progress streams in progress, so that a server can shut
// down without waiting for the runs they follow; their clients reconnect
// and resume where they were.
func (h *Handler) Close() { h.stopAll() }

// serve runs a route behind the rate limit and answers its error.
func (h *Handler) serve(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.limiter != nil {
			if wait, ok := h.limiter.allow(r); !ok {
				secs := max(1, int((wait+time.Second-1)/time.Second))
				w.Header().Set("Retry-After", fmt.Sprint(secs))
				h.writeError(w, r, errorf(http.StatusTooManyRequests, typeRateLimited, "",
					"too many requests from this client; retry in %d s", secs))
				return
			}
		}
		if err := rt.handle(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
}

// RateLimited wraps next, a handler of the server's own routes, with the
// API's per-client rate limit on the OpenAI-compatible routes (/v1/...)
// and on MCP (/mcp), answering 429 with Retry-After beyond it; the API's
// routes have it already. Pass it as server.Config.Middleware.
func (h *Handler) RateLimited(next http.Handler) http.Handler {
	if h.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/mcp" {
			if wait, ok := h.limiter.allow(r); !ok {
				secs := max(1, int((wait+time.Second-1)/time.Second))
				w.Header().Set("Retry-After", fmt.Sprint(secs))
				writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
					"message": fmt.Sprintf("too many requests from this client; retry in %d s", secs),
					"type":    "rate_limit_error", "param": nil, "code": "rate_limit_exceeded"}})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
