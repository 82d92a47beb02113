package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/tokens"
)

// store is what a harness runs on: either store.
type store interface {
	madspark.Store
}

// options tune a harness.
type options struct {
	latency  time.Duration // per mock call
	workers  int           // 0: no worker works the queue
	token    string
	origins  []string
	config   func(*api.Config)
	postgres string // a PostgreSQL URL instead of a SQLite file
	// client, when not nil, wraps the mock provider.
	client func(llm.Client) llm.Client
}

// harness is the real API over a real store, queue and event hub, with
// the mock provider, served by the real server on a loopback port.
type harness struct {
	t      testing.TB
	db     store
	reg    *pipeline.Registry
	queue  *jobs.Queue
	hub    *events.Hub
	engine *engine.Engine
	h      *api.Handler
	srv    *server.Server
	url    string
	token  string
	doc    *openapi3.T
	router routers.Router
}

func responders() map[string]mock.Responder {
	all := map[string]mock.Responder{}
	for _, m := range []map[string]mock.Responder{spark.MockResponders(), chaos.MockResponders(), debate.MockResponders(), assess.MockResponders(), proposal.MockResponders(), eval.MockResponders()} {
		maps.Copy(all, m)
	}
	return all
}

func registry(t testing.TB, db madspark.IdeaStore) *pipeline.Registry {
	t.Helper()
	reg := pipeline.NewRegistry()
	count, err := debate.NewTokenCounter()
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []func() (pipeline.Definition, error){
		spark.Definition,
		func() (pipeline.Definition, error) { return chaos.Definition(db) },
		func() (pipeline.Definition, error) { return debate.Definition(count, nil, nil) },
		func() (pipeline.Definition, error) {
			return assess.Definition(assess.Config{Mock: true, NoSearchNote: "web tools off in mock mode"})
		},
		func() (pipeline.Definition, error) {
			return proposal.Definition([]search.Provider{scholar.NewOffline()}, nil, nil)
		},
	} {
		d, err := def()
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func newHarness(t testing.TB, o options) *harness {
	t.Helper()
	ctx := context.Background()
	hs := &harness{t: t, token: o.token}
	cfg := jobs.Config{Mode: "mock", Provider: mock.Name, Model: mock.Model, Concurrency: o.workers}
	if o.postgres != "" {
		db, err := postgres.Open(ctx, o.postgres)
		if err != nil {
			t.Fatal(err)
		}
		hs.db, cfg.Postgres = db, db.Pool()
	} else {
		db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "madspark.db"))
		if err != nil {
			t.Fatal(err)
		}
		hs.db, cfg.SQLite = db, db.WritePool()
	}
	t.Cleanup(func() { hs.db.Close() })
	hs.hub = events.New(hs.db, events.Options{PollInterval: 20 * time.Millisecond})
	t.Cleanup(func() { hs.hub.Close() })
	var opts []mock.Option
	if o.latency > 0 {
		opts = append(opts, mock.WithLatency(o.latency))
	}
	var client llm.Client = mock.New(responders(), opts...)
	if o.client != nil {
		client = o.client(client)
	}
	hs.engine = &engine.Engine{Store: hs.db, Client: client, Events: hs.hub}
	hs.reg = registry(t, hs.db)
	evalDef, err := eval.Definition(eval.Deps{Registry: hs.reg, Engine: hs.engine})
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.reg.Register(evalDef); err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Registry, cfg.Engine = hs.db, hs.reg, hs.engine
	q, err := jobs.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs.queue = q
	if o.workers > 0 {
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = q.Stop(sctx)
		})
	}
	acfg := api.Config{
		Registry: hs.reg, Queue: q, Store: hs.db, Events: hs.hub, Engine: hs.engine,
		Info:           api.Info{Version: "test", Mode: "mock", Provider: mock.Name, Model: mock.Model, Database: "sqlite"},
		Logger:         slog.New(slog.DiscardHandler),
		RateLimit:      -1,
		AllowedOrigins: o.origins,
		Heartbeat:      50 * time.Millisecond,
		ChatModels:     chatModels(t, hs.engine),
	}
	if o.config != nil {
		o.config(&acfg)
	}
	hs.h, err = api.New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.h.Close)
	counter, err := tokens.New()
	if err != nil {
		t.Fatal(err)
	}
	models := append([]server.Model{}, api.PipelineModels(hs.reg, hs.engine, acfg.Info, counter, "debate")...)
	hs.srv, err = server.New(server.Config{Token: o.token, Models: models, Version: "test", CORSOrigins: o.origins, Middleware: hs.h.RateLimited, FileRoutes: hs.h.FileRoutes(), StreamRoutes: hs.h.StreamRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	hs.h.Register(hs.srv.Mux())
	ts := httptest.NewServer(hs.srv.Handler())
	t.Cleanup(ts.Close)
	hs.url = ts.URL

	raw, err := hs.h.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	hs.doc, err = openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("load the OpenAPI document: %v", err)
	}
	if hs.router, err = legacy.NewRouter(hs.doc); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	return hs
}

// resp is an answer read whole.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", r.status, err, r.body)
	}
}

// apiError is the error body.
type apiError struct {
	Error struct {
		Message, Type, Field string
	} `json:"error"`
	Duplicates *struct {
		Recommendation string `json:"recommendation"`
		Similar        []struct {
			Similarity float64 `json:"similarity"`
		} `json:"similar"`
	} `json:"duplicates"`
}

func (r resp) err(t testing.TB) apiError {
	t.Helper()
	var e apiError
	r.json(t, &e)
	if e.Error.Message == "" || e.Error.Type == "" || strings.Contains(e.Error.Message, "\n") {
		t.Fatalf("answer %d is not a one-line JSON error: %s", r.status, r.body)
	}
	return e
}

// do sends a request and checks the answer against the OpenAPI document:
// its status is documented for the route and, for JSON, its body has the
// documented schema (and a successful request's body too).
func (hs *harness) do(method, path string, body any, header ...string) resp {
	hs.t.Helper()
	var rd io.Reader
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			hs.t.Fatal(err)
		}
	}
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, hs.url+path, rd)
	if err != nil {
		hs.t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if hs.token != "" {
		req.Header.Set("Authorization", "Bearer "+hs.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		hs.t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		hs.t.Fatal(err)
	}
	out := resp{status: res.StatusCode, header: res.Header, body: b}
	hs.validate(req, raw, out)
	return out
}

// validate checks an answer (and, when it succeeded, its request) against
// the document.
func (hs *harness) validate(req *http.Request, reqBody []byte, r resp) {
	hs.t.Helper()
	vreq := req.Clone(context.Background())
	vreq.URL.Scheme, vreq.URL.Host, vreq.Host = "", "", ""
	route, params, err := hs.router.FindRoute(vreq)
	if err != nil {
		if r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
			hs.t.Errorf("%s %s answered %d but is not documented: %v", req.Method, req.URL.Path, r.status, err)
		}
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if reqBody != nil {
		vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	if r.status < 400 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			hs.t.Errorf("%s %s: the request that succeeded does not match the document: %v", req.Method, req.URL.Path, err)
		}
	}
	ct := r.header.Get("Content-Type")
	opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	if !strings.HasPrefix(ct, "application/json") {
		opts.ExcludeResponseBody = true
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.status, Header: r.header, Options: opts}
	out.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		hs.t.Errorf("%s %s: answer %d does not match the document: %v\n%s", req.Method, req.URL.Path, r.status, err, clip(r.body))
	}
	validated.add(route.Method + " " + route.Path)
}

// validated records the routes whose answers were checked against the
// document, across tests.
var validated = &routeSet{m: map[string]bool{}}

type routeSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *routeSet) add(k string) {
	s.mu.Lock()
	s.m[k] = true
	s.mu.Unlock()
}

func (s *routeSet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// startRun starts a run and returns its ID.
func (hs *harness) startRun(pipeline string, params any) string {
	hs.t.Helper()
	r := hs.do("POST", "/api/runs", map[string]any{"pipeline": pipeline, "params": params})
	if r.status != http.StatusAccepted {
		hs.t.Fatalf("POST /api/runs %s: %d %s", pipeline, r.status, r.body)
	}
	var out api.StartRunResponse
	r.json(hs.t, &out)
	return out.RunID
}

// run reads a run.
func (hs *harness) run(id string) api.Run {
	hs.t.Helper()
	r := hs.do("GET", "/api/runs/"+id, nil)
	if r.status != http.StatusOK {
		hs.t.Fatalf("GET run %s: %d %s", id, r.status, r.body)
	}
	var out api.Run
	r.json(hs.t, &out)
	return out
}

// wait waits until run id is finished and returns it.
func (hs *harness) wait(id string) api.Run {
	hs.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		run := hs.run(id)
		if run.Status.Final() {
			return run
		}
		if time.Now().After(deadline) {
			hs.t.Fatalf("run %s still %s after 30s", id, run.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// succeeded starts a run and waits until it succeeded.
func (hs *harness) succeeded(pipeline string, params any) api.Run {
	hs.t.Helper()
	run := hs.wait(hs.startRun(pipeline, params))
	if run.Status != madspark.RunSucceeded {
		hs.t.Fatalf("%s run %s: %s: %s", pipeline, run.RunID, run.Status, run.Error)
	}
	return run
}

// sparkRun runs spark synchronously in the engine (no queue needed) and
// returns its ID.
func (hs *harness) sparkRun(topic string) string {
	hs.t.Helper()
	r := hs.do("POST", "/api/generate-ideas", map[string]any{"topic": topic, "context": "cheap", "num_candidates": 4})
	if r.status != http.StatusOK {
		hs.t.Fatalf("generate-ideas: %d %s", r.status, r.body)
	}
	var rep struct {
		RunID string `json:"run_id"`
	}
	r.json(hs.t, &rep)
	return rep.RunID
}
