package engine

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/madspark/madspark"
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
