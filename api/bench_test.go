package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
)

// BenchmarkConcurrentRuns starts 200 spark runs at once through the API
// (POST /api/runs) in mock mode, with the mock taking a fixed latency per
// call and the queue's worker working 8 runs at a time, as a server's
// would; 200 clients follow their run by polling GET /api/runs/{id} every
// 50 ms until it is done. Every run must succeed.
//
// It reports the latency of GET /api/runs/{id} under that load (p50, p99,
// and p99 over the p50 of the same request on the idle server, measured
// first), and the runs completed per second with their ratio to the bound
// the worker's concurrency sets: 8 runs at a time, each taking 5 call
// latencies on its critical path.
//
// The defaults are short (20 ms per call); MADSPARK_BENCH_RUNS,
// MADSPARK_BENCH_WORKERS and MADSPARK_BENCH_LATENCY change them.
func BenchmarkConcurrentRuns(b *testing.B) {
	runs, workers, latency := 200, 8, 20*time.Millisecond
	if v, err := strconv.Atoi(os.Getenv("MADSPARK_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	if v, err := strconv.Atoi(os.Getenv("MADSPARK_BENCH_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	if v, err := time.ParseDuration(os.Getenv("MADSPARK_BENCH_LATENCY")); err == nil && v > 0 {
		latency = v
	}
	hs := newHarness(b, options{workers: workers, latency: latency})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: runs + 10}}
	get := func(id string) (api.Run, time.Duration, error) {
		start := time.Now()
		res, err := client.Get(hs.url + "/api/runs/" + id)
		if err != nil {
			return api.Run{}, 0, err
		}
		defer res.Body.Close()
		var run api.Run
		err = json.NewDecoder(res.Body).Decode(&run)
		d := time.Since(start)
		if err == nil && res.StatusCode != 200 {
			err = fmt.Errorf("GET run %s: %d", id, res.StatusCode)
		}
		return run, d, err
	}

	// The bound for the latency: the same request on the idle server.
	idleID := hs.sparkRun("idle")
	var idle []time.Duration
	for range 200 {
		_, d, err := get(idleID)
		if err != nil {
			b.Fatal(err)
		}
		idle = append(idle, d)
	}
	idleP50 := percentile(idle, 50)

	var all []time.Duration
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var (
			mu   sync.Mutex
			lat  []time.Duration
			wg   sync.WaitGroup
			fail = make(chan error, runs)
		)
		start := time.Now()
		for r := range runs {
			wg.Go(func() {
				body := fmt.Sprintf(`{"pipeline":"spark","params":{"topic":"load topic %d-%d"}}`, i, r)
				res, err := client.Post(hs.url+"/api/runs", "application/json", strings.NewReader(body))
				if err != nil {
					fail <- err
					return
				}
				var started api.StartRunResponse
				err = json.NewDecoder(res.Body).Decode(&started)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusAccepted {
					fail <- fmt.Errorf("POST /api/runs: %d %v", res.StatusCode, err)
					return
				}
				var mine []time.Duration
				for {
					run, d, err := get(started.RunID)
					if err != nil {
						fail <- err
						return
					}
					mine = append(mine, d)
					if run.Status.Final() {
						if run.Status != madspark.RunSucceeded {
							fail <- fmt.Errorf("run %s: %s: %s", run.RunID, run.Status, run.Error)
						}
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		close(fail)
		for err := range fail {
			b.Fatal(err)
		}
		all = append(all, lat...)
	}
	b.StopTimer()
	p50, p99 := percentile(all, 50), percentile(all, 99)
	perSecond := float64(runs*b.N) / elapsed.Seconds()
	bound := float64(workers) / (5 * latency).Seconds()
	b.ReportMetric(float64(p50.Microseconds())/1000, "get-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "get-p99-ms")
	b.ReportMetric(float64(p99)/float64(idleP50), "get-p99/idle-p50")
	b.ReportMetric(perSecond, "runs/s")
	b.ReportMetric(perSecond/bound, "runs/s/bound")
	b.ReportMetric(float64(len(all))/float64(b.N), "gets/op")
	b.ReportMetric(0, "ns/op")
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}
