package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures a Server.
type Config struct {
	// Addr is where the server will listen; default 127.0.0.1:8080. It is
	// checked, not listened on: Serve takes a listener.
	Addr string
	// Token, when set, is required as "Authorization: Bearer TOKEN" on
	// every request but GET /health. It is required when Addr is not a
	// loopback address.
	Token string
	// Models are served by /v1/chat/completions and listed by /v1/models.
	Models []Model
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body; default 1 MiB.
	MaxBodyBytes int64
	// Version is reported by /health.
	Version string
	// DrainTimeout bounds how long Serve waits for open requests and
	// streams when it shuts down; default 30s.
	DrainTimeout time.Duration
	// Registry holds the metrics served at /metrics; nil means a new one.
	Registry *prometheus.Registry
}

// Server is madspark's HTTP API.
type Server struct {
	cfg     Config
	models  map[string]Model
	order   []string
	mux     *http.ServeMux
	handler http.Handler
	log     *slog.Logger
	metrics *metrics
}

// New checks cfg and builds the server's routes.
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !isLoopback(cfg.Addr) && cfg.Token == "" {
		return nil, fmt.Errorf("server: binding %s (not a loopback address) requires MADSPARK_API_TOKEN", cfg.Addr)
	}
	s := &Server{cfg: cfg, models: map[string]Model{}, mux: http.NewServeMux(), log: log}
	for _, m := range cfg.Models {
		id := m.ID()
		if id == "" {
			return nil, errors.New("server: a model has an empty ID")
		}
		if _, dup := s.models[id]; dup {
			return nil, fmt.Errorf("server: model %q registered twice", id)
		}
		s.models[id] = m
		s.order = append(s.order, id)
	}
	var err error
	if s.metrics, err = newMetrics(cfg.Registry); err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /v1/models", s.listModels)
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{}))
	s.handler = s.logged(s.authorized(s.mux))
	return s, nil
}

// Mux returns the server's routes, so that more can be registered.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// Handler returns the server's handler: routes with authentication,
// metrics and request logs.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx is done, then shuts down gracefully: it
// stops accepting connections and waits, up to DrainTimeout, for open
// requests and streams to finish. It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("server shutting down; draining open requests")
	dctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	err := hs.Shutdown(dctx)
	if errors.Is(<-errc, http.ErrServerClosed) && err == nil {
		return nil
	}
	return err
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.cfg.Version, "models": s.order})
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := []model{}
	for _, id := range s.order {
		data = append(data, model{ID: id, Object: "model", Created: 0, OwnedBy: "madspark"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// authorized requires the bearer token, when one is configured, on every
// route but GET /health.
func (s *Server) authorized(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return next
	}
	want := []byte("Bearer " + s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "", "missing or invalid bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status and size of a response and keeps
// Flush working.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
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
	w.bytes += n
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logged writes one log line and the HTTP metrics per request. It never
// logs headers or bodies.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		route := "unmatched"
		if _, pattern := s.mux.Handler(r); pattern != "" {
			route = pattern
		}
		d := time.Since(start)
		s.metrics.request(route, sw.status, d)
		s.log.Info("http", "method", r.Method, "path", r.URL.Path, "status", sw.status, "bytes", sw.bytes, "duration", d.Round(time.Microsecond))
	})
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
