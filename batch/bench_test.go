package batch_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/jobs"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/store/sqlite"
)

var (
	benchRows        = flag.Int("batch.rows", 100, "spark rows in BenchmarkBatchWall")
	benchConcurrency = flag.Int("batch.concurrency", 16, "runs worked at once in BenchmarkBatchWall")
	benchLatency     = flag.Duration("batch.latency", 50*time.Millisecond, "mock latency per model call in BenchmarkBatchWall")
)

// rig is a batch service over a SQLite file, the job queue working it in
// this process and the mock provider answering after a latency.
type rig struct {
	svc  *batch.Service
	reg  *pipeline.Registry
	stop func()
}

func newRig(b *testing.B, concurrency int, latency time.Duration) *rig {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "m.db"))
	if err != nil {
		b.Fatal(err)
	}
	hub := events.New(db, events.Options{})
	eng := &engine.Engine{Store: db, Client: mock.New(spark.MockResponders(), mock.WithLatency(latency)), Events: hub}
	reg := pipeline.NewRegistry()
	d, err := spark.Definition()
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Register(d); err != nil {
		b.Fatal(err)
	}
	q, err := jobs.Open(ctx, jobs.Config{Store: db, Registry: reg, Engine: eng, Mode: "mock", Provider: mock.Name, Model: mock.Model,
		Concurrency: concurrency, SQLite: db.WritePool()})
	if err != nil {
		b.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		b.Fatal(err)
	}
	return &rig{svc: batch.New(reg, q, db), reg: reg, stop: func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = q.Stop(sctx)
		hub.Close()
		db.Close()
	}}
}

// run submits n spark rows and waits for them; it returns the wall time.
func (r *rig) run(b *testing.B, n int, tag string) time.Duration {
	var csv strings.Builder
	csv.WriteString("topic,num_candidates\n")
	for i := range n {
		fmt.Fprintf(&csv, "%s topic %04d,3\n", tag, i)
	}
	in, err := r.svc.Parse("spark", "bench.csv", []byte(csv.String()), batch.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	bt, err := r.svc.Submit(ctx, "spark", "bench.csv", in, 0)
	if err != nil {
		b.Fatal(err)
	}
	done, err := r.svc.Wait(ctx, bt.ID, 100*time.Millisecond, nil)
	wall := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if c := batch.CountsOf(done); c.Succeeded != n {
		b.Fatalf("counts %+v", c)
	}
	return wall
}

// BenchmarkBatchWall runs -batch.rows spark rows through the job queue at
// -batch.concurrency against the mock provider (-batch.latency per call)
// and reports the batch's wall time over the ideal: rows × critical path ÷
// concurrency, the critical path being the wall time of a batch of one row
// measured in the same iteration. Rows come in whole waves, so when rows
// is not a multiple of concurrency the best possible ratio is
// ceil(rows ÷ concurrency) × concurrency ÷ rows (1.12 for 100 rows at 16);
// wall/waves-bound reports the ratio to that bound too. It also reports
// the process's peak RSS.
//
//	go test -run '^$' -bench BenchmarkBatchWall -benchtime 3x ./batch
//	go test -run '^$' -bench BenchmarkBatchWall -benchtime 1x -batch.rows 1000 ./batch
func BenchmarkBatchWall(b *testing.B) {
	n, c, l := *benchRows, *benchConcurrency, *benchLatency
	var ratio, waves float64
	for i := 0; i < b.N; i++ {
		r := newRig(b, c, l)
		r.run(b, 1, fmt.Sprintf("warm %d", i)) // the queue's first fetch
		cp := r.run(b, 1, fmt.Sprintf("one %d", i))
		wall := r.run(b, n, fmt.Sprintf("many %d", i))
		r.stop()
		ideal := float64(n) * float64(cp) / float64(c)
		ratio += float64(wall) / ideal
		waves += float64(wall) / (float64((n+c-1)/c) * float64(cp))
		b.ReportMetric(float64(cp.Milliseconds()), "ms-critical-path")
		b.ReportMetric(float64(wall.Milliseconds()), "ms-batch-wall")
	}
	b.ReportMetric(ratio/float64(b.N), "wall/ideal")
	b.ReportMetric(waves/float64(b.N), "wall/waves-bound")
	if rss, ok := peakRSS(); ok {
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	}
}

// peakRSS is this process's peak resident set size in bytes (Linux).
func peakRSS() (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
