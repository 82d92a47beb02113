package provider

import (
	"context"
	"fmt"
	"sync"

	"github.com/madspark/madspark/llm"
)

// Router sends each request to the provider it names (llm.Request.Provider)
// and the rest to the default, so that one run can use several providers,
// such as a different one per debate proposer. Providers are opened on first
// use. It is safe for concurrent use.
type Router struct {
	def     llm.Client
	defName string
	open    func(ctx context.Context, name string) (llm.Client, error)

	mu      sync.Mutex
	clients map[string]llm.Client
}

// NewRouter returns a Router whose default is def (named defName); open
// opens any other provider by name.
func NewRouter(def llm.Client, defName string, open func(ctx context.Context, name string) (llm.Client, error)) *Router {
	return &Router{def: def, defName: defName, open: open, clients: map[string]llm.Client{}}
}

// Generate calls the provider req names, or the default.
func (r *Router) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Provider == "" || req.Provider == r.defName {
		return r.def.Generate(ctx, req)
	}
	r.mu.Lock()
	c, ok := r.clients[req.Provider]
	if !ok {
		var err error
		if c, err = r.open(ctx, req.Provider); err != nil {
			r.mu.Unlock()
			return nil, &llm.Error{Provider: req.Provider, Message: err.Error(), Err: err}
		}
		r.clients[req.Provider] = c
	}
	r.mu.Unlock()
	return c.Generate(ctx, req)
}

// OpenNamed opens the provider called name with the settings s, ignoring
// MADSPARK_PROVIDER; in mock mode every name is the mock. It is what a
// Router's open function usually is.
func OpenNamed(ctx context.Context, s Settings, name string, responders map[string]func(*llm.Request) (any, error)) (llm.Client, error) {
	if s.Mode == "mock" {
		name = "mock"
	}
	switch name {
	case "mock", "openai", "ollama", "gemini", "anthropic":
	default:
		return nil, fmt.Errorf("unknown provider %q (want one of mock, openai, ollama, gemini, anthropic)", name)
	}
	s.Provider, s.Model = name, ""
	c, _, err := Open(ctx, s, responders)
	return c, err
}
