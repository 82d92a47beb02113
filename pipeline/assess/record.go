package assess

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
)

// message is one line of messages.jsonl: an LLM call (what was sent, what
// came back, what it cost) or a web search.
type message struct {
	Time  time.Time `json:"time"`
	Step  string    `json:"step"`
	Agent string    `json:"agent"`
	Kind  string    `json:"kind"` // "llm" or "search"

	System       string        `json:"system,omitempty"`
	Messages     []llm.Message `json:"messages,omitempty"`
	Schema       string        `json:"schema,omitempty"`
	Temperature  float64       `json:"temperature,omitempty"`
	Reply        string        `json:"reply,omitempty"`
	Provider     string        `json:"provider,omitempty"`
	Model        string        `json:"model,omitempty"`
	FinishReason string        `json:"finish_reason,omitempty"`
	Cached       bool          `json:"cached,omitempty"`
	Usage        *llm.Usage    `json:"usage,omitempty"`

	Query   string   `json:"query,omitempty"`
	Results []string `json:"results,omitempty"`

	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
}

// AgentStats is what one agent cost in a run.
type AgentStats struct {
	// Calls counts requests, whether a model or the cache answered.
	Calls int `json:"calls"`
	llm.Usage
	DurationMS int64 `json:"duration_ms"`
	Searches   int   `json:"searches"`
	Errors     int   `json:"errors"`
}

// agentExtra are AgentStats's own fields.
type agentExtra struct {
	Calls      int   `json:"calls"`
	DurationMS int64 `json:"duration_ms"`
	Searches   int   `json:"searches"`
	Errors     int   `json:"errors"`
}

// MarshalJSON encodes s as one object: its usage and its own fields.
func (s AgentStats) MarshalJSON() ([]byte, error) {
	return llm.MarshalUsageWith(s.Usage, agentExtra{s.Calls, s.DurationMS, s.Searches, s.Errors})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (s *AgentStats) UnmarshalJSON(b []byte) error {
	var e agentExtra
	if err := llm.UnmarshalUsageWith(b, &s.Usage, &e); err != nil {
		return err
	}
	s.Calls, s.DurationMS, s.Searches, s.Errors = e.Calls, e.DurationMS, e.Searches, e.Errors
	return nil
}

func (s *AgentStats) add(o *AgentStats) {
	s.Calls += o.Calls
	s.Usage.Add(o.Usage)
	s.DurationMS += o.DurationMS
	s.Searches += o.Searches
	s.Errors += o.Errors
}

// RunSummary is run_summary.json: the run's outcome and, per agent, its
// calls, tokens, cost, time and searches.
type RunSummary struct {
	RunID        string                 `json:"run_id"`
	Idea         string                 `json:"idea,omitempty"`
	Slug         string                 `json:"slug,omitempty"`
	PipelineMode string                 `json:"pipeline_mode"`
	Mode         string                 `json:"mode"`
	Status       string                 `json:"status"`
	Error        string                 `json:"error,omitempty"`
	StartedAt    time.Time              `json:"started_at"`
	FinishedAt   time.Time              `json:"finished_at"`
	DurationMS   int64                  `json:"duration_ms"`
	Iterations   int                    `json:"iterations,omitempty"`
	Approved     bool                   `json:"approved,omitempty"`
	StopReason   string                 `json:"stop_reason,omitempty"`
	Agents       map[string]*AgentStats `json:"agents"`
	Total        AgentStats             `json:"total"`
}

// recorder keeps a run's messages.jsonl and per-agent statistics. The file
// is handed to save after every call, whole, so that it is rewritten
// atomically and never more than the calls in flight behind. It is safe for
// concurrent use.
type recorder struct {
	path string
	now  func() time.Time
	save func(path string, data []byte) error

	mu     sync.Mutex
	buf    bytes.Buffer
	agents map[string]*AgentStats
	err    error
}

func newRecorder(path string, now func() time.Time, save func(string, []byte) error) *recorder {
	return &recorder{path: path, now: now, save: save, agents: map[string]*AgentStats{}}
}

// agentKey is the short name of an agent in the summary: "analyst" for
// "assess.analyst".
func agentKey(agent string) string { return strings.TrimPrefix(agent, "assess.") }

// client wraps c so that every call made in step is recorded.
func (rec *recorder) client(c llm.Client, step string) llm.Client {
	return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		start := rec.now()
		resp, err := c.Generate(ctx, req)
		m := message{Time: start, Step: step, Agent: req.Agent, Kind: "llm", System: req.System,
			Messages: req.Messages, Temperature: req.Temperature, DurationMS: rec.now().Sub(start).Milliseconds()}
		if req.Schema != nil {
			m.Schema = req.Schema.Name
		}
		st := AgentStats{Calls: 1, DurationMS: m.DurationMS}
		if err != nil {
			m.Error, st.Errors = err.Error(), 1
		} else {
			u := resp.Usage
			m.Reply, m.Provider, m.Model, m.FinishReason, m.Cached, m.Usage = resp.Text, resp.Provider, resp.Model, resp.FinishReason, resp.Cached, &u
			st.Usage = u
		}
		rec.add(m, req.Agent, &st)
		return resp, err
	})
}

// search records one web search the agent made in step.
func (rec *recorder) search(step, agent, query string, start time.Time, results []search.Result, err error) {
	m := message{Time: start, Step: step, Agent: agent, Kind: "search", Query: query, DurationMS: rec.now().Sub(start).Milliseconds()}
	for _, r := range results {
		m.Results = append(m.Results, r.URL)
	}
	st := AgentStats{Searches: 1, DurationMS: m.DurationMS}
	if err != nil {
		m.Error, st.Errors = err.Error(), 1
	}
	rec.add(m, agent, &st)
}

func (rec *recorder) add(m message, agent string, st *AgentStats) {
	line, err := json.Marshal(m)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err == nil {
		rec.buf.Write(line)
		rec.buf.WriteByte('\n')
		err = rec.save(rec.path, rec.buf.Bytes())
	}
	if err != nil && rec.err == nil {
		rec.err = err
	}
	k := agentKey(agent)
	if rec.agents[k] == nil {
		rec.agents[k] = &AgentStats{}
	}
	rec.agents[k].add(st)
}

// stats returns a copy of the per-agent statistics and their total.
func (rec *recorder) stats() (map[string]*AgentStats, AgentStats) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := map[string]*AgentStats{}
	var total AgentStats
	for k, v := range rec.agents {
		c := *v
		out[k] = &c
		total.add(v)
	}
	return out, total
}

// flush writes messages.jsonl once more (an empty file for a run that made
// no call) and returns the first write error.
func (rec *recorder) flush() error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.err != nil {
		return rec.err
	}
	return rec.save(rec.path, rec.buf.Bytes())
}
