package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
)

var (
	benchTopics  = flag.Int("batch.topics", 100, "topics in BenchmarkBatchThroughput")
	benchLatency = flag.Duration("batch.latency", 100*time.Millisecond, "simulated provider latency per call (L)")
	benchSlots   = flag.Int("batch.slots", 8, "simulated provider's concurrent slots (S), and the worker's --max-concurrent")
)

// slotted is a simulated provider on the OpenAI wire: S requests are served
// at once, each in L; the others wait for a slot, as at a rate-limited API.
type slotted struct {
	slots   chan struct{}
	latency time.Duration
	calls   atomic.Int64
	first   atomic.Int64 // UnixNano of the first request after mark
	mark    atomic.Int64
}

func newSlotted(s int, l time.Duration) *slotted {
	return &slotted{slots: make(chan struct{}, s), latency: l}
}

func (p *slotted) respond(req *openaitest.ChatRequest) openaitest.Reply {
	now := time.Now().UnixNano()
	if m := p.mark.Load(); m > 0 && now >= m {
		p.first.CompareAndSwap(0, now)
	}
	p.slots <- struct{}{}
	time.Sleep(p.latency)
	<-p.slots
	p.calls.Add(1)
	return liveReply(req)
}

// workerProcess starts madspark worker and waits until it holds its lease.
func workerProcess(b *testing.B, env map[string]string, args ...string) *exec.Cmd {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"worker"}, args...)...)
	cmd.Env = []string{"MADSPARK_TEST_AS_MAIN=1", "HOME=" + os.TempDir(), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return cmd
}

// peakRSS is a process's peak resident set size in bytes (Linux).
func peakRSS(pid int) (int64, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
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

func benchEnv(b *testing.B, url string) (map[string]string, string) {
	dbPath := filepath.Join(b.TempDir(), "m.db")
	return map[string]string{"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": dbPath}, dbPath
}

// BenchmarkBatchThroughput runs a batch of -batch.topics spark topics
// through a madspark worker process (--max-concurrent S) on a SQLite file,
// against a simulated provider with latency L and S slots. The bound is the
// provider's capacity: total calls × L ÷ S; it reports wall ÷ bound (the
// mean over the iterations), and the worker's peak RSS (the highest).
//
//	go test -run '^$' -bench BenchmarkBatchThroughput -benchtime 1x ./cmd/madspark
func BenchmarkBatchThroughput(b *testing.B) {
	L, S, n := *benchLatency, *benchSlots, *benchTopics
	var csv strings.Builder
	csv.WriteString("topic,num_candidates\n")
	for i := range n {
		fmt.Fprintf(&csv, "throughput topic %03d,5\n", i)
	}
	file := filepath.Join(b.TempDir(), "batch.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	var ratio, rss float64
	for i := 0; i < b.N; i++ {
		sim := newSlotted(S, L)
		srv := openaitest.NewServer(b, sim.respond)
		env, _ := benchEnv(b, srv.URL)
		w := workerProcess(b, env, "--max-concurrent", strconv.Itoa(S), "--no-cache")
		// Let the worker start before the clock does.
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		r := invoke(b, env, "batch", file, "--no-worker", "--output", filepath.Join(b.TempDir(), "r.json"))
		wall := time.Since(start)
		if r.code != 0 {
			b.Fatalf("batch exit %d: %s", r.code, r.stderr)
		}
		if peak, ok := peakRSS(w.Process.Pid); ok {
			rss = max(rss, float64(peak))
		}
		w.Process.Signal(os.Interrupt)
		w.Wait()
		calls := sim.calls.Load()
		bound := time.Duration(calls) * L / time.Duration(S)
		ratio += float64(wall) / float64(bound)
		b.ReportMetric(float64(calls)/float64(n), "calls/topic")
	}
	b.ReportMetric(ratio/float64(b.N), "wall/capacity-bound")
	if rss > 0 {
		b.ReportMetric(rss/(1<<20), "worker-peak-RSS-MiB")
	}
}

// BenchmarkRecovery measures how soon a restarted worker resumes the run
// its predecessor was working when it was killed (SIGKILL): the time from
// starting the new process to the provider's first request for the run's
// unfinished steps. The bound is a fresh worker's time to its first request
// for a newly queued run, measured in the same iteration: the ratio is what
// recovery adds to starting a worker at all.
//
//	go test -run '^$' -bench BenchmarkRecovery -benchtime 5x ./cmd/madspark
func BenchmarkRecovery(b *testing.B) {
	var recovery, fresh time.Duration
	for i := 0; i < b.N; i++ {
		sim := newSlotted(4, 200*time.Millisecond)
		srv := openaitest.NewServer(b, sim.respond)
		env, dbPath := benchEnv(b, srv.URL)
		file := filepath.Join(b.TempDir(), "one.csv")
		os.WriteFile(file, []byte("topic\nrecovery topic\n"), 0o644)

		// A fresh worker, for the bound: the batch is queued first.
		done := make(chan result, 1)
		go func() {
			done <- invoke(b, env, "batch", file, "--no-worker", "--output", filepath.Join(b.TempDir(), "r.json"))
		}()
		db, err := sqlite.Open(context.Background(), dbPath)
		if err != nil {
			b.Fatal(err)
		}
		waitFor(b, func() bool {
			runs, _ := db.Runs(context.Background(), madspark.RunFilter{Status: madspark.RunQueued})
			return len(runs) == 1
		})
		sim.mark.Store(time.Now().UnixNano())
		t0 := time.Now()
		w := workerProcess(b, env, "--no-cache")
		waitFor(b, func() bool { return sim.first.Load() > 0 })
		fresh += time.Unix(0, sim.first.Load()).Sub(t0)

		// Two steps done, then SIGKILL, then a new worker.
		waitFor(b, func() bool {
			runs, _ := db.Runs(context.Background(), madspark.RunFilter{})
			steps, _ := db.Steps(context.Background(), runs[0].ID)
			return countDone(steps) >= 2
		})
		w.Process.Signal(syscall.SIGKILL)
		w.Wait()
		time.Sleep(100 * time.Millisecond) // let in-flight requests drain at the fake
		sim.first.Store(0)
		sim.mark.Store(time.Now().UnixNano())
		t1 := time.Now()
		w = workerProcess(b, env, "--no-cache")
		waitFor(b, func() bool { return sim.first.Load() > 0 })
		recovery += time.Unix(0, sim.first.Load()).Sub(t1)
		if r := <-done; r.code != 0 {
			b.Fatalf("batch exit %d: %s", r.code, r.stderr)
		}
		w.Process.Signal(os.Interrupt)
		w.Wait()
		db.Close()
	}
	b.ReportMetric(float64(recovery.Milliseconds())/float64(b.N), "ms-restart-to-resumed-step")
	b.ReportMetric(float64(fresh.Milliseconds())/float64(b.N), "ms-fresh-start-to-first-step")
	b.ReportMetric(float64(recovery)/float64(fresh), "recovery/fresh-start")
}

func waitFor(b *testing.B, cond func() bool) {
	b.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("timed out")
		}
	}
}
