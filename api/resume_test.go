package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/engine"
)

func TestResumeRun(t *testing.T) {
	hs := newHarness(t, options{workers: 1})
	ctx := t.Context()
	params, err := hs.reg.Decode("spark", []byte(`{"topic":"tool libraries","num_candidates":1,"num_top_candidates":1}`))
	if err != nil {
		t.Fatal(err)
	}
	info := engine.RunInfo{Pipeline: "spark", Mode: "mock", Provider: "mock", Model: "mock-1", Params: params}

	// A failed run resumes through the queue and succeeds.
	r, err := hs.engine.Start(ctx, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(ctx, nil, errors.New("provider down")); err != nil {
		t.Fatal(err)
	}
	if run := hs.run(r.ID()); run.Status != madspark.RunFailed || !run.Resumable {
		t.Fatalf("failed run = %s resumable=%v, want failed and resumable", run.Status, run.Resumable)
	}
	resp := hs.do("POST", "/api/runs/"+r.ID()+"/resume", nil)
	var s api.RunSummary
	resp.json(t, &s)
	if resp.status != 202 || s.RunID != r.ID() || s.Status != madspark.RunQueued {
		t.Fatalf("resume a failed run: %d %s", resp.status, resp.body)
	}
	// Its progress stream follows the new attempt to its result, not the
	// failure before it.
	evs, code, err := hs.sse(ctx, "/api/runs/"+r.ID()+"/events")
	if err != nil || code != 200 || len(evs) == 0 || evs[len(evs)-1].event != "result" {
		t.Fatalf("events of the resumed run: %d %v %+v; want a stream ending with its result", code, err, evs)
	}
	for _, e := range evs {
		if e.event == "error" {
			t.Fatalf("the stream of the resumed run replays the earlier attempt's failure: %+v", evs)
		}
	}
	if run := hs.wait(r.ID()); run.Status != madspark.RunSucceeded || run.Resumable {
		t.Fatalf("resumed run = %s (%s), want succeeded and not resumable", run.Status, run.Error)
	}
	// Succeeded: nothing to resume.
	if resp := hs.do("POST", "/api/runs/"+r.ID()+"/resume", nil); resp.status != 409 || !strings.Contains(resp.err(t).Error.Message, "succeeded") {
		t.Errorf("resume a succeeded run: %d %s", resp.status, resp.body)
	}
	if resp := hs.do("POST", "/api/runs/0190aaaa-0000-7000-8000-000000000000/resume", nil); resp.status != 404 {
		t.Errorf("resume a missing run: %d %s", resp.status, resp.body)
	}

	// A run that another live process works is refused, naming it.
	other := &engine.Engine{Store: hs.db, Client: hs.engine.Client, Holder: "madspark run"}
	held, err := other.Start(ctx, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp = hs.do("POST", "/api/runs/"+held.ID()+"/resume", nil)
	if resp.status != 409 || !strings.Contains(resp.err(t).Error.Message, "being worked by madspark run (pid ") {
		t.Errorf("resume a held run: %d %s", resp.status, resp.body)
	}
	if err := held.Finish(ctx, "done", nil); err != nil {
		t.Fatal(err)
	}

	// A run whose process died shows as interrupted, says how to resume
	// it, and resumes.
	dying := &engine.Engine{Store: hs.db, Client: hs.engine.Client, LeaseTTL: 100 * time.Millisecond}
	dctx, die := context.WithCancel(ctx)
	lost, err := dying.Start(dctx, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	die()
	var run api.Run
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if run = hs.run(lost.ID()); run.Status != madspark.RunRunning || time.Now().After(deadline) {
			break
		}
	}
	if run.Status != madspark.RunInterrupted || !run.Resumable || !strings.Contains(run.Error, "madspark resume "+lost.ID()) {
		t.Fatalf("run of a dead process = %s resumable=%v %q; want interrupted, resumable, saying how", run.Status, run.Resumable, run.Error)
	}
	resp = hs.do("GET", "/api/runs?status=interrupted", nil)
	var list api.RunList
	resp.json(t, &list)
	if resp.status != 200 || len(list.Runs) != 1 || list.Runs[0].RunID != lost.ID() {
		t.Errorf("runs?status=interrupted: %d %s", resp.status, resp.body)
	}
	if resp := hs.do("POST", "/api/runs/"+lost.ID()+"/resume", nil); resp.status != 202 {
		t.Fatalf("resume an interrupted run: %d %s", resp.status, resp.body)
	}
	if run := hs.wait(lost.ID()); run.Status != madspark.RunSucceeded {
		t.Fatalf("resumed interrupted run = %s (%s)", run.Status, run.Error)
	}
}
