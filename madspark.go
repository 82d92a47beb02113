// Package madspark holds the domain types shared by every layer: runs and
// their steps, progress events, and the storage contracts that the store
// implementations satisfy. It depends on nothing but the standard library and
// package llm.
package madspark

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/madspark/madspark/llm"
)

// RunStatus is the state of a run.
//
// A run started by a command is running until it succeeds or fails. A run
// given to the job queue is queued until a worker takes it; a worker that is
// stopped or lost puts it back to queued, and the next worker resumes it.
// Succeeded, failed and cancelled are final, although a failed or cancelled
// run can be resumed.
type RunStatus string

// The states of a run.
const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
	// RunInterrupted is a run whose process stopped without finishing it
	// (killed, crashed, its machine gone: its lease expired; or stopped,
	// recording it so: its error wraps ErrInterrupted). It is not final:
	// `madspark resume` or POST /api/runs/{id}/resume finishes it.
	RunInterrupted RunStatus = "interrupted"
)

// RunStatuses returns every status, in the order a run goes through them.
func RunStatuses() []RunStatus {
	return []RunStatus{RunQueued, RunRunning, RunSucceeded, RunFailed, RunCancelled, RunInterrupted}
}

// Resumable reports whether a run in state s can be resumed: it failed, was
// interrupted or was cancelled. Its finished steps are in its journal, and
// resuming it replays them.
func (s RunStatus) Resumable() bool {
	return s == RunFailed || s == RunInterrupted || s == RunCancelled
}

// Final reports whether s is a final state: succeeded, failed or cancelled.
func (s RunStatus) Final() bool {
	return s == RunSucceeded || s == RunFailed || s == RunCancelled
}

// ErrCancelled is wrapped by the error of a run that was cancelled on
// request; such a run ends with status RunCancelled.
var ErrCancelled = errors.New("cancelled")

// ErrInterrupted is wrapped by the error of a run, or by the cause of its
// context (context.Cause), when the process working it is stopping (a
// signal, a server shutting down): such a run ends with status
// RunInterrupted, to be resumed.
var ErrInterrupted = errors.New("interrupted")

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
	Error string    `json:"error,omitempty"`
	Usage llm.Usage `json:"usage"`
	// Tags are labels the run was started with, such as the tags of an
	// API request; nil for none.
	Tags []string `json:"tags,omitempty"`
	// Subject is what the run is about in one line, as its pipeline said
	// when the run was made (pipeline.Definition.Topic: a topic, a query,
	// a pipeline file's first input); empty when it said nothing. See
	// Topic.
	Subject    string    `json:"subject,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// StepStatus is the state of a step.
type StepStatus string

// The states of a step.
const (
	StepDone   StepStatus = "done"
	StepFailed StepStatus = "failed"
	// StepRunning is a step journaled before it finished, so that the
	// requests it had sent are kept if its process dies: it is not
	// replayed, and runs again when its run resumes.
	StepRunning StepStatus = "running"
	// StepCancelled is a step stopped because its run was cancelled.
	StepCancelled StepStatus = "cancelled"
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
	InputHash string          `json:"input_hash"`
	Status    StepStatus      `json:"status"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Usage     llm.Usage       `json:"usage"`
	// Repairs are the changes made to the step's usable replies that broke
	// soft rules; a replayed step reports them again.
	Repairs    []llm.Repair `json:"repairs,omitempty"`
	StartedAt  time.Time    `json:"started_at"`
	FinishedAt time.Time    `json:"finished_at"`
	// Calls are the LLM calls the step made, in the order they started:
	// what was sent and what came back. Empty for a step that called no
	// model.
	Calls []Call `json:"calls,omitempty"`
}

// Call is one LLM request of a step: one request sent to a provider (a
// request retried after a transient error is one Call per attempt), or a
// reply the response cache gave, or a request that failed before it could
// be sent. It keeps what the agent asked (system prompt and messages), what
// the provider sent (Sent, ResponseFormat; never API keys or headers), the
// raw reply, and what it cost. Calls are kept in the journal with their
// step, so that a run can be inspected call by call.
type Call struct {
	// Agent names the agent that made the call, such as "spark.evaluate".
	Agent string `json:"agent"`
	// Provider and Model name what answered, or what was asked when the
	// call failed.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// System and Messages are the prompt the agent made.
	System   string        `json:"system,omitempty"`
	Messages []llm.Message `json:"messages"`
	// Sent are the messages exactly as the provider sent them, the system
	// prompt first with role "system", when the provider changed the
	// agent's (adding a schema's description to the system prompt); nil
	// when it sent System and Messages as they are, when nothing was sent
	// (a cached reply, a failure before sending: Usage.LLMCalls is 0), and
	// in calls journaled before they were kept.
	Sent []llm.Message `json:"sent,omitempty"`
	// ResponseFormat is the structured-output setting the provider sent
	// (llm.Wire.ResponseFormat), if any.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Temperature and MaxTokens are the request's settings, and
	// ReasoningEffort and Verbosity when it set them.
	Temperature     float64 `json:"temperature"`
	MaxTokens       int     `json:"max_tokens,omitempty"`
	ReasoningEffort string  `json:"reasoning_effort,omitempty"`
	Verbosity       string  `json:"verbosity,omitempty"`
	// Tools are the functions the request offered the model, and
	// ToolChoice whether it might call them; nil for none.
	Tools      []llm.Tool      `json:"tools,omitempty"`
	ToolChoice *llm.ToolChoice `json:"tool_choice,omitempty"`
	// Response is the raw reply text; FinishReason the provider's reason
	// for stopping.
	Response     string `json:"response"`
	FinishReason string `json:"finish_reason,omitempty"`
	// ToolCalls are the tools the reply called.
	ToolCalls []llm.ToolCall `json:"tool_calls,omitempty"`
	// Attempt numbers the call within its conversation: 1 for a first
	// request, 2 for the request that sends a bad reply back to be fixed,
	// and so on.
	Attempt int `json:"attempt"`
	// Retries counts the times the request had been sent before this
	// attempt and failed with a transient error: 0 for its first send.
	Retries int `json:"retries,omitempty"`
	// Cached reports that the response cache answered and no model was
	// called.
	Cached bool      `json:"cached"`
	Usage  llm.Usage `json:"usage"`
	// Error is the call's error, when it failed.
	Error     string    `json:"error,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// Latency is how long the call took, retries included.
	Latency time.Duration `json:"latency_ns"`
}

// RunFilter selects runs to list. Zero fields do not filter.
type RunFilter struct {
	Pipeline string
	Status   RunStatus
	// Query keeps the runs whose parameters contain it as text, ignoring
	// the case of ASCII letters: the topic, prompt, query or idea of a run
	// is among its parameters.
	Query string
	// Limit caps the number of runs returned; 0 means 50.
	Limit int
	// Offset skips that many runs, newest first.
	Offset int
}

// ErrNotFound is returned when a run, batch or bookmark does not exist.
var ErrNotFound = errors.New("not found")

// ErrExists is returned when a bookmark with the same ID is stored already.
var ErrExists = errors.New("already exists")

// ErrLeaseLost is returned by LeaseStore.ExtendLease when the worker's lease
// expired or was dropped, and by RunLeaseStore.KeepRunLease when another
// process took the run's lease.
var ErrLeaseLost = errors.New("lease lost")

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
	// SetRunStatus moves run id to the unfinished status (queued or
	// running), clearing its error and finish time, provided its current
	// status is one of from (any status when from is empty). It reports
	// whether it did, and returns an error wrapping ErrNotFound when there
	// is no such run. Final states are recorded by FinishRun.
	SetRunStatus(ctx context.Context, id string, status RunStatus, from ...RunStatus) (bool, error)
	// SaveStep writes a step, replacing any earlier entry with the same
	// run ID and key. While the run is queued or running, it sets the
	// run's usage to the sum of its steps' usage, so that an unfinished
	// run shows what it has cost so far.
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

// EventType is the kind of an event: the seed's progress message types.
type EventType string

// The kinds of event. A run's last event is its one result or error event.
// A retry event tells that a call of the run failed with an error that may
// pass and is sent again after a pause, and then how that call ended; its
// data is a RetryData.
const (
	EventProgress EventType = "progress"
	EventRetry    EventType = "retry"
	EventResult   EventType = "result"
	EventError    EventType = "error"
)

// RetryData is the data of a retry event: a call of the run is retried
// (Ended empty), or a call that was retried ended (Ended set).
type RetryData struct {
	// Call names the call among the run's: the events of one call share
	// it.
	Call string `json:"call"`
	// Agent is the agent that made the call, when known.
	Agent string `json:"agent,omitempty"`
	// Attempt is the attempt about to be made (2 for the first retry);
	// for an ended call, the attempts it made.
	Attempt int `json:"attempt"`
	// MaxAttempts is the most attempts the call makes.
	MaxAttempts int `json:"max_attempts"`
	// DelayMS is the pause before the attempt, in milliseconds.
	DelayMS int64 `json:"delay_ms,omitempty"`
	// Error is the failed attempt's error, on one line.
	Error string `json:"error,omitempty"`
	// Ended is how the call ended after its retries: RetrySucceeded or
	// RetryFailed; empty while it is retried.
	Ended string `json:"ended,omitempty"`
}

// How a retried call ended (RetryData.Ended).
const (
	RetrySucceeded = "succeeded"
	RetryFailed    = "failed"
)

// Event is a progress report from a run, in the shape of the seed's progress
// message ({type, stage, progress, message, data}) plus the run and a
// sequence number. Events are stored, so that a client that connects late,
// or reconnects, replays what it missed (see EventStore). The CLI renders
// them as a progress display; the server forwards them to clients.
type Event struct {
	RunID string `json:"run_id"`
	// Seq numbers the events of a run from 1, in the order they were
	// stored; the store assigns it.
	Seq  int64     `json:"seq"`
	Type EventType `json:"type"`
	// Stage names the stage the event is about, such as "evaluate".
	Stage string `json:"stage"`
	// Progress is the run's overall completion, 0-100.
	Progress int    `json:"progress"`
	Message  string `json:"message,omitempty"`
	// Data is JSON: the result of a result event, the final status of an
	// error event, a RetryData for a retry event.
	Data json.RawMessage `json:"data,omitempty"`
	// Time is when the event happened; the store sets it when zero.
	Time time.Time `json:"time"`
}

// Final reports whether e is a run's last event: its result or its error.
func (e *Event) Final() bool { return e.Type == EventResult || e.Type == EventError }

// EventStore keeps the events of runs.
type EventStore interface {
	// AppendEvent stores e as the next event of run e.RunID: it sets e.Seq
	// to one more than the run's last event (1 for the first) and e.Time
	// to the current time when it is zero. It returns an error wrapping
	// ErrNotFound when the run does not exist.
	AppendEvent(ctx context.Context, e *Event) error
	// Events returns the events of run runID with a sequence number above
	// afterSeq, in order, at most limit of them (0 or less means 500; at
	// most 1000). The result is empty, not nil, when there are none.
	Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error)
	// LastEvent returns the latest event of run runID, or nil when it has
	// none (or does not exist).
	LastEvent(ctx context.Context, runID string) (*Event, error)
}

// Batch is a set of runs submitted together, such as the rows of a batch
// file, so that their progress and results can be followed from anywhere.
type Batch struct {
	ID       string `json:"batch_id"`
	Pipeline string `json:"pipeline"`
	// Source names where the items came from, such as the input file.
	Source    string      `json:"source"`
	CreatedAt time.Time   `json:"created_at"`
	Items     []BatchItem `json:"items"`
}

// BatchItem is one item of a batch.
type BatchItem struct {
	// Line locates the item in its source: the line of a CSV file, or the
	// position (from 1) in a JSON array.
	Line  int    `json:"line"`
	Topic string `json:"topic"`
	// Tags are the item's labels, as given.
	Tags []string `json:"tags,omitempty"`
	// RunID is the item's run; empty when the item was rejected.
	RunID string `json:"run_id,omitempty"`
	// Error says why a rejected item was not run.
	Error string `json:"error,omitempty"`
	// Status is the status of the item's run when the batch was read; it
	// is not stored with the batch.
	Status RunStatus `json:"status,omitempty"`
}

// BatchStore keeps batches.
type BatchStore interface {
	// CreateBatch stores a new batch and its items, in order; b.ID must be
	// set and unique. A zero b.CreatedAt is set to the current time.
	CreateBatch(ctx context.Context, b *Batch) error
	// Batch returns a batch with its items in order, each with the current
	// status of its run, or an error wrapping ErrNotFound.
	Batch(ctx context.Context, id string) (*Batch, error)
	// Batches returns at most limit batches, newest first, after skipping
	// offset of them, each as Batch returns it.
	Batches(ctx context.Context, limit, offset int) ([]*Batch, error)
}

// WorkerLease says that a queue worker is alive. A worker renews its lease
// well before it expires; the jobs of a worker whose lease expired are given
// to other workers.
type WorkerLease struct {
	// ID is the worker's ID, as recorded on the jobs it works.
	ID string `json:"id"`
	// Host identifies the machine and process namespace the worker runs in;
	// PID is its process ID there.
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Expired is computed when the lease is read, by the store's clock.
	Expired bool `json:"expired"`
}

// RunLease says that one process works a run, until Expires unless the
// process renews it. A run is worked by at most one process at a time: the
// engine takes the lease when it starts or resumes a run, renews it while
// the run goes, and drops it when the run finishes.
type RunLease struct {
	RunID string `json:"run_id"`
	// Token is secret to the process holding the lease: only that process
	// renews or drops it.
	Token string `json:"-"`
	// Holder says to people which process holds the run, such as
	// "madspark serve (pid 4121 on host studio)".
	Holder string `json:"holder"`
	// Host identifies the machine and process namespace the holder runs
	// in; PID is its process ID there. A process of the same Host can tell
	// whether the holder is still alive.
	Host      string    `json:"host,omitempty"`
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"started_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Expired is computed when the lease is read, by the store's clock.
	Expired bool `json:"expired"`
}

// RunHeldError is the error for a run that another process holds.
type RunHeldError struct {
	Lease RunLease
}

func (e *RunHeldError) Error() string {
	return fmt.Sprintf("run %s is being worked by %s (its lease runs to %s)", e.Lease.RunID, e.Lease.Holder,
		e.Lease.ExpiresAt.UTC().Format("15:04:05 UTC"))
}

// RunLeaseStore keeps the leases of runs.
type RunLeaseStore interface {
	// TakeRunLease gives the lease of run l.RunID to l for ttl from now, by
	// the store's clock, if nobody holds it, its lease expired or l.Token
	// holds it already; otherwise it changes nothing and returns a
	// *RunHeldError with the holder's lease. It sets l.StartedAt and
	// l.ExpiresAt.
	TakeRunLease(ctx context.Context, l *RunLease, ttl time.Duration) error
	// KeepRunLease renews the lease l.Token holds for ttl from now; if the
	// lease is gone or held by another token, it returns an error wrapping
	// ErrLeaseLost.
	KeepRunLease(ctx context.Context, l *RunLease, ttl time.Duration) error
	// DropRunLease removes the lease if l.Token holds it; anything else is
	// no error.
	DropRunLease(ctx context.Context, l *RunLease) error
	// RunLeases returns the leases of the runs recorded as running, oldest
	// first.
	RunLeases(ctx context.Context) ([]RunLease, error)
	// InterruptRun records run l.RunID as interrupted, with msg as its
	// error, and drops its lease, if the run is running and l.Token still
	// holds its lease. It reports whether it did.
	InterruptRun(ctx context.Context, l *RunLease, msg string) (bool, error)
}

// RunRecorder records a run's start and its end each in one write, which
// is most of what a short run costs a store (a /v1 answer is a run of one
// step): CreateRun with TakeRunLease, and the steps and events held until
// the end with FinishRun and DropRunLease.
type RunRecorder interface {
	// StartRun is CreateRun of run and TakeRunLease of it for l: both or
	// neither.
	StartRun(ctx context.Context, run *Run, l *RunLease, ttl time.Duration) error
	// EndRun is SaveStep of each of steps, AppendEvent of each of events
	// in order (setting their Seq), FinishRun of run and DropRunLease of
	// l: all or none. l may be nil.
	EndRun(ctx context.Context, run *Run, l *RunLease, steps []*Step, events ...*Event) error
}

// LeaseStore keeps the leases of queue workers.
type LeaseStore interface {
	// RenewLease records that worker l.ID is alive for ttl from now, by
	// the store's clock, creating its lease if needed. It sets
	// l.ExpiresAt, and l.StartedAt when the lease is new.
	RenewLease(ctx context.Context, l *WorkerLease, ttl time.Duration) error
	// ExtendLease is RenewLease for a lease that must still be held: it
	// records that worker l.ID is alive for ttl from now only if its lease
	// exists and has not expired, and otherwise changes nothing and
	// returns an error wrapping ErrLeaseLost (another worker may have
	// taken over its runs). It sets l.ExpiresAt.
	ExtendLease(ctx context.Context, l *WorkerLease, ttl time.Duration) error
	// Leases returns every lease, oldest first.
	Leases(ctx context.Context) ([]WorkerLease, error)
	// DropLease removes a worker's lease; dropping a missing lease is no
	// error.
	DropLease(ctx context.Context, id string) error
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

// Bookmark is an idea a user kept: a candidate of a run, with the run's
// topic and scores, or an idea imported from a bookmarks file (then without
// a run).
type Bookmark struct {
	ID string `json:"id"`
	// RunID and CandidateIndex locate the candidate the bookmark was made
	// from; RunID is empty for an imported bookmark.
	RunID          string  `json:"run_id"`
	CandidateIndex int     `json:"candidate_index"`
	IdeaText       string  `json:"idea_text"`
	ImprovedIdea   string  `json:"improved_idea"`
	Topic          string  `json:"topic"`
	Context        string  `json:"context"`
	Score          float64 `json:"score"`
	ImprovedScore  float64 `json:"improved_score"`
	// Tags are the bookmark's labels, in the order given, without
	// repeats; empty, not nil, for none.
	Tags      []string         `json:"tags"`
	Notes     string           `json:"notes"`
	CreatedAt time.Time        `json:"created_at"`
	Metadata  BookmarkMetadata `json:"metadata"`
}

// BookmarkMetadata says how a bookmarked idea was made.
type BookmarkMetadata struct {
	ModelUsed   string  `json:"model_used"`
	Temperature float64 `json:"temperature"`
	TokenCount  int     `json:"token_count"`
}

// BookmarkFilter selects bookmarks to list. Zero fields do not filter.
type BookmarkFilter struct {
	// Tags keeps the bookmarks that have every one of them.
	Tags []string
	// Query keeps the bookmarks whose topic, context, idea text or
	// improved idea contains it, ignoring the case of ASCII letters.
	Query string
	// RunID keeps the bookmarks of that run's ideas.
	RunID string
	// Limit caps the number returned; 0 or less means 50, at most 1000.
	Limit int
	// Offset skips that many bookmarks, newest first.
	Offset int
}

// BookmarkStore keeps bookmarks.
type BookmarkStore interface {
	// CreateBookmark stores a new bookmark; b.ID must be set. A zero
	// b.CreatedAt is set to the current time and nil b.Tags to empty. A
	// bookmark with the same ID gives an error wrapping ErrExists.
	CreateBookmark(ctx context.Context, b *Bookmark) error
	// Bookmark returns a bookmark by ID, or an error wrapping ErrNotFound.
	Bookmark(ctx context.Context, id string) (*Bookmark, error)
	// Bookmarks lists the bookmarks that match f, newest first (by
	// creation time, then descending ID), and how many match in all. The
	// list is empty, not nil, when nothing matches.
	Bookmarks(ctx context.Context, f BookmarkFilter) ([]*Bookmark, int, error)
	// DeleteBookmark removes a bookmark, or returns an error wrapping
	// ErrNotFound.
	DeleteBookmark(ctx context.Context, id string) error
	// UpdateBookmark sets a bookmark's tags (without repeats, in their
	// order; nil is none) and notes, and returns it as stored; a missing
	// bookmark gives an error wrapping ErrNotFound.
	UpdateBookmark(ctx context.Context, id string, tags []string, notes string) (*Bookmark, error)
}

// ChatRole is who wrote a message of a conversation.
type ChatRole string

// The authors of a conversation's messages.
const (
	ChatUser      ChatRole = "user"
	ChatAssistant ChatRole = "assistant"
	// ChatError is the failure of an answer to the question before it:
	// its content is the error's one line. A question whose last reply is
	// an error is unanswered, and is carried into no history.
	ChatError ChatRole = "error"
	// ChatStopped is an answer stopped before it was finished (its asker
	// stopped it or went away): its content is what had been written. Like
	// a failure, it leaves its question unanswered and goes into no
	// history.
	ChatStopped ChatRole = "stopped"
)

// ChatMessage is one message of a conversation.
type ChatMessage struct {
	// Seq numbers the messages of a conversation from 1, in order; the
	// store assigns it.
	Seq     int64    `json:"seq"`
	Role    ChatRole `json:"role" jsonschema:"enum=user,enum=assistant,enum=error,enum=stopped"`
	Content string   `json:"content"`
	// RunID is the run that wrote an assistant's answer: its record says
	// how the answer was made. Empty for a user's message.
	RunID string `json:"run_id,omitempty"`
	// Model is the model that wrote an assistant's answer, such as
	// "madspark-debate".
	Model     string    `json:"model,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Conversation is a chat with the debate assistant: a title and the
// messages exchanged, oldest first.
type Conversation struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Model is the model the conversation asks by default, such as
	// "madspark-debate".
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the last message was added (the creation time
	// before that).
	UpdatedAt time.Time `json:"updated_at"`
	// Messages is empty in a listing.
	Messages []ChatMessage `json:"messages"`
}

// ConversationStore keeps conversations and their messages.
type ConversationStore interface {
	// CreateConversation stores a new conversation without messages;
	// c.ID must be set. Zero c.CreatedAt and c.UpdatedAt are set to the
	// current time. A conversation with the same ID gives an error
	// wrapping ErrExists.
	CreateConversation(ctx context.Context, c *Conversation) error
	// Conversation returns a conversation with its messages in order, or
	// an error wrapping ErrNotFound.
	Conversation(ctx context.Context, id string) (*Conversation, error)
	// Conversations lists conversations without their messages, the most
	// recently updated first (then by descending ID); limit 0 or less
	// means 50, at most 1000. The list is empty, not nil, when there are
	// none.
	Conversations(ctx context.Context, limit, offset int) ([]*Conversation, error)
	// RenameConversation sets a conversation's title; it does not change
	// UpdatedAt. A missing conversation gives an error wrapping
	// ErrNotFound.
	RenameConversation(ctx context.Context, id, title string) error
	// DeleteConversation removes a conversation and its messages, or
	// returns an error wrapping ErrNotFound. The runs that answered it are
	// kept.
	DeleteConversation(ctx context.Context, id string) error
	// AppendMessage adds m as the last message of conversation id: it
	// sets m.Seq to one more than the last message's (1 for the first),
	// m.CreatedAt to the current time when zero, and the conversation's
	// UpdatedAt to m.CreatedAt. A missing conversation gives an error
	// wrapping ErrNotFound.
	AppendMessage(ctx context.Context, id string, m *ChatMessage) error
	// TruncateConversation removes the messages of conversation id whose
	// Seq is above keep, so that the conversation can be answered again
	// from there. A missing conversation gives an error wrapping
	// ErrNotFound.
	TruncateConversation(ctx context.Context, id string, keep int64) error
}

// Store is everything a madspark process keeps: runs, their journal and
// their events, the durable tier of the response cache, idea memory, the
// job queue's batches and worker leases, bookmarks and conversations. The
// store packages (store/sqlite, store/postgres) implement it.
type Store interface {
	RunStore
	CacheStore
	IdeaStore
	EventStore
	BatchStore
	LeaseStore
	RunLeaseStore
	RunRecorder
	BookmarkStore
	ConversationStore
	Close() error
}

// Topic is what the run is about, on one line: its Subject, or else, read
// from its parameters, spark's topic, chaos's prompt, debate's query,
// assess's idea, the research area of a proposal's profile, or what an
// eval measures.
func (r *Run) Topic() string {
	if r.Subject != "" {
		return strings.Join(strings.Fields(r.Subject), " ")
	}
	var p struct {
		Topic   string `json:"topic"`
		Prompt  string `json:"prompt"`
		Query   string `json:"query"`
		Idea    string `json:"idea"`
		Profile struct {
			ResearchArea string `json:"research_area"`
		} `json:"profile"`
		// An eval's pipeline and topics.
		Pipeline string            `json:"pipeline"`
		Topics   []json.RawMessage `json:"topics"`
	}
	_ = json.Unmarshal(r.Params, &p)
	var evalOf string
	if p.Pipeline != "" {
		evalOf = fmt.Sprintf("%s against a single call, %d topics", p.Pipeline, len(p.Topics))
	}
	return strings.Join(strings.Fields(cmp.Or(p.Topic, p.Prompt, p.Query, p.Idea, p.Profile.ResearchArea, evalOf)), " ")
}
