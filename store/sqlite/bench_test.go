package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// BenchmarkRunJournal measures what the journal of a one-step run (a /v1
// answer of madspark-direct) costs the store: the run recorded and
// leased, a progress event, the step, the outcome, the final event and
// the lease dropped, with 16 runs journaling at once. It reports the CPU
// time of the process per run, cpu-ms/run.
//
//	go test -run '^$' -bench BenchmarkRunJournal ./store/sqlite
func BenchmarkRunJournal(b *testing.B) {
	par := 8
	if os.Getenv("PAR") != "" {
		par, _ = strconv.Atoi(os.Getenv("PAR"))
	}
	db, err := Open(context.Background(), filepath.Join(b.TempDir(), "m.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n atomic.Int64
	b.SetParallelism(par)
	before := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			id := fmt.Sprintf("run-%d", n.Add(1))
			journalRun(b, ctx, db, id)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/run")
}

// journalRun writes what the engine writes for a one-step run.
func journalRun(b *testing.B, ctx context.Context, db *DB, id string) {
	now := time.Now().UTC()
	run := &madspark.Run{ID: id, Pipeline: "debate", Status: madspark.RunRunning, Mode: "live", Provider: "openai", Model: "gpt-4o-mini",
		Params: json.RawMessage(`{"query":"What is Rust?","mode":"simple","rounds":2}`), CreatedAt: now}
	l := &madspark.RunLease{RunID: id, Token: "tok-" + id, Holder: "madspark serve (pid 1 on host h)", Host: "h", PID: 1}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(db.CreateRun(ctx, run))
	must(db.TakeRunLease(ctx, l, 30*time.Second))
	must(db.AppendEvent(ctx, &madspark.Event{RunID: id, Type: madspark.EventProgress, Stage: "route", Progress: 5, Message: "simple (confidence 0.90)"}))
	usage := llm.Usage{InputTokens: 20, OutputTokens: 20, LLMCalls: 1}
	must(db.SaveStep(ctx, &madspark.Step{RunID: id, Key: "direct", InputHash: "0123456789abcdef", Status: madspark.StepDone,
		Output: json.RawMessage(`{"text":"token token token token token token token token token token token token token token token token token token token token ","finish_reason":"stop"}`),
		Usage:  usage, StartedAt: now, FinishedAt: now,
		Calls: []madspark.Call{{Agent: "direct", Provider: "openai", Model: "gpt-4o-mini", System: "You answer.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "What is Rust?"}},
			Response: "token token token", Usage: usage, StartedAt: now, Attempt: 1}}}))
	run.Status, run.Result, run.Usage = madspark.RunSucceeded, json.RawMessage(`{"answer":"token token token"}`), usage
	must(db.FinishRun(ctx, run))
	must(db.AppendEvent(ctx, &madspark.Event{RunID: id, Type: madspark.EventResult, Stage: "done", Progress: 100, Message: "succeeded", Data: run.Result}))
	must(db.DropRunLease(ctx, l))
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Skipf("no CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
