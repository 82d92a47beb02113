package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"
)

// Config configures a Server. Only Models is needed; the zero value of
// every other field has a safe default.
type Config struct {
	// Addr is the address the server is meant to listen on, such as
	// "127.0.0.1:8080" (the default). New checks it; Serve is given a
	// listener and does not use it.
	Addr string
	// Token, when not empty, is required as "Authorization: Bearer TOKEN"
	// on every request except GET /health. It is required when Addr is not
	// a loopback address, at least MinTokenLength characters long; it may
	// not be blank. It never appears in logs or errors.
	Token string
	// Models are served by POST /v1/chat/completions and POST
	// /v1/responses and listed by GET /v1/models, in this order. Their IDs
	// must be distinct.
	Models []Model
	// Logger receives one line per request and the server's own events;
	// nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes bounds the size of a request body; larger bodies are
	// answered with 413. Zero means 1 MiB.
	MaxBodyBytes int64
	// MaxPromptBytes bounds the text of an OpenAI-compatible request that
	// reaches the model, its instructions and every message together;
	// more is refused with 400 (context_length_exceeded) before the
	// request is admitted. Zero means input.DefaultMaxPromptBytes.
	MaxPromptBytes int
	// Version is reported by GET /health.
	Version string
	// WriteTimeout bounds each write of a streamed chat completion: a
	// client that reads nothing for that long is dropped and its run
	// stopped. Zero means 10s.
	WriteTimeout time.Duration
	// KeepAlive is how long a streamed answer may go without its first text
	// before its stream starts anyway, with an SSE comment, and gets one
	// more every KeepAlive until the text comes, so that a proxy does not
	// close the idle connection (a debate's proposers take a while; a JSON
	// answer is sent whole once checked). Until then a failure is answered
	// with its own HTTP status; after, it ends the stream. Zero means 15s.
	KeepAlive time.Duration
	// DrainTimeout bounds how long Serve, when shutting down, waits for
	// requests and streams in progress to finish before it closes their
	// connections. Zero means 30s.
	DrainTimeout time.Duration
	// Registry holds the server's metrics, which are served at /metrics;
	// nil means a new registry.
	Registry *prometheus.Registry
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may
	// call the server from a browser: their requests get the CORS headers
	// and their preflight requests are answered before authentication.
	// Empty means none (a page served by the server itself needs none).
	CORSOrigins []string
	// Public, when not nil, reports the requests that need no token even
	// when Token is set, such as the web UI's own static files (which hold
	// no data: the page asks for the token and sends it with its API
	// calls). GET /health is always public.
	Public func(r *http.Request) bool
	// Wrap, if set, wraps the server's whole handler, outermost, such as
	// in OpenTelemetry's HTTP server instrumentation.
	Wrap func(http.Handler) http.Handler
	// AllowedHosts are more names, besides the host of Addr, localhost
	// and the loopback addresses, that a request's Host header may give
	// when no Token is configured (such as a name of the machine in
	// /etc/hosts). Requests for any other host are refused with 421, so
	// that a page whose DNS name was rebound to the server's address
	// cannot read from it.
	AllowedHosts []string
	// Middleware, when not nil, wraps the handler of every route, inside
	// authentication (so Authenticated is known): the REST API uses it to
	// put /v1 under the same per-client rate limit as its own routes.
	Middleware func(next http.Handler) http.Handler
	// StreamRoutes are the ServeMux patterns (such as
	// "GET /api/runs/{id}/events") of routes that a browser can follow as a
	// stream (SSE, WebSocket). A page of another origin than the server's
	// own and CORSOrigins is refused them with 403, as it is refused
	// every state-changing request.
	StreamRoutes []string
	// FileRoutes are the paths whose POST body may be a file, text/csv or
	// multipart/form-data, as well as JSON (the REST API's batch upload).
	// Every other body must be application/json.
	FileRoutes []string
	// Admit, when not nil, is asked whether an OpenAI-compatible request
	// may go on, once it is decoded and before its model runs (so before
	// any run is recorded and any byte of the answer sent). It returns the
	// context the model runs in and a function to call when the request
	// ends; or, for a request refused for capacity, an error wrapping
	// middleware.ErrBusy, answered 429 with Retry-After. ctx is marked with
	// middleware.RefuseWhenBusy. Nil admits every request, whose model's
	// calls are then refused when the provider is busy (429 as well, if
	// before the answer's first byte).
	Admit func(ctx context.Context) (context.Context, func(), error)
	// AuthFailures is how many failed authentications a client (an IP
	// address) may make in a burst; one more is allowed every 6 seconds.
	// Beyond them the client's requests get 429 with Retry-After, without
	// their token being checked, so that guessing the token is slow. Zero
	// means 10.
	AuthFailures int
}

// Server is madspark's HTTP API: an OpenAI-compatible chat completions
// endpoint in front of Models, with health, model list and metrics
// endpoints. Create it with New.
type Server struct {
	cfg     Config
	models  map[string]Model
	order   []string
	started time.Time
	mux     *http.ServeMux
	handler http.Handler
	log     *slog.Logger
	metrics *metrics
	origins *Origins
}

// New checks cfg and returns a Server with these routes:
//
//	GET  /health               {"status":"ok","version":...,"models":[...]}, without authentication
//	GET  /v1/models            the models, in OpenAI's list format
//	GET  /v1/models/{model}    one model
//	POST /v1/chat/completions  OpenAI's chat completions, plain or streamed
//	POST /v1/responses         OpenAI's Responses API, plain or streamed
//	GET  /metrics              Prometheus metrics
//
// New fails when a model is nil or has an empty or duplicate ID, when Addr
// is not a host:port, or when Addr is not a loopback address and Token is
// empty.
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := CheckAddr(cfg.Addr, cfg.Token); err != nil {
		return nil, err
	}
	var err error
	s := &Server{cfg: cfg, models: map[string]Model{}, order: []string{}, started: time.Now(), mux: http.NewServeMux(), log: log}
	for i, m := range cfg.Models {
		if m == nil {
			return nil, fmt.Errorf("server: model %d is nil", i)
		}
		id := m.ID()
		if id == "" {
			return nil, fmt.Errorf("server: model %d has an empty ID", i)
		}
		if _, dup := s.models[id]; dup {
			return nil, fmt.Errorf("server: model ID %q is used twice", id)
		}
		s.models[id] = m
		s.order = append(s.order, id)
	}
	if s.metrics, err = newMetrics(cfg.Registry); err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /v1/models", s.listModels)
	s.mux.HandleFunc("GET /v1/models/{model}", s.getModel)
	s.mux.HandleFunc("POST /v1/chat/completions", s.api(s.decodeChat))
	s.mux.HandleFunc("POST /v1/responses", s.api(s.decodeResponses))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{}))
	if s.origins, err = NewOrigins(cfg.CORSOrigins); err != nil {
		return nil, fmt.Errorf("server: CORS %w", err)
	}
	for _, h := range cfg.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/@ ") {
			return nil, fmt.Errorf("server: allowed host %q: want a host name, such as madspark.local", h)
		}
	}
	if cfg.AuthFailures <= 0 {
		s.cfg.AuthFailures = 10
	}
	var routed http.Handler = http.HandlerFunc(s.route)
	if cfg.Middleware != nil {
		routed = cfg.Middleware(routed)
	}
	s.handler = s.logged(s.hostChecked(s.cors(s.crossOrigin(s.authorized(routed)))))
	if cfg.Wrap != nil {
		s.handler = cfg.Wrap(s.handler)
	}
	return s, nil
}

// Routes lists the routes the server serves itself, as ServeMux patterns;
// more are registered on Mux by others.
func (s *Server) Routes() []string {
	return []string{"GET /health", "GET /v1/models", "GET /v1/models/{model}", "POST /v1/chat/completions", "POST /v1/responses", "GET /metrics"}
}

// openAIPath reports whether path is one of the OpenAI-compatible
// endpoints, whose errors are OpenAI's; others get {"error": {"message",
// "type"}} with the REST API's types.
func openAIPath(path string) bool { return path == "/v1" || strings.HasPrefix(path, "/v1/") }

// writeRouteError answers a request that the routing or the
// authentication refused, in the error shape of its path.
func writeRouteError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if openAIPath(r.URL.Path) {
		writeError(w, status, code, msg)
		return
	}
	typ := map[int]string{http.StatusUnauthorized: "unauthorized", http.StatusNotFound: "not_found",
		http.StatusForbidden: "forbidden", http.StatusMisdirectedRequest: "forbidden",
		http.StatusUnsupportedMediaType: "unsupported_media_type", http.StatusTooManyRequests: "rate_limited"}[status]
	if typ == "" {
		typ = "invalid_request"
	}
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg, "type": typ}})
}

// cors adds the CORS headers to the requests of allowed origins and
// answers their preflight requests.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.cfg.CORSOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		if norm, ok := normOrigin(origin); !ok || !s.origins.trusted[norm] {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", "Retry-After, Content-Disposition, Location")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Mux returns the ServeMux that routes the server's requests, so that more
// routes can be registered on it (with Go 1.22 patterns such as
// "GET /v1/runs/{id}"). Routes registered there get the server's
// authentication, request logs and metrics.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// Handler returns the server's handler: the routes of Mux behind
// authentication, request logs and metrics. It suits httptest and
// embedding in another server.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln and serves them until ctx is done. It
// then shuts down gracefully: it closes ln, so that new connections are
// refused, and waits for requests and streams in progress to finish, up to
// Config.DrainTimeout; then it cancels the contexts of those still in
// progress with ErrStopped, waits up to 15 s more for them to return (a
// Model records its run interrupted: StopCause) and closes their
// connections. It returns nil after a clean shutdown, and an error when
// serving fails or the drain timed out. Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Every request's context ends, with ErrStopped as its cause, when
	// the drain is over: their runs are recorded interrupted.
	base, stopRequests := context.WithCancelCause(context.Background())
	defer stopRequests(nil)
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("server shutting down; draining requests in progress", "timeout", s.cfg.DrainTimeout)
	dctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		// The requests still in progress are stopped, and given the time
		// to record their runs, before their connections are cut.
		stopRequests(ErrStopped)
		rctx, cancel := context.WithTimeout(context.Background(), stopRecordTimeout)
		defer cancel()
		_ = hs.Shutdown(rctx)
		_ = hs.Close()
		<-errc
		return fmt.Errorf("server: shutdown: requests still in progress after %s were stopped: %w", s.cfg.DrainTimeout, err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// stopRecordTimeout bounds how long Serve waits, after the drain, for the
// requests it stopped to record their runs (engine.Run.Finish gives its
// writes 10 s).
const stopRecordTimeout = 15 * time.Second

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.cfg.Version, "models": s.order})
}

// modelObject is a model in OpenAI's format.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) modelObject(id string) modelObject {
	return modelObject{ID: id, Object: "model", Created: s.started.Unix(), OwnedBy: "madspark"}
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	data := make([]modelObject, 0, len(s.order))
	for _, id := range s.order {
		data = append(data, s.modelObject(id))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("model")
	if _, ok := s.models[id]; !ok {
		s.writeErr(w, r, modelNotFound(id, s.order))
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject(id))
}

// route serves r with the mux, answering unknown routes and methods with
// OpenAI-style JSON errors instead of the mux's plain text.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" && !catchAll(pattern) {
		if s.jsonOnly(w, r) {
			s.mux.ServeHTTP(w, r)
		}
		return
	}
	if allow := s.allowed(r); len(allow) > 0 {
		// A route of the server's, asked with the wrong method, rather
		// than a path for the catch-all (the web UI) or none.
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeRouteError(w, r, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	if openAIPath(r.URL.Path) {
		// No route of the OpenAI-compatible API: 404 for every method, as
		// OpenAI answers, so that a client calling an endpoint this server
		// lacks is told so rather than that its method is wrong.
		writeRouteError(w, r, http.StatusNotFound, "unknown_url", fmt.Sprintf("Invalid URL (%s %s): this server has no such endpoint", r.Method, r.URL.Path))
		return
	}
	if pattern != "" {
		if s.jsonOnly(w, r) {
			s.mux.ServeHTTP(w, r)
		}
		return
	}
	// The mux's own answer: 404, 405 (with Allow) or a redirect.
	cw := &captureWriter{header: http.Header{}}
	h.ServeHTTP(cw, r)
	switch cw.status {
	case http.StatusNotFound:
		writeRouteError(w, r, http.StatusNotFound, "unknown_url", fmt.Sprintf("unknown URL: %s %s", r.Method, r.URL.Path))
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", cw.header.Get("Allow"))
		writeRouteError(w, r, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
	default:
		for k, v := range cw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(cw.status)
		_, _ = w.Write(cw.body)
	}
}

// catchAll reports whether pattern matches every path ("/", "GET /").
func catchAll(pattern string) bool {
	_, path, _ := strings.Cut(pattern, " ")
	if path == "" {
		path = pattern
	}
	return path == "/"
}

// allowed returns the methods that r's path has a route of its own for,
// when r's method is not among them; nil otherwise.
func (s *Server) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); p != "" && !catchAll(p) {
			if m == r.Method || (m == http.MethodGet && r.Method == http.MethodHead) {
				return nil
			}
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	return allow
}

// captureWriter records a small response.
type captureWriter struct {
	header http.Header
	status int
	body   []byte
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	c.body = append(c.body, b...)
	return len(b), nil
}

// authorized requires the bearer token, when one is configured, on every
// request except GET /health and Config.Public's.
//
// A request without any credential is answered 401 and counts for
// nothing: a page of another site can make the user's browser send such
// requests (an <img> does), and they guess nothing. A request with a wrong
// credential counts as a failure of its address; after Config.AuthFailures
// of them (one more every 6 s), that address gets 429 without its
// credential being checked, so that guessing the token is slow. Only
// requests that carry a credential, which no page of another site can make
// a browser send (a header needs a preflight the server does not grant),
// can use up an address's failures.
func (s *Server) authorized(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return next
	}
	// Comparing digests takes the same time whatever the token's length.
	want := sha256.Sum256([]byte(strings.TrimSpace(s.cfg.Token)))
	failures := newFailureLimiter(rate.Every(6*time.Second), s.cfg.AuthFailures)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead)) || (s.cfg.Public != nil && s.cfg.Public(r)) {
			next.ServeHTTP(w, r)
			return
		}
		credential := strings.TrimSpace(r.Header.Get("Authorization"))
		if credential == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="madspark"`)
			writeRouteError(w, r, http.StatusUnauthorized, "invalid_api_key", "missing API key: send Authorization: Bearer <MADSPARK_API_TOKEN>")
			return
		}
		client := remoteIP(r)
		if wait := failures.wait(client); wait > 0 {
			secs := int((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", fmt.Sprint(secs))
			writeRouteError(w, r, http.StatusTooManyRequests, "rate_limit_exceeded",
				fmt.Sprintf("too many failed authentications from this address; retry in %d s", secs))
			return
		}
		scheme, token, _ := strings.Cut(credential, " ")
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			failures.fail(client)
			w.Header().Set("WWW-Authenticate", `Bearer realm="madspark", error="invalid_token"`)
			writeRouteError(w, r, http.StatusUnauthorized, "invalid_api_key", "invalid API key: send Authorization: Bearer <MADSPARK_API_TOKEN>")
			return
		}
		infoOf(r.Context()).authenticated = true
		next.ServeHTTP(w, r)
	})
}

// requestInfo is what a handler tells the request log about a request.
type requestInfo struct {
	model  string
	stream bool
	runID  string
	err    error
	// authenticated: the request carried the configured token.
	authenticated bool
}

type infoKey struct{}

// infoOf returns the request's requestInfo, or a throwaway one when the
// request did not come through Server.logged.
func infoOf(ctx context.Context) *requestInfo {
	if info, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
}

// Authenticated reports whether the request of ctx, served by a Server,
// carried the server's configured token (Config.Token). It is false when no
// token is configured, for public requests (GET /health, Config.Public),
// and for a context that did not come from a Server's handler; so a bearer
// token a client merely sends says nothing about who it is unless this is
// true.
func Authenticated(ctx context.Context) bool {
	info, ok := ctx.Value(infoKey{}).(*requestInfo)
	return ok && info.authenticated
}

// statusWriter records the status and size of a response. Unwrap lets
// http.ResponseController reach the connection's Flush.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logged writes one log line and records the HTTP metrics for each
// request. It never logs headers, query strings or bodies.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		d := time.Since(start)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		route := r.Pattern
		if route == "" {
			_, route = s.mux.Handler(r)
		}
		if route == "" {
			route = "unmatched" // bounded label values
		}
		s.metrics.request(route, sw.status, d)
		level := slog.LevelInfo
		if info.err != nil && (sw.status >= 500 || (info.stream && !errors.Is(info.err, context.Canceled))) {
			level = slog.LevelWarn
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", sw.status),
			slog.Duration("duration", d.Round(time.Microsecond)), slog.Int64("bytes", sw.bytes),
		}
		if info.model != "" {
			attrs = append(attrs, slog.String("model", info.model), slog.Bool("stream", info.stream))
		}
		if info.runID != "" {
			attrs = append(attrs, slog.String("run_id", info.runID))
		}
		if info.err != nil {
			attrs = append(attrs, slog.String("err", oneLine(info.err.Error())))
		}
		s.log.LogAttrs(r.Context(), level, "http request", attrs...)
	})
}

// MinTokenLength is the shortest token (MADSPARK_API_TOKEN) a server
// listening beyond loopback accepts, in characters: 32, such as the hex of
// 16 random bytes (openssl rand -hex 16).
const MinTokenLength = 32

// CheckAddr reports whether a server may listen on addr, a host:port,
// with token: a token that is set must not be blank, and an address that
// is not a loopback one requires a token of at least MinTokenLength
// characters (spaces around it do not count). New checks it too; a caller
// can check it before it starts anything else.
func CheckAddr(addr, token string) error {
	loopback, err := isLoopback(addr)
	if err != nil {
		return fmt.Errorf("server: address %q: %w", addr, err)
	}
	t := strings.TrimSpace(token)
	switch {
	case token != "" && t == "":
		return fmt.Errorf("server: MADSPARK_API_TOKEN is set but blank; set a token of at least %d characters (openssl rand -hex 16) or unset it", MinTokenLength)
	case !loopback && t == "":
		return fmt.Errorf("server: listening on %s, which is not a loopback address, requires a token (MADSPARK_API_TOKEN) of at least %d characters (openssl rand -hex 16)", addr, MinTokenLength)
	case !loopback && utf8.RuneCountInString(t) < MinTokenLength:
		return fmt.Errorf("server: listening on %s, which is not a loopback address, requires a token (MADSPARK_API_TOKEN) of at least %d characters, got %d (openssl rand -hex 16 makes one)", addr, MinTokenLength, utf8.RuneCountInString(t))
	}
	return nil
}

// isLoopback reports whether addr, a host:port, names a loopback address.
// An empty host (":8080") means every interface.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
