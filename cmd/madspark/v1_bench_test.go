package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

var (
	v1Rounds  = flag.Int("v1.rounds", 3, "completions each client of BenchmarkV1Overhead streams, straight to the provider and then through madspark")
	v1Shapes  = flag.String("v1.shapes", "steady", "comma-separated shapes of BenchmarkV1Overhead: steady (each client streams one completion after another, the clients' starts spread), burst (all at once, round after round)")
	v1Streams = flag.String("v1.streams", "16,100", "comma-separated concurrent streams of BenchmarkV1Overhead")
	v1Latency = flag.Duration("v1.latency", 300*time.Millisecond, "the simulated provider's time to its first token")
	v1Rate    = flag.Float64("v1.rate", 50, "the simulated provider's tokens per second")
	v1Tokens  = flag.Int("v1.tokens", 20, "tokens of each streamed reply")
	v1Profile = flag.String("v1.cpuprofile", "", "write the server process's CPU profile to this file")
	v1Repeat  = flag.Int("v1.repeat", 3, "times BenchmarkV1Overhead measures the three ways in turn (straight, the floor, madspark), so that a machine's drift falls on all three alike")
	v1Idle    = flag.Duration("v1.idle", time.Second, "how long the server's CPU time is measured with no request, to subtract it from the requests'")
)

// BenchmarkV1Overhead measures what madspark adds to a streamed chat
// completion of madspark-direct, the way a client sees it: the official
// OpenAI Go client streams from a simulated provider on the OpenAI wire
// (-v1.latency to the first token, then -v1.rate tokens a second,
// -v1.tokens in all) straight, through a bare reverse proxy (the floor:
// net/http/httputil flushing every write, a process of its own), and
// through `madspark serve` (a process of its own, as users run it, cache
// off, its provider concurrency above the streams), with S clients at once
// (-v1.streams, 16 and 100), each streaming -v1.rounds completions; the
// three are measured in turn, -v1.repeat times, so that a machine's drift
// falls on all three alike. In the steady shape each client streams one
// completion after another and the clients' starts are spread over one
// completion's length, as independent clients arrive; in the burst shape
// (-v1.shapes steady,burst) all S start at the same instant, round after
// round, the worst case. A first burst opens the connections and is not
// measured. It reports:
//
//   - p99-ttft-overhead-ms: the 99th percentile time to the first content
//     token through madspark minus that straight to the provider (the
//     bound: 10 ms at 16 streams, 25 ms at 100), and p50-ttft-overhead-ms;
//     floor-p99-ttft-overhead-ms is the bare proxy's;
//   - cpu-ms/request: the CPU time (user + system) of the madspark process
//     while it served the measured completions, less what it spends with
//     no request at all (idle-cpu-%, measured for -v1.idle before: its
//     queue worker's polls and lease renewals), per request (the bound:
//     1 ms); floor-cpu-ms/request is the bare proxy's, what any process
//     between the client and the provider spends on this machine, and
//     cpu-over-floor the ratio of the two;
//   - errors: failed streams, which must be 0.
//
// One iteration is the whole measurement; about half a minute by default:
//
//	go test -run '^$' -bench BenchmarkV1Overhead -benchtime 1x ./cmd/madspark
//
// -v1.rounds, -v1.repeat, -v1.streams, -v1.tokens scale it up;
// -v1.cpuprofile FILE profiles the server process.
func BenchmarkV1Overhead(b *testing.B) {
	for _, shape := range strings.Split(*v1Shapes, ",") {
		if shape != "steady" && shape != "burst" {
			b.Fatalf("-v1.shapes: %q is neither steady nor burst", shape)
		}
		for _, s := range strings.Split(*v1Streams, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				b.Fatalf("-v1.streams: %q is not a positive number", s)
			}
			b.Run(fmt.Sprintf("%s/streams=%d", shape, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					benchV1(b, shape, n)
				}
			})
		}
	}
}

func benchV1(b *testing.B, shape string, streams int) {
	words := strings.Repeat("token ", *v1Tokens)
	interval := time.Duration(float64(time.Second) / *v1Rate)
	fake := openaitest.NewServer(b, func(*openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Content: words, Interval: interval, PromptTokens: 20, CompletionTokens: *v1Tokens}
	})
	fake.Latency(*v1Latency)
	env := map[string]string{
		"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": fake.URL, "OPENAI_API_KEY": "sk-test",
		"MADSPARK_DB": filepath.Join(b.TempDir(), "m.db"), "MADSPARK_RATE_LIMIT": "off",
		"MADSPARK_PROVIDER_CONCURRENCY": strconv.Itoa(2 * streams),
	}
	base, cpu, stop := startServe(b, env)
	defer stop()
	floorBase, floorCPU, stopFloor := startFloor(b, fake.URL)
	defer stopFloor()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}}
	defer hc.CloseIdleConnections()
	client := func(url string) sdk.Client {
		return sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	}
	straight, through, floor := client(fake.URL), client(base+"/v1"), client(floorBase)
	var mu sync.Mutex
	errs := 0
	// one streams a completion from c with model and returns its time to
	// the first token.
	one := func(c sdk.Client, model string, n int) time.Duration {
		start := time.Now()
		st := c.Chat.Completions.NewStreaming(context.Background(), sdk.ChatCompletionNewParams{
			Model:    sdk.ChatModel(model),
			Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage(fmt.Sprintf("What is Rust? (%d)", n))},
		})
		defer st.Close()
		var ttft time.Duration
		for st.Next() {
			if ch := st.Current(); ttft == 0 && len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				ttft = time.Since(start)
			}
		}
		if st.Err() != nil || ttft == 0 {
			mu.Lock()
			errs++
			if errs == 1 {
				b.Logf("%s: %v (first token after %s)", model, st.Err(), ttft)
			}
			mu.Unlock()
		}
		return ttft
	}
	// phase streams rounds completions on each of S clients, and returns
	// their times to the first token. Steady: each client streams one
	// after another, the clients' starts spread over one stream's length;
	// burst: the S clients stream at once, round after round.
	phase := func(c sdk.Client, model, shape string, rounds int) []time.Duration {
		out := make([]time.Duration, streams*rounds)
		length := *v1Latency + time.Duration(float64(*v1Tokens) / *v1Rate * float64(time.Second))
		if shape == "burst" {
			for r := range rounds {
				var wg sync.WaitGroup
				for i := range streams {
					wg.Go(func() { out[r*streams+i] = one(c, model, r*streams+i) })
				}
				wg.Wait()
			}
			return out
		}
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() {
				time.Sleep(length * time.Duration(i) / time.Duration(streams))
				for r := range rounds {
					out[r*streams+i] = one(c, model, r*streams+i)
				}
			})
		}
		wg.Wait()
		return out
	}
	phase(straight, "gpt-4o-mini", "burst", 1) // open the connections
	phase(through, "madspark-direct", "burst", 1)
	phase(floor, "gpt-4o-mini", "burst", 1)
	errs = 0
	// What the server spends with no request (its queue worker's polls,
	// lease renewals) is not the requests' cost.
	idleStart, idleCPU, idleFloor := time.Now(), cpu(), floorCPU()
	time.Sleep(*v1Idle)
	idleRate := float64(cpu()-idleCPU) / float64(time.Since(idleStart))
	floorIdle := float64(floorCPU()-idleFloor) / float64(time.Since(idleStart))
	// measure runs a phase through c and adds its times to the first
	// token to ttft and the CPU time the process whose CPU time is used
	// spent on it, less what it spends idle at idle, to spent.
	measure := func(c sdk.Client, model string, used func() time.Duration, idle float64, ttft *[]time.Duration, spent *time.Duration) {
		before, start := used(), time.Now()
		*ttft = append(*ttft, phase(c, model, shape, *v1Rounds)...)
		*spent += used() - before - time.Duration(idle*float64(time.Since(start)))
	}
	var (
		direct, bare, proxied []time.Duration
		floorSpent, spent     time.Duration
	)
	b.ResetTimer()
	for range max(*v1Repeat, 1) {
		direct = append(direct, phase(straight, "gpt-4o-mini", shape, *v1Rounds)...)
		measure(floor, "gpt-4o-mini", floorCPU, floorIdle, &bare, &floorSpent)
		measure(through, "madspark-direct", cpu, idleRate, &proxied, &spent)
	}
	per, floorPer := spent/time.Duration(len(proxied)), floorSpent/time.Duration(len(bare))
	b.StopTimer()
	p := func(d []time.Duration, q float64) time.Duration {
		slices.Sort(d)
		return d[int(float64(len(d)-1)*q)]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(p(proxied, 0.99)-p(direct, 0.99)), "p99-ttft-overhead-ms")
	b.ReportMetric(ms(p(proxied, 0.50)-p(direct, 0.50)), "p50-ttft-overhead-ms")
	b.ReportMetric(ms(p(direct, 0.99)), "p99-ttft-straight-ms")
	b.ReportMetric(ms(per), "cpu-ms/request")
	b.ReportMetric(ms(floorPer), "floor-cpu-ms/request")
	b.ReportMetric(float64(per)/float64(floorPer), "cpu-over-floor")
	b.ReportMetric(ms(p(bare, 0.99)-p(direct, 0.99)), "floor-p99-ttft-overhead-ms")
	b.ReportMetric(idleRate*100, "idle-cpu-%")
	b.ReportMetric(float64(errs), "errors")
}

// startServe starts `madspark serve` as a process of its own with env
// (cache off) and returns its base URL, a function that reads the CPU time
// it has used so far, and a function that stops it.
func startServe(b *testing.B, env map[string]string) (string, func() time.Duration, func()) {
	b.Helper()
	vars := []string{"MADSPARK_TEST_AS_MAIN=1", "HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH")}
	if *v1Profile != "" {
		path, err := filepath.Abs(*v1Profile)
		if err != nil {
			b.Fatal(err)
		}
		vars = append(vars, "MADSPARK_TEST_CPUPROFILE="+path)
	}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return startChild(b, vars, "serve", "--addr", "127.0.0.1:0", "--no-cache")
}

// startFloor starts the floor of the measure: this test binary as a bare
// reverse proxy to upstream (bareProxy), a process of its own like the
// server. It returns what startServe does.
func startFloor(b *testing.B, upstream string) (string, func() time.Duration, func()) {
	b.Helper()
	return startChild(b, []string{"MADSPARK_TEST_AS_PROXY=" + upstream})
}

// startChild starts this test binary with env and args, waits until it
// says where it serves, and returns what startServe does.
func startChild(b *testing.B, env []string, args ...string) (string, func() time.Duration, func()) {
	b.Helper()
	addr := regexp.MustCompile(`serving http://([0-9.:]+)`)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := addr.FindStringSubmatch(sc.Text()); m != nil {
				found <- "http://" + m[1]
			}
		}
	}()
	select {
	case base := <-found:
		return base, func() time.Duration { return processCPU(b, cmd.Process.Pid) }, stop
	case <-time.After(30 * time.Second):
		stop()
		b.Fatal("the process did not start")
	}
	return "", nil, nil
}

// bareProxy serves, until interrupted, a reverse proxy to upstream that
// flushes every write at once: the least a process between an OpenAI
// client and its provider can do, the floor BenchmarkV1Overhead measures
// madspark against. It says where it serves as `madspark serve` does.
func bareProxy(upstream string) int {
	target, err := url.Parse(upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
	srv := &http.Server{Handler: rp}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	fmt.Fprintf(os.Stderr, "serving http://%s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// processCPU is the CPU time process pid has used: the sum of its
// threads' time on a CPU from Linux's /proc/PID/task/*/schedstat, in
// nanoseconds (a Go process keeps its threads), else the user and system
// time of /proc/PID/stat, in clock ticks of 10 ms.
func processCPU(b *testing.B, pid int) time.Duration {
	if tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid)); err == nil && len(tasks) > 0 {
		var sum time.Duration
		for _, task := range tasks {
			data, err := os.ReadFile(task)
			if err != nil {
				continue // a thread that exited
			}
			if fields := strings.Fields(string(data)); len(fields) > 0 {
				ns, _ := strconv.ParseInt(fields[0], 10, 64)
				sum += time.Duration(ns)
			}
		}
		return sum
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no CPU times for the server: %v", err)
	}
	// The fields after the command's name, which ends with ") ".
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// profiledMain is main, with a CPU profile of the process written to path.
func profiledMain(path string) int {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pprof.StopCPUProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, os.Args[1:], osEnv(), os.Stdin, os.Stdout, os.Stderr)
}
