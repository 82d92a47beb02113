package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// BenchmarkRunJournal measures what the journal of a one-step run (a /v1
// answer of madspark-direct) costs the store, in CPU time of the process
// per run (cpu-ms/run): the run recorded and leased, a progress event, the
// step, then the outcome, the final event and the lease dropped. It does
// so the way the engine does for a run that holds its step and events
// (held, engine.RunInfo.Held: StartRun, then EndRun with them, two
// writes), for any other run (recorded: StartRun, the event, the step,
// EndRun, four writes) and with one write each (separate: seven writes),
// with one run at a time (lone) and with 16 at once (concurrent), where
// writes made together commit together.
//
//	go test -run '^$' -bench BenchmarkRunJournal ./store/sqlite
func BenchmarkRunJournal(b *testing.B) {
	for _, way := range []string{"separate", "recorded", "held"} {
		for _, par := range []int{0, 8} {
			name := "lone"
			if par > 0 {
				name = "concurrent"
			}
			b.Run(way+"/"+name, func(b *testing.B) { benchJournal(b, way, par) })
		}
	}
}

// benchJournal journals b.N runs, by par goroutines per CPU (one in all
// when par is 0).
func benchJournal(b *testing.B, way string, par int) {
	db, err := Open(context.Background(), filepath.Join(b.TempDir(), "m.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n atomic.Int64
	ctx := context.Background()
	one := func() {
		id := fmt.Sprintf("run-%d", n.Add(1))
		if err := journalRun(ctx, db, id, way); err != nil {
			b.Fatal(err)
		}
	}
	before := cpuTime(b)
	b.ResetTimer()
	if par == 0 {
		for range b.N {
			one()
		}
	} else {
		b.SetParallelism(par)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				one()
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/run")
}

// journalRun writes what the engine writes for a one-step run, the way
// named (see BenchmarkRunJournal).
func journalRun(ctx context.Context, db *DB, id string, way string) error {
	now := time.Now().UTC()
	run := &madspark.Run{ID: id, Pipeline: "debate", Status: madspark.RunRunning, Mode: "live", Provider: "openai", Model: "gpt-4o-mini",
		Params: json.RawMessage(`{"query":"What is Rust?","mode":"simple","rounds":2}`), CreatedAt: now}
	l := &madspark.RunLease{RunID: id, Token: "tok-" + id, Holder: "madspark serve (pid 1 on host h)", Host: "h", PID: 1}
	usage := llm.Usage{InputTokens: 20, OutputTokens: 20, LLMCalls: 1}
	step := &madspark.Step{RunID: id, Key: "direct", InputHash: "0123456789abcdef", Status: madspark.StepDone,
		Output: json.RawMessage(`{"text":"token token token token token token token token token token","finish_reason":"stop"}`),
		Usage:  usage, StartedAt: now, FinishedAt: now,
		Calls: []madspark.Call{{Agent: "direct", Provider: "openai", Model: "gpt-4o-mini", System: "You answer.",
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "What is Rust?"}}, Response: "token token token", Usage: usage, StartedAt: now, Attempt: 1}}}
	progress := &madspark.Event{RunID: id, Type: madspark.EventProgress, Stage: "route", Progress: 5, Message: "simple (confidence 0.90)"}
	writes := []func() error{
		func() error { return db.StartRun(ctx, run, l, 30*time.Second) },
		func() error { return db.AppendEvent(ctx, progress) },
		func() error { return db.SaveStep(ctx, step) },
		func() error {
			run.Status, run.Result, run.Usage = madspark.RunSucceeded, json.RawMessage(`{"answer":"token token token"}`), usage
			return db.EndRun(ctx, run, l, nil, &madspark.Event{RunID: id, Type: madspark.EventResult, Stage: "done", Progress: 100, Data: run.Result})
		},
	}
	switch way {
	case "held":
		writes = []func() error{
			writes[0],
			func() error {
				run.Status, run.Result, run.Usage = madspark.RunSucceeded, json.RawMessage(`{"answer":"token token token"}`), usage
				return db.EndRun(ctx, run, l, []*madspark.Step{step}, progress,
					&madspark.Event{RunID: id, Type: madspark.EventResult, Stage: "done", Progress: 100, Data: run.Result})
			},
		}
	case "separate":
		writes = []func() error{
			func() error { return db.CreateRun(ctx, run) },
			func() error { return db.TakeRunLease(ctx, l, 30*time.Second) },
			writes[1],
			writes[2],
			func() error {
				run.Status, run.Result, run.Usage = madspark.RunSucceeded, json.RawMessage(`{"answer":"token token token"}`), usage
				return db.FinishRun(ctx, run)
			},
			func() error {
				return db.AppendEvent(ctx, &madspark.Event{RunID: id, Type: madspark.EventResult, Stage: "done", Progress: 100, Data: run.Result})
			},
			func() error { return db.DropRunLease(ctx, l) },
		}
	}
	for _, w := range writes {
		if err := w(); err != nil {
			return err
		}
	}
	return nil
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Skipf("no CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
