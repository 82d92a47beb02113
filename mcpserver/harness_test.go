package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/mcpserver"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/store/postgres"
	"github.com/madspark/madspark/store/postgres/pgtest"
	"github.com/madspark/madspark/store/sqlite"
)

// provider is the in-process model: the mock's answers, every call
// counted, and a gate a test may hold calls at.
type provider struct {
	inner llm.Client

	mu    sync.Mutex
	calls int
	// gate, when set, is called before each call is answered; its error
	// is the call's.
	gate func(ctx context.Context, req *llm.Request) error
}

func (p *provider) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	p.calls++
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		if err := gate(ctx, req); err != nil {
			return nil, err
		}
	}
	return p.inner.Generate(ctx, req)
}

// count is how many calls the model was asked.
func (p *provider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

func (p *provider) setGate(g func(ctx context.Context, req *llm.Request) error) {
	p.mu.Lock()
	p.gate = g
	p.mu.Unlock()
}

// harness is a madspark MCP server on a SQLite file with every pipeline
// (the built-in ones, the eval and examples/pipelines' files), and a client
// of the SDK connected to it over the SDK's in-memory transport.
type harness struct {
	t      *testing.T
	db     testStore
	srv    *mcpserver.Server
	model  *provider
	reg    *pipeline.Registry
	engine *engine.Engine
	client *mcp.ClientSession

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	notified chan struct{}
}

// testStore is what the harness keeps runs in: SQLite or PostgreSQL.
type testStore interface {
	mcpserver.Store
	madspark.CacheStore
	madspark.RunLeaseStore
	madspark.IdeaStore
	Close() error
}

// harnessOptions vary the harness.
type harnessOptions struct {
	heartbeat time.Duration
	// postgres, when set, is the URL of a PostgreSQL database to keep the
	// runs in, instead of a SQLite file.
	postgres string
	// config changes the server's Config.
	config func(*mcpserver.Config)
	// limit, when not 0, puts the model behind a provider limiter of
	// limit calls in flight and queue waiting, which admits the calls as
	// the app's does.
	limit, queue int
}

func newHarness(t *testing.T, heartbeat time.Duration) *harness {
	return newHarnessWith(t, harnessOptions{heartbeat: heartbeat})
}

// eachStore runs fn on a harness over SQLite, and over PostgreSQL (skipped,
// saying why, when no server is reachable).
func eachStore(t *testing.T, o harnessOptions, fn func(t *testing.T, h *harness)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, newHarnessWith(t, o)) })
	t.Run("postgres", func(t *testing.T) {
		o := o
		o.postgres = pgtest.URL(t)
		fn(t, newHarnessWith(t, o))
	})
}

func newHarnessWith(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	ctx := context.Background()
	heartbeat := o.heartbeat
	var db testStore
	if o.postgres != "" {
		pg, err := postgres.Open(ctx, o.postgres)
		if err != nil {
			t.Fatal(err)
		}
		db = pg
	} else {
		lite, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "madspark.db"))
		if err != nil {
			t.Fatal(err)
		}
		db = lite
	}
	t.Cleanup(func() { db.Close() })
	hub := events.New(db, events.Options{PollInterval: 20 * time.Millisecond})
	t.Cleanup(func() { hub.Close() })
	responders := map[string]mock.Responder{}
	for _, m := range []map[string]mock.Responder{spark.MockResponders(), chaos.MockResponders(), debate.MockResponders(),
		assess.MockResponders(), proposal.MockResponders(), eval.MockResponders()} {
		maps.Copy(responders, m)
	}
	h := &harness{t: t, db: db, model: &provider{inner: mock.New(responders)}, notified: make(chan struct{}, 1)}
	// The response cache in front of the model, as the app composes it.
	cache := middleware.Cache(middleware.CacheConfig{Provider: mock.Name, DefaultModel: mock.Model, Store: db})
	mws := []llm.Middleware{cache}
	var admit func(context.Context) (context.Context, func(), error)
	if o.limit > 0 {
		lim := middleware.NewLimiter(middleware.LimitConfig{DefaultProvider: mock.Name, Limit: func(string) int { return o.limit }, Queue: o.queue})
		mws, admit = append(mws, lim.Middleware()), lim.Admit
	}
	h.engine = &engine.Engine{Store: db, Client: llm.Chain(h.model, mws...), Events: hub}
	h.reg = pipeline.NewRegistry()
	count, err := debate.NewTokenCounter()
	if err != nil {
		t.Fatal(err)
	}
	pitch, err := flow.Load(filepath.Join("..", "examples", "pipelines", "pitch.yaml"))
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
		func() (pipeline.Definition, error) {
			return eval.Definition(eval.Deps{Registry: h.reg, Engine: h.engine})
		},
		func() (pipeline.Definition, error) { return pitch.Definition(), nil },
	} {
		d, err := def()
		if err != nil {
			t.Fatal(err)
		}
		if err := h.reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	cfg := mcpserver.Config{Registry: h.reg, Engine: h.engine, Store: db, Mode: "mock", Provider: mock.Name,
		Model: mock.Model, Version: "test", Heartbeat: heartbeat, Admit: admit}
	if o.config != nil {
		o.config(&cfg)
	}
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "madspark-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, req.Params)
			h.mu.Unlock()
			select {
			case h.notified <- struct{}{}:
			default:
			}
		},
	})
	if h.client, err = c.Connect(ctx, ct, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.client.Close() })
	return h
}

// notifications returns the progress notifications of token so far.
func (h *harness) notifications(token string) []*mcp.ProgressNotificationParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*mcp.ProgressNotificationParams
	for _, p := range h.progress {
		if p.ProgressToken == token {
			out = append(out, p)
		}
	}
	return out
}

// waitFor waits, up to a generous deadline, until cond holds, checking it
// after every progress notification and every 10 ms.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s", what)
		case <-h.notified:
		case <-tick.C:
		}
	}
}

// call calls tool with args and a progress token.
func (h *harness) call(ctx context.Context, tool string, args any, token string) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if token != "" {
		p.Meta = mcp.Meta{"progressToken": token}
	}
	return h.client.CallTool(ctx, p)
}

// tools are the server's tools by name.
func (h *harness) tools() map[string]*mcp.Tool {
	h.t.Helper()
	res, err := h.client.ListTools(context.Background(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, t := range res.Tools {
		out[t.Name] = t
	}
	return out
}

// checkOutput checks a call's structured content against the tool's
// output schema.
func checkOutput(t *testing.T, tool *mcp.Tool, res *mcp.CallToolResult) {
	t.Helper()
	raw, err := json.Marshal(tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := validator.NewCompiler()
	if err := c.AddResource("mem:///out.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///out.json")
	if err != nil {
		t.Fatalf("%s: output schema: %v", tool.Name, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s: the structured content does not match the output schema: %v", tool.Name, err)
	}
}

// text is the text of a result's first content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("the result has no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("the first content is %T, not text", res.Content[0])
	}
	return tc.Text
}
