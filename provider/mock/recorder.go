package mock

import (
	"context"
	"strings"
	"sync"

	"github.com/madspark/madspark/llm"
)

// Recorder is an llm.Client that passes every request on to Next and keeps
// a copy of it, so that a test can count a pipeline's calls and read the
// prompts they carried. It is safe for concurrent use.
type Recorder struct {
	Next llm.Client

	mu   sync.Mutex
	reqs []llm.Request
}

// Generate records req and passes it on.
func (r *Recorder) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, *req)
	r.mu.Unlock()
	return r.Next.Generate(ctx, req)
}

// Requests returns the requests so far, in the order they were made.
func (r *Recorder) Requests() []llm.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llm.Request(nil), r.reqs...)
}

// Of returns the requests of agent so far, in order.
func (r *Recorder) Of(agent string) []llm.Request {
	var out []llm.Request
	for _, q := range r.Requests() {
		if q.Agent == agent {
			out = append(out, q)
		}
	}
	return out
}

// Calls counts the requests so far per agent, named without its pipeline
// ("critic" for "spark.critic").
func (r *Recorder) Calls() map[string]int {
	n := map[string]int{}
	for _, q := range r.Requests() {
		_, name, ok := strings.Cut(q.Agent, ".")
		if !ok {
			name = q.Agent
		}
		n[name]++
	}
	return n
}
