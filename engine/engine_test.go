package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/structured"
)

type countingClient struct{ calls atomic.Int32 }

func (c *countingClient) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	c.calls.Add(1)
	return &llm.Response{Text: req.Prompt(), Usage: llm.Usage{LLMCalls: 1, InputTokens: 3, OutputTokens: 2}}, nil
}

func ask(prompt string) func(context.Context, llm.Client) (string, error) {
	return func(ctx context.Context, c llm.Client) (string, error) {
		resp, err := c.Generate(ctx, &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
		if err != nil {
			return "", err
		}
		return resp.Text, nil
	}
}

func TestStepJournalAndReplay(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	client := &countingClient{}
	var events []madspark.Event
	e := &Engine{Store: db, Client: client}
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Params: map[string]int{"n": 1}}, func(ev madspark.Event) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if out, err := Step(ctx, r, "a", "in-a", ask("A")); err != nil || out != "A" {
		t.Fatalf("step a = %q, %v", out, err)
	}
	boom := &structured.ReplyError{Agent: "t.b", Problem: errors.New("boom"), Raw: "not json"}
	if _, err := Step(ctx, r, "b", "in-b", func(context.Context, llm.Client) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("step b err = %v", err)
	}
	r.Emit("a", 50, "half")
	if err := r.Finish(ctx, nil, boom); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].RunID != r.ID() || events[0].Progress != 50 {
		t.Fatalf("events = %+v", events)
	}
	steps, _ := db.Steps(ctx, r.ID())
	if len(steps) != 2 || steps[0].Status != madspark.StepDone || string(steps[0].Output) != `"A"` || steps[0].Usage.LLMCalls != 1 || steps[1].Status != madspark.StepFailed || string(steps[1].Output) != `{"raw_reply":"not json"}` {
		t.Fatalf("journal = %+v %+v", steps[0], steps[1])
	}

	// Resume: a replays with no call; a changed input runs again.
	r2, err := e.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := Step(ctx, r2, "a", "in-a", ask("A again")); err != nil || out != "A" || client.calls.Load() != 1 {
		t.Fatalf("replay = %q, %v, calls %d", out, err, client.calls.Load())
	}
	if out, _ := Step(ctx, r2, "a", "in-a changed", ask("A2")); out != "A2" || client.calls.Load() != 2 {
		t.Fatalf("changed input should run again: %q, calls %d", out, client.calls.Load())
	}
	if u := r2.Usage(); u.LLMCalls != 2 || u.InputTokens != 6 {
		t.Fatalf("resumed usage = %+v, want the earlier call kept plus the new one", u)
	}

	// A cancelled context still records the outcome.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r2.Finish(cctx, "done", nil); err != nil {
		t.Fatal(err)
	}
	rec, _ := db.Run(ctx, r.ID())
	if rec.Status != madspark.RunSucceeded || string(rec.Result) != `"done"` {
		t.Fatalf("run = %+v", rec)
	}
	if _, err := e.Resume(ctx, r.ID(), nil); err == nil {
		t.Fatal("a succeeded run must not resume")
	}
}

// recorder is a Publisher that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	events []madspark.Event
}

func (p *recorder) Publish(_ context.Context, e *madspark.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.Seq = int64(len(p.events) + 1)
	p.events = append(p.events, *e)
	return nil
}

func TestEventsAndFinalStates(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pub := &recorder{}
	e := &Engine{Store: db, Client: &countingClient{}, Events: pub}

	for _, tc := range []struct {
		name   string
		result any
		err    error
		status madspark.RunStatus
		typ    madspark.EventType
		data   string
	}{
		{"succeeded", map[string]int{"ideas": 3}, nil, madspark.RunSucceeded, madspark.EventResult, `{"ideas":3}`},
		{"failed", nil, errors.New("stage evaluate: 401"), madspark.RunFailed, madspark.EventError, `{"status":"failed"}`},
		{"cancelled", nil, fmt.Errorf("run x: %w", madspark.ErrCancelled), madspark.RunCancelled, madspark.EventError, `{"status":"cancelled"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub.events = nil
			r, err := e.Start(ctx, RunInfo{Pipeline: "test"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Emit("generate", 10, "generating")
			r.Emit("generate", -1, "a notice keeps the percentage")
			if err := r.Finish(ctx, tc.result, tc.err); err != nil {
				t.Fatal(err)
			}
			rec, _ := db.Run(ctx, r.ID())
			if rec.Status != tc.status || r.Record().Status != tc.status {
				t.Fatalf("status = %s (in memory %s), want %s", rec.Status, r.Record().Status, tc.status)
			}
			if len(pub.events) != 3 {
				t.Fatalf("events = %+v", pub.events)
			}
			if p := pub.events[1]; p.Type != madspark.EventProgress || p.Progress != 10 || p.RunID != r.ID() || p.Time.IsZero() {
				t.Fatalf("notice = %+v, want progress 10", p)
			}
			last := pub.events[2]
			if last.Type != tc.typ || last.Progress != 100 || !last.Final() || string(last.Data) != tc.data {
				t.Fatalf("final event = %+v (data %s), want %s with %s", last, last.Data, tc.typ, tc.data)
			}
			if tc.err != nil && (last.Message != tc.err.Error() || last.Stage != "generate") {
				t.Fatalf("error event = %+v, want the error and the stage it happened in", last)
			}
			// A succeeded run is not reopened; a failed or cancelled one
			// is, as running.
			r2, err := e.Resume(ctx, r.ID(), nil)
			if tc.status != madspark.RunSucceeded {
				if err != nil {
					t.Fatalf("resume failed run: %v", err)
				}
				if rec, _ := db.Run(ctx, r.ID()); rec.Status != madspark.RunRunning || rec.Error != "" || !rec.FinishedAt.IsZero() {
					t.Fatalf("resumed record = %+v, want running without error", rec)
				}
				if r2.Record().Status != madspark.RunRunning {
					t.Fatal("resumed run not running")
				}
			} else if !errors.Is(err, ErrNotResumable) {
				t.Fatalf("resume %s run: err = %v, want ErrNotResumable", tc.status, err)
			}
		})
	}
}

// TestCancelledKeepsWhatFinished: a cancelled run keeps the result its
// pipeline returned with the error (what it had finished), a typed nil is
// none, and the step the cancellation stopped is cancelled, not failed.
func TestCancelledKeepsWhatFinished(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{Store: db, Client: &countingClient{}}
	type result struct{ Iterations []int }
	r, err := e.Start(ctx, RunInfo{Pipeline: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Step(ctx, r, "i1/judge", "in", ask("one")); err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithCancel(ctx)
	_, err = Step(stop, r, "i2/judge", "in", func(ctx context.Context, c llm.Client) (string, error) {
		cancel()
		return "", ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped step: %v", err)
	}
	if err := r.Finish(ctx, &result{Iterations: []int{1}}, fmt.Errorf("iteration 2: %w", madspark.ErrCancelled)); err != nil {
		t.Fatal(err)
	}
	rec, _ := db.Run(ctx, r.ID())
	if rec.Status != madspark.RunCancelled || string(rec.Result) != `{"Iterations":[1]}` {
		t.Fatalf("cancelled record: %s %s", rec.Status, rec.Result)
	}
	steps, _ := db.Steps(ctx, r.ID())
	if len(steps) != 2 || steps[0].Status != madspark.StepDone || steps[1].Status != madspark.StepCancelled {
		t.Fatalf("steps: %+v", steps)
	}

	r2, _ := e.Start(ctx, RunInfo{Pipeline: "test"}, nil)
	if err := r2.Finish(ctx, (*result)(nil), madspark.ErrCancelled); err != nil {
		t.Fatal(err)
	}
	if rec, _ := db.Run(ctx, r2.ID()); rec.Status != madspark.RunCancelled || rec.Result != nil {
		t.Fatalf("a run cancelled with nothing finished: %s %q", rec.Status, rec.Result)
	}
}

// TestCauseDecidesInterruptedOrCancelled: a run stopped because its
// process is stopping (the cause of its context, or its error, wraps
// madspark.ErrInterrupted) is recorded interrupted, and resumes; one
// stopped on request is cancelled; a plain failure is failed.
func TestCauseDecidesInterruptedOrCancelled(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{Store: db, Client: &countingClient{}}
	signal := fmt.Errorf("%w by SIGTERM", madspark.ErrInterrupted)
	for _, tt := range []struct {
		name   string
		cancel func(context.CancelCauseFunc)
		err    func(ctx context.Context) error
		want   madspark.RunStatus
	}{
		{"signal as the cause", func(c context.CancelCauseFunc) { c(signal) }, func(ctx context.Context) error { return ctx.Err() }, madspark.RunInterrupted},
		{"interruption as the error", func(context.CancelCauseFunc) {}, func(context.Context) error { return fmt.Errorf("stage a: %w", signal) }, madspark.RunInterrupted},
		{"cancelled on request", func(c context.CancelCauseFunc) { c(errors.New("the client left")) }, func(context.Context) error { return fmt.Errorf("%w by request", madspark.ErrCancelled) }, madspark.RunCancelled},
		{"plain cancel", func(c context.CancelCauseFunc) { c(nil) }, func(ctx context.Context) error { return ctx.Err() }, madspark.RunFailed},
	} {
		r, err := e.Start(ctx, RunInfo{Pipeline: "test"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Step(ctx, r, "a", "in", ask("A")); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancelCause(ctx)
		tt.cancel(cancel)
		if err := r.Finish(rctx, nil, tt.err(rctx)); err != nil {
			t.Fatal(err)
		}
		cancel(nil)
		rec, _ := db.Run(ctx, r.ID())
		if rec.Status != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, rec.Status, rec.Error, tt.want)
		}
		if tt.want == madspark.RunInterrupted {
			res, err := e.Resume(ctx, r.ID(), nil)
			if err != nil {
				t.Fatalf("%s: resume: %v", tt.name, err)
			}
			if out, err := Step(ctx, res, "a", "in", ask("again")); err != nil || out != "A" {
				t.Fatalf("%s: the finished step was not replayed: %q %v", tt.name, out, err)
			}
			_ = res.Finish(ctx, "done", nil)
		}
	}
}

func TestQueuedRecordResumes(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{Store: db, Client: &countingClient{}}
	rec, err := e.NewRecord(RunInfo{Pipeline: "spark", Mode: "mock", Params: map[string]string{"topic": "x"}}, madspark.RunQueued)
	if err != nil || rec.ID == "" || rec.Status != madspark.RunQueued || string(rec.Params) != `{"topic":"x"}` {
		t.Fatalf("NewRecord = %+v, %v", rec, err)
	}
	other, _ := e.NewRecord(RunInfo{Pipeline: "spark"}, madspark.RunQueued)
	if other.ID == rec.ID {
		t.Fatal("two records with one ID")
	}
	if err := db.CreateRun(ctx, rec); err != nil {
		t.Fatal(err)
	}
	r, err := e.Resume(ctx, rec.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Run(ctx, rec.ID); got.Status != madspark.RunRunning || r.Record().Pipeline != "spark" {
		t.Fatalf("after Resume: %+v", got)
	}
}

// TestStepRepairs: the repairs reported during a step are journaled with
// it, gathered on the run, counted once through OnRepair, and reported
// again when a resumed run replays the step.
func TestStepRepairs(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	counted := map[string]int{}
	e := &Engine{Store: db, Client: &countingClient{}, OnRepair: func(pipeline string, rep llm.Repair) {
		mu.Lock()
		defer mu.Unlock()
		counted[pipeline+"/"+rep.Agent+"/"+rep.Rule]++
	}}
	r, err := e.Start(ctx, RunInfo{Pipeline: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	repairing := func(ctx context.Context, c llm.Client) (string, error) {
		llm.RecordRepair(ctx, llm.Repair{Agent: "t.a", Rule: "range", Action: "11 → 10"})
		return ask("A")(ctx, c)
	}
	if _, err := Step(ctx, r, "a", "in-a", repairing); err != nil {
		t.Fatal(err)
	}
	if _, err := Step(ctx, r, "b", "in-b", func(ctx context.Context, c llm.Client) (string, error) {
		llm.RecordRepair(ctx, llm.Repair{Agent: "t.b", Rule: "count", Action: "kept 2"})
		return "", errors.New("later failure")
	}); err == nil {
		t.Fatal("step b should fail")
	}
	got := r.Repairs()
	if len(got) != 2 || got[0].Step != "a" || got[0].Rule != "range" || got[1].Step != "b" {
		t.Fatalf("run repairs = %+v", got)
	}
	steps, err := db.Steps(ctx, r.ID())
	if err != nil || len(steps) != 2 || len(steps[0].Repairs) != 1 || steps[0].Repairs[0].Action != "11 → 10" || len(steps[1].Repairs) != 1 {
		t.Fatalf("journal = %+v, %v", steps, err)
	}
	if err := r.Finish(ctx, nil, errors.New("later failure")); err != nil {
		t.Fatal(err)
	}

	r2, err := e.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Step(ctx, r2, "a", "in-a", repairing); err != nil {
		t.Fatal(err)
	}
	if got := r2.Repairs(); len(got) != 1 || got[0].Step != "a" {
		t.Fatalf("replayed repairs = %+v", got)
	}
	if counted["test/t.a/range"] != 1 || counted["test/t.b/count"] != 1 {
		t.Fatalf("OnRepair counted %v, want each once", counted)
	}
}

// TestFinishInOneWrite: with a store that records runs (sqlite) and a
// Hub, a run is recorded with its lease, and its outcome, final event and
// the lease's end are recorded together; the final event reaches a
// subscriber once, after the progress event.
func TestFinishInOneWrite(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hub := events.New(db, events.Options{PollInterval: time.Hour})
	defer hub.Close()
	e := &Engine{Store: db, Client: &countingClient{}, Events: hub}
	r, err := e.Start(ctx, RunInfo{Pipeline: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ls, err := db.RunLeases(ctx); err != nil || len(ls) != 1 || ls[0].RunID != r.ID() {
		t.Fatalf("leases of a started run = %+v, %v; want its own", ls, err)
	}
	ch, err := hub.Subscribe(ctx, r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r.Emit("generate", 10, "generating")
	if err := r.Finish(ctx, map[string]int{"ideas": 3}, nil); err != nil {
		t.Fatal(err)
	}
	var got []madspark.Event
	for ev := range ch {
		got = append(got, ev)
	}
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || got[1].Type != madspark.EventResult || string(got[1].Data) != `{"ideas":3}` {
		t.Fatalf("events = %+v, want the progress event, then the result", got)
	}
	if rec, _ := db.Run(ctx, r.ID()); rec.Status != madspark.RunSucceeded {
		t.Fatalf("run = %+v", rec)
	}
	if last, _ := db.LastEvent(ctx, r.ID()); last == nil || last.Seq != 2 || !last.Final() {
		t.Fatalf("last stored event = %+v", last)
	}
	if ls, _ := db.RunLeases(ctx); len(ls) != 0 {
		t.Fatalf("leases after Finish = %+v, want none", ls)
	}
	if err := db.KeepRunLease(ctx, &r.lease.l, time.Minute); !errors.Is(err, madspark.ErrLeaseLost) {
		t.Fatalf("the lease after Finish: %v, want it dropped", err)
	}
}

// TestHeldRun: a held run writes nothing between its start and its end:
// its step and progress event are journaled with its outcome (the event
// reaching the run's sink at once, and the Hub's subscriber with the final
// one); a held run whose process dies leaves its record and lease only,
// is interrupted once its lease expires, and resumed runs its step again.
func TestHeldRun(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hub := events.New(db, events.Options{PollInterval: time.Hour})
	defer hub.Close()
	client := &countingClient{}
	e := &Engine{Store: db, Client: client, Events: hub}
	var sunk []madspark.Event
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Held: true}, func(ev madspark.Event) { sunk = append(sunk, ev) })
	if err != nil {
		t.Fatal(err)
	}
	ch, err := hub.Subscribe(ctx, r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r.Emit("route", 5, "simple")
	if out, err := Step(ctx, r, "direct", "in", ask("A")); err != nil || out != "A" {
		t.Fatalf("step = %q, %v", out, err)
	}
	if len(sunk) != 1 || sunk[0].Stage != "route" {
		t.Fatalf("sink got %+v, want the progress event at once", sunk)
	}
	if steps, _ := db.Steps(ctx, r.ID()); len(steps) != 0 {
		t.Fatalf("steps journaled before the end: %+v", steps)
	}
	if evs, _ := db.Events(ctx, r.ID(), 0, 10); len(evs) != 0 {
		t.Fatalf("events stored before the end: %+v", evs)
	}
	if err := r.Finish(ctx, "A", nil); err != nil {
		t.Fatal(err)
	}
	var got []madspark.Event
	for ev := range ch {
		got = append(got, ev)
	}
	if len(got) != 2 || got[0].Seq != 1 || got[0].Stage != "route" || got[1].Seq != 2 || got[1].Type != madspark.EventResult {
		t.Fatalf("events = %+v, want the progress event, then the result", got)
	}
	steps, _ := db.Steps(ctx, r.ID())
	if len(steps) != 1 || steps[0].Status != madspark.StepDone || string(steps[0].Output) != `"A"` || len(steps[0].Calls) != 1 {
		t.Fatalf("journal = %+v, want the step held", steps)
	}
	if rec, _ := db.Run(ctx, r.ID()); rec.Status != madspark.RunSucceeded || rec.Usage.LLMCalls != 1 {
		t.Fatalf("run = %+v", rec)
	}
	if ls, _ := db.RunLeases(ctx); len(ls) != 0 {
		t.Fatalf("leases after Finish = %+v, want none", ls)
	}

	// A process that dies during a held run: its lease expires, and
	// another process shows it interrupted and resumes it.
	dying := &Engine{Store: db, Client: client, Events: hub, LeaseTTL: 50 * time.Millisecond}
	dctx, die := context.WithCancel(ctx)
	d, err := dying.Start(dctx, RunInfo{Pipeline: "test", Held: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Emit("route", 5, "simple")
	if _, err := Step(ctx, d, "direct", "in", ask("B")); err != nil {
		t.Fatal(err)
	}
	die()
	var ids []string
	for deadline := time.Now().Add(10 * time.Second); len(ids) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ids, err = e.Interrupt(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids) != 1 || ids[0] != d.ID() {
		t.Fatalf("Interrupt = %v, want [%s]", ids, d.ID())
	}
	if rec, _ := db.Run(ctx, d.ID()); rec.Status != madspark.RunInterrupted {
		t.Fatalf("run = %s, want interrupted", rec.Status)
	}
	resumed, err := e.Resume(ctx, d.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := client.calls.Load()
	if out, err := Step(ctx, resumed, "direct", "in", ask("B")); err != nil || out != "B" || client.calls.Load() != before+1 {
		t.Fatalf("resumed step = %q, %v; want it run again", out, err)
	}
	if err := resumed.Finish(ctx, "B", nil); err != nil {
		t.Fatal(err)
	}
	if steps, _ := db.Steps(ctx, d.ID()); len(steps) != 1 || steps[0].Status != madspark.StepDone {
		t.Fatalf("journal of the resumed run = %+v", steps)
	}
}

// TestSamplingReplacesEveryCallsSettings: a run's Sampling replaces the
// temperature, top_p, seed, reasoning effort and verbosity of every call
// and adds the instructions, then the conversation in words, to every
// system prompt; it is journaled, so that a resumed run keeps it.
func TestSamplingReplacesEveryCallsSettings(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	var got []llm.Request
	client := llm.ClientFunc(func(_ context.Context, req *llm.Request) (*llm.Response, error) {
		mu.Lock()
		got = append(got, *req)
		mu.Unlock()
		return &llm.Response{Text: "ok", FinishReason: "stop", Usage: llm.Usage{LLMCalls: 1}}, nil
	})
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{Store: db, Client: client}
	temp, topP, seed := 0.0, 0.5, int64(9)
	s := &Sampling{Temperature: &temp, TopP: &topP, Seed: &seed, ReasoningEffort: "low", Verbosity: "high", Instructions: "Answer in French.",
		Conversation: []llm.Message{{Role: llm.RoleUser, Content: "Ideas for tea?"}, {Role: llm.RoleAssistant, Content: "1. Iced matcha"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "shop", Arguments: `{"q":"matcha"}`}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "in stock"}}}
	const conversation = "--- user ---\nIdeas for tea?\n--- assistant ---\n1. Iced matcha\n" +
		"--- assistant calls tool shop with {\"q\":\"matcha\"} (call c1) ---\n--- the result of tool call c1 ---\nin stock"
	r, err := e.Start(ctx, RunInfo{Pipeline: "test", Sampling: s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(r *Run, key string) error {
		_, err := Step(ctx, r, key, key, func(ctx context.Context, c llm.Client) (string, error) {
			resp, err := c.Generate(ctx, &llm.Request{Agent: "a", System: "Be an agent.", Temperature: 0.9, Messages: []llm.Message{{Role: llm.RoleUser, Content: key}}})
			if err != nil {
				return "", err
			}
			return resp.Text, nil
		})
		return err
	}
	if err := call(r, "one"); err != nil {
		t.Fatal(err)
	}
	_ = r.Finish(ctx, nil, errors.New("stopped"))
	r, err = e.Resume(ctx, r.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(r, "one"); err != nil { // replayed
		t.Fatal(err)
	}
	if err := call(r, "two"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d calls, want 2 (one replayed)", len(got))
	}
	for _, req := range got {
		if req.Temperature != 0 || *req.TopP != 0.5 || *req.Seed != 9 || req.ReasoningEffort != "low" || req.Verbosity != "high" ||
			!strings.HasPrefix(req.System, "Be an agent.\n\nInstructions from the person") ||
			!strings.Contains(req.System, "Answer in French.\n\nThe conversation the person had before") ||
			!strings.HasSuffix(req.System, "still holds):\n"+conversation) {
			t.Errorf("request %+v", req)
		}
	}
	steps, _ := db.Steps(ctx, r.ID())
	var calls int
	for _, st := range steps {
		calls += len(st.Calls)
		for _, c := range st.Calls {
			if c.Temperature != 0 || c.ReasoningEffort != "low" || c.Verbosity != "high" || !strings.Contains(c.System, "Answer in French.") ||
				!strings.Contains(c.System, conversation) {
				t.Errorf("journaled call %+v", c)
			}
		}
	}
	if calls != 2 || len(steps) != 3 || steps[0].Key != SamplingKey {
		t.Errorf("%d steps, %d calls", len(steps), calls)
	}
}

// TestWithTags: the tags of the context follow the run's own, in the
// stored record; a context without them adds none.
func TestWithTags(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{Store: db, Client: &countingClient{}}
	tagged := WithTags(WithTags(ctx, "chat:c1"), "second")
	for _, tc := range []struct {
		ctx  context.Context
		own  []string
		want []string
	}{
		{tagged, []string{"mine"}, []string{"mine", "chat:c1", "second"}},
		{tagged, nil, []string{"chat:c1", "second"}},
		{ctx, []string{"mine"}, []string{"mine"}},
	} {
		r, err := e.Start(tc.ctx, RunInfo{Pipeline: "test", Tags: tc.own}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Finish(ctx, "ok", nil); err != nil {
			t.Fatal(err)
		}
		rec, err := db.Run(ctx, r.ID())
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rec.Tags) != fmt.Sprint(tc.want) {
			t.Errorf("tags %q, want %q", rec.Tags, tc.want)
		}
	}
}
