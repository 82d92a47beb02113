// Package madspark holds the domain types shared by every layer: runs and
// their steps, progress events, and the storage contracts that the store
// implementations satisfy. It depends on nothing but the standard library and
// package llm.
package madspark

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/madspark/madspark/llm"
)

// RunStatus is the state of a run.
type RunStatus string

// The states of a run.
const (
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
)

// Run is one execution of a pipeline.
type Run struct {
	ID       string    `json:"run_id"`
	Pipeline string    `json:"pipeline"`
	Status   RunStatus `json:"status"`
	// Mode is "mock" or "live".
	Mode     string `json:"mode"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Params are the pipeline's parameters as JSON.
	Params json.RawMessage `json:"params"`
	// Result is the pipeline's result as JSON, once it succeeded.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the one-line reason a failed run failed.
	Error      string    `json:"error,omitempty"`
	Usage      llm.Usage `json:"usage"`
	CreatedAt  time.Time `json:"created_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// StepStatus is the state of a step.
type StepStatus string

// The states of a step.
const (
	StepDone   StepStatus = "done"
	StepFailed StepStatus = "failed"
)

// Step is the journal entry of one stage of a run: what went in (as a hash),
// what came out, and what it cost. A step that is done can be replayed from
// its output without calling a model again.
type Step struct {
	RunID string `json:"run_id"`
	// Key names the step within its run, such as "evaluate" or
	// "improve".
	Key string `json:"key"`
	// InputHash identifies the step's input; a replay is valid only for the
	// same hash.
	InputHash  string          `json:"input_hash"`
	Status     StepStatus      `json:"status"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Usage      llm.Usage       `json:"usage"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at"`
}

// RunFilter selects runs to list. Zero fields do not filter.
type RunFilter struct {
	Pipeline string
	Status   RunStatus
	// Limit caps the number of runs returned; 0 means 50.
	Limit int
	// Offset skips that many runs, newest first.
	Offset int
}

// ErrNotFound is returned when a run does not exist.
var ErrNotFound = errors.New("not found")

// RunStore keeps runs and their step journal.
type RunStore interface {
	// CreateRun stores a new run; run.ID must be set and unique.
	CreateRun(ctx context.Context, run *Run) error
	// FinishRun records the final status, result or error, usage and
	// finish time of a run.
	FinishRun(ctx context.Context, run *Run) error
	// Run returns a run by ID, or an error wrapping ErrNotFound.
	Run(ctx context.Context, id string) (*Run, error)
	// Runs lists runs, newest first.
	Runs(ctx context.Context, f RunFilter) ([]*Run, error)
	// SaveStep writes a step, replacing any earlier entry with the same
	// run ID and key.
	SaveStep(ctx context.Context, step *Step) error
	// Steps returns the steps of a run in the order they started.
	Steps(ctx context.Context, runID string) ([]*Step, error)
}

// CacheStore is durable storage for the response cache.
type CacheStore interface {
	// GetCache returns the value stored under key, and whether there was one.
	GetCache(ctx context.Context, key string) ([]byte, bool, error)
	// PutCache stores value under key, replacing any earlier value.
	PutCache(ctx context.Context, key string, value []byte) error
}

// Event is a progress report from a running pipeline. The CLI renders events
// as a progress display; the server forwards them to clients.
type Event struct {
	RunID string `json:"run_id"`
	// Stage names the stage the event is about, such as "evaluate".
	Stage string `json:"stage"`
	// Progress is the run's overall completion, 0-100.
	Progress int    `json:"progress"`
	Message  string `json:"message,omitempty"`
	Data     any    `json:"data,omitempty"`
}

// RememberedIdea is an idea a pipeline accepted and keeps, so that later
// iterations and runs build on it instead of generating it again.
type RememberedIdea struct {
	// Memory names the memory the idea belongs to; pipelines choose it
	// (chaos uses the normalised prompt unless the user names one).
	Memory string `json:"memory"`
	// Name is the idea's short name; unique within a memory.
	Name string `json:"idea_name"`
	// Data is the pipeline's full record of the idea, as JSON.
	Data json.RawMessage `json:"data"`
	// RunID and Iteration tell where the idea was discovered.
	RunID      string    `json:"run_id"`
	Iteration  int       `json:"iteration"`
	AcceptedAt time.Time `json:"accepted_at"`
}

// IdeaStore keeps remembered ideas.
type IdeaStore interface {
	// RememberIdeas adds ideas to their memories; an idea whose memory and
	// name are already stored is left as it was.
	RememberIdeas(ctx context.Context, ideas []RememberedIdea) error
	// RememberedIdeas returns a memory's ideas, oldest first.
	RememberedIdeas(ctx context.Context, memory string) ([]RememberedIdea, error)
}

// Store is everything a madspark process keeps: runs and their journal, the
// durable tier of the response cache, and idea memory. The store packages
// (store/sqlite, store/postgres) implement it.
type Store interface {
	RunStore
	CacheStore
	IdeaStore
	Close() error
}
