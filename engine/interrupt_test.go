package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/madspark/madspark"
)

// TestFinishInterrupted: a run stopped because its process stopped (its
// error wraps madspark.ErrInterrupted) is recorded interrupted, with what
// it had finished and its lease dropped, on both stores; it resumes at
// once, its finished steps replayed without a model call.
func TestFinishInterrupted(t *testing.T) {
	eachStore(t, func(t *testing.T, dbs [2]leaseStore) {
		ctx := t.Context()
		client := &countingClient{}
		e := &Engine{Store: dbs[0], Client: client, Holder: "madspark serve"}
		r, err := e.Start(ctx, RunInfo{Pipeline: "test", Params: map[string]int{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Step(ctx, r, "one", "a", ask("a")); err != nil {
			t.Fatal(err)
		}
		stopped := fmt.Errorf("%w: the server stopped: %w", madspark.ErrInterrupted, context.Canceled)
		if err := r.Finish(ctx, map[string]int{"done": 1}, stopped); err != nil {
			t.Fatal(err)
		}
		rec, err := dbs[1].Run(ctx, r.ID())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != madspark.RunInterrupted || !rec.Status.Resumable() || !strings.Contains(rec.Error, "the server stopped") ||
			string(rec.Result) != `{"done":1}` {
			t.Fatalf("recorded %s %q %s, want interrupted with its result", rec.Status, rec.Error, rec.Result)
		}
		if ls, err := dbs[1].RunLeases(ctx); err != nil || len(ls) != 0 {
			t.Errorf("leases left: %+v, %v", ls, err)
		}
		// Another process resumes it at once: nobody holds it.
		other := &Engine{Store: dbs[1], Client: client, Holder: "madspark resume"}
		r2, err := other.Resume(ctx, r.ID(), nil)
		if err != nil {
			t.Fatal(err)
		}
		before := client.calls.Load()
		if _, err := Step(ctx, r2, "one", "a", ask("a")); err != nil {
			t.Fatal(err)
		}
		if client.calls.Load() != before {
			t.Error("the finished step called the model again")
		}
		if err := r2.Finish(ctx, map[string]int{"done": 2}, nil); err != nil {
			t.Fatal(err)
		}
		if rec, _ := dbs[0].Run(ctx, r.ID()); rec.Status != madspark.RunSucceeded {
			t.Errorf("resumed run ended %s", rec.Status)
		}
	})
}
