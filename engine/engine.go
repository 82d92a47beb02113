// Package engine runs pipelines: it records each run and journals each step
// (input hash, validated output, usage) before the next step starts, meters
// the LLM calls a step makes, replays finished steps of a resumed run without
// calling a model, and forwards progress events.
//
// A pipeline is plain Go that calls Step for each stage; concurrency between
// independent stages is the pipeline's, with errgroup or similar.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/trace"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// Engine starts runs. Its fields are read-only once a run has started.
type Engine struct {
	// Store keeps runs and the step journal. Required.
	Store madspark.RunStore
	// Client is the fully decorated model client every step calls
	// through. With middleware.Meter at its bottom, every request it sends
	// is recorded, each attempt of a retried call apart, with the messages
	// as the provider sent them; without it, each call's reply is.
	Client llm.Client
	// Logger receives one line per step; nil discards.
	Logger *slog.Logger
	// Clock gives the time of the records and events and times the
	// renewals of the runs' leases; nil means the real clock. Tests give a
	// fake one and move it on.
	Clock clockwork.Clock
	// Events, if set, receives every event of every run: its progress
	// events, a retry event for each retry of a call and for how a
	// retried call ended (madspark.RetryData), and, from Finish, its final
	// result or error event. Package
	// events stores them and delivers them to subscribers. A failure to
	// publish is logged; it never fails the run.
	Events Publisher
	// Tracer, if set, traces every run: a span per run, per step and per
	// LLM call (see the package's trace.go). Nil traces nothing.
	Tracer trace.Tracer
	// CaptureContent puts the prompt and the reply of each LLM call on its
	// span, as the GenAI conventions' message attributes. The journal
	// always keeps them.
	CaptureContent bool
	// OnRepair, if set, is called with every repair made to a reply in a
	// step of a run of the named pipeline (not again when the step is
	// replayed), for metrics. It must be safe for concurrent use.
	OnRepair func(pipeline string, r llm.Repair)
	// Leases keeps the leases of runs, so that a run is worked by at most
	// one process at a time; nil means Store's, if it keeps them, and
	// else no leases.
	Leases madspark.RunLeaseStore
	// LeaseTTL is how long a run's lease lasts unless renewed; zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Holder names this process to people in the leases of its runs, such
	// as "madspark serve"; its PID and host name are added. Empty means
	// "madspark".
	Holder string
}

// Publisher receives the events of runs.
type Publisher interface {
	// Publish records e as the next event of run e.RunID (setting e.Seq)
	// and delivers it.
	Publish(ctx context.Context, e *madspark.Event) error
}

// RunInfo describes a run to start.
type RunInfo struct {
	Pipeline string
	// Mode is "mock" or "live".
	Mode     string
	Provider string
	Model    string
	// Params are the pipeline's parameters; they are stored as JSON.
	Params any
	// Tags label the run (madspark.Run.Tags); nil for none.
	Tags []string
	// Subject is what the run is about (madspark.Run.Subject).
	Subject string
	// Sampling, when not nil, replaces settings of every call the run
	// makes; it is journaled with the run (SamplingKey), so that a resumed
	// run keeps it.
	Sampling *Sampling
	// Held holds the run's finished steps and its progress events in
	// memory until Finish, which journals them with the run's outcome in
	// its one write, instead of a write for each as it is made: for a
	// short run, such as a /v1 answer of one step, whose writes are most
	// of its cost. The events still go to the run's sink at once; the
	// Hub's subscribers get them at the end. A process that dies during
	// the run leaves its record and its lease: the lease expires and the
	// run is shown interrupted, and resumed it runs its steps again (a
	// step that sends another request still journals itself first, as
	// every step does). Held has effect only where Finish is one write
	// (the store a madspark.RunRecorder keeping the leases, and
	// Engine.Events nil or a Relayer); elsewhere the run is journaled as
	// any other.
	Held bool
}

// tagsKey is the context key of the tags WithTags adds.
type tagsKey struct{}

// WithTags returns a context under which Start adds tags to the run it
// records, after RunInfo.Tags: how a caller that does not make the run
// itself (a conversation asking a chat model) marks the run as its own
// (madspark.ParentTag).
func WithTags(ctx context.Context, tags ...string) context.Context {
	had, _ := ctx.Value(tagsKey{}).([]string)
	return context.WithValue(ctx, tagsKey{}, append(slices.Clip(had), tags...))
}

// Run is a run in progress. Its methods are safe for concurrent use by the
// stages of one pipeline.
type Run struct {
	e    *Engine
	sink func(madspark.Event)

	mu      sync.Mutex
	rec     madspark.Run
	journal map[string]*madspark.Step
	// saved are the steps journaled so far, whatever their status: a
	// step that runs again keeps the calls of its earlier entry.
	saved    map[string]*madspark.Step
	stage    string
	progress int
	// span is the run's trace span; nil for a run that is only finished
	// (Engine.Fail).
	span trace.Span
	// repairs are those of the run's steps, replayed ones included, in the
	// order they were made, and those Repair recorded.
	repairs []llm.Repair
	// lease is the run's lease, held while the run goes; nil when the
	// store keeps no leases.
	lease *lease
	// sampling replaces settings of the run's calls; nil for none.
	sampling *Sampling
	// calls counts the run's calls, to name each in its retry events.
	calls atomic.Int64
	// held says the run's steps and events are held until Finish
	// (RunInfo.Held); heldSteps and heldEvents are those held, in the
	// order they were made, a step that ran again in the place of its
	// first entry.
	held       bool
	heldSteps  []*madspark.Step
	heldEvents []*madspark.Event
}

func (e *Engine) now() time.Time {
	return e.clock().Now().UTC()
}

func (e *Engine) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// NewRecord returns the record of a new run of info with the given status
// and a fresh ID (a UUIDv7, so IDs sort by creation time), not yet stored.
// Start stores one as running; the job queue stores one as queued and a
// worker later opens it with Resume.
func (e *Engine) NewRecord(info RunInfo, status madspark.RunStatus) (*madspark.Run, error) {
	params, err := json.Marshal(info.Params)
	if err != nil {
		return nil, fmt.Errorf("engine: encode params: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("engine: new run id: %w", err)
	}
	return &madspark.Run{
		ID:        id.String(),
		Pipeline:  info.Pipeline,
		Status:    status,
		Mode:      info.Mode,
		Provider:  info.Provider,
		Model:     info.Model,
		Params:    params,
		Tags:      info.Tags,
		Subject:   info.Subject,
		CreatedAt: e.now(),
	}, nil
}

// Start records a new run as running and returns it. sink, if not nil,
// receives the run's progress events.
func (e *Engine) Start(ctx context.Context, info RunInfo, sink func(madspark.Event)) (*Run, error) {
	if tags, _ := ctx.Value(tagsKey{}).([]string); len(tags) > 0 {
		info.Tags = append(slices.Clip(info.Tags), tags...)
	}
	rec, err := e.NewRecord(info, madspark.RunRunning)
	if err != nil {
		return nil, err
	}
	ls, err := e.record(ctx, rec)
	if err != nil {
		return nil, err
	}
	r := &Run{e: e, sink: sink, journal: map[string]*madspark.Step{}, saved: map[string]*madspark.Step{}, rec: *rec, lease: ls, sampling: info.Sampling,
		held: info.Held && e.endsInOneWrite(ls)}
	if err := r.keepSampling(ctx); err != nil {
		rec.Status, rec.Error = madspark.RunFailed, err.Error()
		ls.release(ctx)
		_ = e.Store.FinishRun(context.WithoutCancel(ctx), rec)
		return nil, err
	}
	ls.start(ctx)
	r.span = e.startRun(ctx, rec)
	return r, nil
}

// record stores the new run rec and takes its lease: in one write when
// the store is a madspark.RunRecorder that keeps the leases too.
func (e *Engine) record(ctx context.Context, rec *madspark.Run) (*lease, error) {
	if rr, ok := e.Store.(madspark.RunRecorder); ok && e.Leases == nil {
		if s := e.leases(); s != nil {
			ls, err := e.newLease(s, rec.ID)
			if err != nil {
				return nil, err
			}
			if err := rr.StartRun(ctx, rec, &ls.l, ls.ttl); err != nil {
				return nil, fmt.Errorf("engine: %w", err)
			}
			return ls, nil
		}
	}
	if err := e.Store.CreateRun(ctx, rec); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// The run is recorded: its lease is taken even if ctx ends meanwhile
	// (a Ctrl-C at the start), so that it stops as any run does, at its
	// first step, kept and resumable.
	ls, err := e.takeLease(context.WithoutCancel(ctx), rec.ID)
	if err != nil {
		rec.Status, rec.Error = madspark.RunFailed, err.Error()
		_ = e.Store.FinishRun(context.WithoutCancel(ctx), rec)
		return nil, err
	}
	return ls, nil
}

// endsInOneWrite reports whether a run with lease ls (nil for none) records
// its end in one write (see Run.end).
func (e *Engine) endsInOneWrite(ls *lease) bool {
	if _, ok := e.Store.(madspark.RunRecorder); !ok || ls != nil && e.Leases != nil {
		return false
	}
	switch e.Events.(type) {
	case nil, Relayer:
		return true
	}
	return false
}

// ErrNotResumable is wrapped by Resume's error for a run that succeeded.
var ErrNotResumable = errors.New("not resumable")

// Resume reopens a run that is queued, or that did not finish (interrupted,
// running when its process died, failed or cancelled), and records it as
// running. Its finished steps are replayed from the journal by Step, with no
// model call; the usage already paid is kept, that of steps that failed or
// did not finish included, and a step that runs again keeps the calls it
// made before. A run that succeeded is not resumed: the error wraps
// ErrNotResumable. A run that another live
// process holds is not resumed either: the error is that process's
// *madspark.RunHeldError.
func (e *Engine) Resume(ctx context.Context, id string, sink func(madspark.Event)) (*Run, error) {
	rec, err := e.Store.Run(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if rec.Status == madspark.RunSucceeded {
		return nil, fmt.Errorf("engine: run %s already succeeded: %w", id, ErrNotResumable)
	}
	steps, err := e.Store.Steps(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	var sampling *Sampling
	for _, s := range steps {
		if s.Key == SamplingKey {
			if sampling, err = samplingOf(s); err != nil {
				return nil, err
			}
		}
	}
	ls, err := e.takeLease(ctx, id)
	var held *madspark.RunHeldError
	if errors.As(err, &held) && e.goneHere(held.Lease) {
		// Its holder ran on this machine and has exited: the run is
		// interrupted, not held, without waiting for the lease to end.
		if _, ierr := e.Interrupt(ctx); ierr != nil {
			return nil, ierr
		}
		ls, err = e.takeLease(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	// The status changes only if nobody finished the run in the meantime.
	ok, err := e.Store.SetRunStatus(ctx, id, madspark.RunRunning, madspark.RunQueued, madspark.RunRunning, madspark.RunFailed, madspark.RunInterrupted, madspark.RunCancelled)
	if err == nil && !ok {
		err = fmt.Errorf("run %s finished meanwhile: %w", id, ErrNotResumable)
	}
	if err != nil {
		ls.release(ctx)
		return nil, fmt.Errorf("engine: %w", err)
	}
	ls.start(ctx)
	r := &Run{e: e, sink: sink, rec: *rec, journal: map[string]*madspark.Step{}, saved: map[string]*madspark.Step{}, span: e.startRun(ctx, rec), lease: ls, sampling: sampling}
	r.rec.Status, r.rec.Error, r.rec.Usage, r.rec.FinishedAt = madspark.RunRunning, "", llm.Usage{}, time.Time{}
	for _, s := range steps {
		if s.Key == SamplingKey {
			continue
		}
		r.saved[s.Key] = s
		r.rec.Usage.Add(s.Usage)
		if s.Status == madspark.StepDone {
			r.journal[s.Key] = s
		}
	}
	return r, nil
}

// Fail records run id, which nobody is running (a queued run that is
// cancelled, or whose job cannot be worked), as failed with err, or
// cancelled when err wraps madspark.ErrCancelled, and publishes its final
// event, as Finish does.
func (e *Engine) Fail(ctx context.Context, id string, err error) error {
	rec, rerr := e.Store.Run(ctx, id)
	if rerr != nil {
		return fmt.Errorf("engine: %w", rerr)
	}
	r := &Run{e: e, rec: *rec, journal: map[string]*madspark.Step{}, saved: map[string]*madspark.Step{}}
	return r.Finish(ctx, nil, err)
}

// ID returns the run's ID.
func (r *Run) ID() string { return r.rec.ID }

// Stage returns the stage of the run's last progress event ("" before
// the first).
func (r *Run) Stage() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stage
}

// Params returns the run's parameters as stored.
func (r *Run) Params() json.RawMessage { return r.rec.Params }

// Usage returns what the run has cost so far.
func (r *Run) Usage() llm.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Usage
}

// Repairs returns the repairs made to the replies of the run's steps so far
// (those of replayed steps included) and those recorded with Repair, in the
// order they were made; an empty list, not nil, when there were none.
func (r *Run) Repairs() []llm.Repair {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llm.Repair{}, r.repairs...)
}

// Repair records a repair a pipeline made itself, outside any one reply (a
// pipeline that re-runs, on resume, records it again).
func (r *Run) Repair(rep llm.Repair) {
	r.mu.Lock()
	r.repairs = append(r.repairs, rep)
	r.mu.Unlock()
	if r.e.OnRepair != nil {
		r.e.OnRepair(r.rec.Pipeline, rep)
	}
}

// Record returns a copy of the run's record as it stands.
func (r *Run) Record() madspark.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec
}

// Emit sends a progress event for stage at overall progress 0-100; a
// negative progress keeps the last one (for a notice that is not a step
// forward). The event goes to the run's sink and to Engine.Events; the
// final event that Finish publishes goes to Engine.Events only.
func (r *Run) Emit(stage string, progress int, message string) {
	r.mu.Lock()
	if progress < 0 {
		progress = r.progress
	}
	r.stage, r.progress = stage, progress
	r.mu.Unlock()
	e := &madspark.Event{RunID: r.rec.ID, Type: madspark.EventProgress, Stage: stage, Progress: progress, Message: message, Time: r.e.now()}
	if r.sink != nil {
		r.sink(*e)
	}
	r.mu.Lock()
	held := r.held
	if held && r.e.Events != nil {
		r.heldEvents = append(r.heldEvents, e)
	}
	r.mu.Unlock()
	if !held {
		r.publish(context.Background(), e)
	}
}

// Held reports whether the run holds its steps and progress events in
// memory until Finish (RunInfo.Held), so that Emit and Step write
// nothing.
func (r *Run) Held() bool { return r.isHeld() }

// isHeld reports whether the run holds its steps and events until Finish.
func (r *Run) isHeld() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// hold keeps step, finished, to be journaled by Finish.
func (r *Run) hold(step *madspark.Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.heldSteps {
		if s.Key == step.Key {
			r.heldSteps[i] = step
			return
		}
	}
	r.heldSteps = append(r.heldSteps, step)
}

// takeHeld returns the steps and events held, and holds no more.
func (r *Run) takeHeld() ([]*madspark.Step, []*madspark.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	steps, evs := r.heldSteps, r.heldEvents
	r.heldSteps, r.heldEvents, r.held = nil, nil, false
	return steps, evs
}

// flushHeld journals the steps and events held, each in a write of its
// own: for a run that ends otherwise than by Finish's one write.
func (r *Run) flushHeld(ctx context.Context) {
	steps, evs := r.takeHeld()
	for _, s := range steps {
		if err := r.e.Store.SaveStep(ctx, s); err != nil {
			r.e.logger().Warn("could not journal a step", "run", r.rec.ID, "step", s.Key, "err", err)
		}
	}
	for _, e := range evs {
		r.publish(ctx, e)
	}
}

// publish hands e to Engine.Events.
func (r *Run) publish(ctx context.Context, e *madspark.Event) {
	if e.Time.IsZero() {
		e.Time = r.e.now()
	}
	if r.e.Events == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.e.Events.Publish(ctx, e); err != nil {
		r.e.logger().Warn("could not publish a run event", "run", r.rec.ID, "stage", e.Stage, "err", err)
	}
}

// Finish records the run's outcome: succeeded with result when err is nil;
// interrupted when err, or the cause of ctx's end (context.Cause), wraps
// madspark.ErrInterrupted (its process is stopping); cancelled when err
// wraps madspark.ErrCancelled; failed with err's message otherwise. An
// interrupted or cancelled run keeps result, when not nil: what it had
// finished. Then it publishes the run's final event (a result event whose
// data is the result, or an error event whose data is the status). It uses
// a context that is not cancelled with ctx, so that an interrupted run is
// still recorded.
func (r *Run) Finish(ctx context.Context, result any, runErr error) error {
	r.lease.halt()
	if r.lease.isLost() {
		endRun(r.span, &r.rec, runErr)
		return fmt.Errorf("engine: run %s: another process took it over, so its outcome here is not recorded: %w", r.rec.ID, ErrLeaseLost)
	}
	r.mu.Lock()
	rec, stage := r.rec, r.stage
	r.mu.Unlock()
	rec.FinishedAt = r.e.now()
	final := &madspark.Event{RunID: rec.ID, Stage: stage, Progress: 100}
	interrupted := runErr != nil && (errors.Is(runErr, madspark.ErrInterrupted) || errors.Is(context.Cause(ctx), madspark.ErrInterrupted))
	switch {
	case runErr == nil:
		b, err := json.Marshal(result)
		if err != nil {
			r.flushHeld(ctx)
			r.lease.release(ctx)
			return fmt.Errorf("engine: encode result: %w", err)
		}
		rec.Status, rec.Result = madspark.RunSucceeded, b
		final.Type, final.Stage, final.Message, final.Data = madspark.EventResult, "done", "succeeded", b
	case interrupted || errors.Is(runErr, madspark.ErrCancelled):
		rec.Status, rec.Error = madspark.RunCancelled, runErr.Error()
		if interrupted {
			rec.Status = madspark.RunInterrupted
		}
		// What the run had finished, when its pipeline kept it (chaos's
		// finished iterations), stays with it.
		if result != nil {
			b, err := json.Marshal(result)
			if err != nil {
				r.flushHeld(ctx)
				r.lease.release(ctx)
				return fmt.Errorf("engine: encode result: %w", err)
			}
			if string(b) != "null" { // a nil pointer of the pipeline's result type
				rec.Result = b
			}
		}
	default:
		rec.Status, rec.Error = madspark.RunFailed, runErr.Error()
	}
	if runErr != nil {
		final.Type, final.Message = madspark.EventError, rec.Error
		final.Data, _ = json.Marshal(map[string]madspark.RunStatus{"status": rec.Status})
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.end(ctx, &rec, final); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	r.mu.Lock()
	r.rec.Status, r.rec.Result, r.rec.Error, r.rec.FinishedAt = rec.Status, rec.Result, rec.Error, rec.FinishedAt
	r.mu.Unlock()
	endRun(r.span, &rec, runErr)
	return nil
}

// Relayer is implemented by publishers (events.Hub) that let the store
// write events in a write of its own: Relay calls store, which stores evs,
// events of one run in order (setting their Seq), with other writes, and
// then delivers them as Publish does. store must write to the store the
// publisher reads.
type Relayer interface {
	Relay(ctx context.Context, evs []*madspark.Event, store func() error) error
}

// end records the run's outcome rec, with the steps and events it held,
// publishes its final event and drops its lease: in one write when the
// store is a madspark.RunRecorder (that keeps the leases, when the run has
// one) and Engine.Events a Relayer (or nil).
func (r *Run) end(ctx context.Context, rec *madspark.Run, final *madspark.Event) error {
	rr, ok := r.e.Store.(madspark.RunRecorder)
	if !ok || r.lease != nil && r.e.Leases != nil {
		defer r.lease.release(ctx)
		r.flushHeld(ctx)
		if err := r.e.Store.FinishRun(ctx, rec); err != nil {
			return err
		}
		r.publish(ctx, final)
		return nil
	}
	var l *madspark.RunLease
	if r.lease != nil {
		l = &r.lease.l
	}
	if final.Time.IsZero() {
		final.Time = r.e.now()
	}
	steps, held := r.takeHeld()
	var err error
	switch p := r.e.Events.(type) {
	case nil:
		err = rr.EndRun(ctx, rec, l, steps)
	case Relayer:
		evs := append(held, final)
		err = p.Relay(ctx, evs, func() error { return rr.EndRun(ctx, rec, l, steps, evs...) })
	default:
		for _, e := range held {
			r.publish(ctx, e)
		}
		if err = rr.EndRun(ctx, rec, l, steps); err == nil {
			r.publish(ctx, final)
		}
	}
	if err != nil {
		r.lease.release(ctx) // the run's outcome is not recorded; its lease ends all the same
	}
	return err
}

// Step runs one stage of r, journaled under key. input is everything the
// stage's output depends on; its hash is recorded, and a finished step with
// the same key and input hash (from a resumed run) is replayed from the
// journal without calling fn. fn receives a client that meters the stage's
// calls into the step and the run.
//
// The step's output is saved before Step returns, so a crash after Step
// never loses it. The repairs made to replies during fn (reported with
// llm.RecordRepair on fn's context, as package structured does) are saved
// with the step and added to the run's Repairs, also when the step is
// replayed.
func Step[T any](ctx context.Context, r *Run, key string, input any, fn func(ctx context.Context, c llm.Client) (T, error)) (T, error) {
	var zero T
	hash, err := inputHash(input)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", key, err)
	}
	r.mu.Lock()
	prev := r.journal[key]
	r.mu.Unlock()
	if prev != nil && prev.InputHash == hash {
		var out T
		if err := json.Unmarshal(prev.Output, &out); err == nil {
			r.e.logger().Info("step replayed", "run", r.rec.ID, "step", key)
			r.mu.Lock()
			r.repairs = append(r.repairs, prev.Repairs...)
			r.mu.Unlock()
			return out, nil
		}
	}

	if r.lease.isLost() {
		return zero, fmt.Errorf("%s: %w", key, ErrLeaseLost)
	}
	step := &madspark.Step{RunID: r.rec.ID, Key: key, InputHash: hash, StartedAt: r.e.now()}
	r.mu.Lock()
	if earlier := r.saved[key]; earlier != nil {
		// The step ran before (it failed, its process died, or its input
		// changed): the requests it sent then were paid, and stay in it.
		step.Calls, step.Usage = slices.Clone(earlier.Calls), earlier.Usage
	}
	r.mu.Unlock()
	ctx, span := r.startStep(ctx, key)
	rec := &callLog{step: step, agent: span}
	metered := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return r.generate(ctx, rec, key, r.sampling.apply(req))
	})
	ctx = llm.WithRepairSink(ctx, func(rep llm.Repair) {
		rep.Step = key
		rec.mu.Lock()
		step.Repairs = append(step.Repairs, rep)
		rec.mu.Unlock()
		r.e.logger().Info("reply repaired", "run", r.rec.ID, "step", key, "agent", rep.Agent, "rule", rep.Rule, "path", rep.Path, "action", rep.Action)
		span.span.AddEvent("repair", trace.WithAttributes(repairAttrs(rep)...))
		if r.e.OnRepair != nil {
			r.e.OnRepair(r.rec.Pipeline, rep)
		}
	})
	out, runErr := fn(ctx, metered)
	step.FinishedAt = r.e.now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	defer func() { endStep(span, step, runErr) }()
	if runErr != nil {
		step.Status, step.Error = madspark.StepFailed, runErr.Error()
		if errors.Is(ctx.Err(), context.Canceled) {
			// Stopped on request (the run cancelled, the client gone), not
			// failed.
			step.Status = madspark.StepCancelled
		}
		// Keep the reply that could not be repaired, for diagnosis.
		var re *structured.ReplyError
		if errors.As(runErr, &re) {
			step.Output, _ = json.Marshal(map[string]string{"raw_reply": re.Raw})
		}
	} else {
		step.Status = madspark.StepDone
		if step.Output, err = json.Marshal(out); err != nil {
			return zero, fmt.Errorf("%s: encode output: %w", key, err)
		}
	}
	if r.isHeld() {
		r.hold(step)
	} else {
		saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.e.Store.SaveStep(saveCtx, step); err != nil {
			return zero, fmt.Errorf("%s: journal: %w", key, err)
		}
	}
	r.e.logger().Info("step", "run", r.rec.ID, "step", key, "status", step.Status,
		"llm_calls", step.Usage.LLMCalls, "cached_calls", step.Usage.CachedCalls, "repairs", len(step.Repairs),
		"duration", step.FinishedAt.Sub(step.StartedAt).Round(time.Millisecond))
	r.mu.Lock()
	r.repairs = append(r.repairs, step.Repairs...)
	r.saved[key] = step
	if runErr == nil {
		r.journal[key] = step
	}
	r.mu.Unlock()
	if runErr != nil {
		return zero, runErr
	}
	return out, nil
}

func inputHash(input any) (string, error) {
	b, err := json.Marshal(input)
	if err != nil {
		return "", fmt.Errorf("hash input: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
