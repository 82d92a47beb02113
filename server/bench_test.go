package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// ttftModel waits latency, then streams tokens, and records when each
// request's first token left it.
type ttftModel struct {
	latency time.Duration
	tokens  int
	mu      sync.Mutex
	own     map[string]time.Duration // request tag → the model's own time to first token
	emitted map[string]time.Time
}

func (m *ttftModel) ID() string { return "bench" }

func (m *ttftModel) Complete(ctx context.Context, p Prompt, out *Stream) (*Completion, error) {
	start := time.Now()
	select {
	case <-time.After(m.latency):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	tag := p.Query()
	for i := 0; i < m.tokens; i++ {
		if i == 0 {
			now := time.Now()
			m.mu.Lock()
			m.own[tag], m.emitted[tag] = now.Sub(start), now
			m.mu.Unlock()
		}
		out.Text("tok ")
	}
	return &Completion{Text: strings.Repeat("tok ", m.tokens)}, nil
}

// BenchmarkStreamingTTFT measures the overhead the server adds to the
// time to first token: per request, the time to the first content token at
// the client minus the model's own time to first token. C clients stream
// concurrently over a real loopback listener, in two shapes:
//
//   - closed: each client sends its next request as soon as its previous
//     stream ends (b.N requests each), as long-lived clients do;
//   - burst: all C requests leave at the same instant (b.N waves), the
//     worst case for a 2-core machine that also runs the C clients.
//
// A first, unmeasured round opens the connections. It reports the p50 and
// p99 overhead (ttft-overhead-p50-ms, ttft-overhead-p99-ms) and the failed
// requests (errors, which must be 0). One iteration is one round: with
// -benchtime 1x the whole benchmark takes about two seconds.
//
//	go test -run '^$' -bench BenchmarkStreamingTTFT -benchtime 1x ./server
func BenchmarkStreamingTTFT(b *testing.B) {
	for _, shape := range []string{"closed", "burst"} {
		for _, c := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("%s/clients=%d", shape, c), func(b *testing.B) { benchTTFT(b, shape, c) })
		}
	}
}

func benchTTFT(b *testing.B, shape string, c int) {
	m := &ttftModel{latency: 20 * time.Millisecond, tokens: 20, own: map[string]time.Duration{}, emitted: map[string]time.Time{}}
	s, err := New(Config{Models: []Model{m}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			b.Errorf("Serve: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/v1/chat/completions"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c, DisableCompression: true}}
	defer client.CloseIdleConnections()

	var mu sync.Mutex
	var overheads []time.Duration
	errs := 0
	one := func(tag string, measure bool) {
		body := `{"model":"bench","stream":true,"messages":[{"role":"user","content":"` + tag + `"}]}`
		sent := time.Now()
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			mu.Lock()
			errs++
			mu.Unlock()
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		var first time.Time
		done := false
		for {
			line, err := br.ReadString('\n')
			if first.IsZero() && strings.Contains(line, `"content":"tok `) {
				first = time.Now()
			}
			if strings.HasPrefix(line, "data: [DONE]") {
				done = true
			}
			if err != nil {
				break
			}
		}
		m.mu.Lock()
		own := m.own[tag]
		m.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		if resp.StatusCode != 200 || !done || first.IsZero() {
			errs++
			return
		}
		if measure {
			overheads = append(overheads, first.Sub(sent)-own)
		}
	}
	// rounds runs n rounds of C concurrent clients.
	rounds := func(n int, measure bool) {
		var wg sync.WaitGroup
		if shape == "closed" {
			for i := 0; i < c; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; k < n; k++ {
						one(fmt.Sprintf("c%d-%d-%v", i, k, measure), measure)
					}
				}()
			}
			wg.Wait()
			return
		}
		for k := 0; k < n; k++ {
			for i := 0; i < c; i++ {
				wg.Add(1)
				go func() { defer wg.Done(); one(fmt.Sprintf("b%d-%d-%v", i, k, measure), measure) }()
			}
			wg.Wait()
		}
	}
	rounds(1, false) // open the connections
	errs = 0
	b.ResetTimer()
	rounds(b.N, true)
	b.StopTimer()
	slices.Sort(overheads)
	pct := func(p float64) float64 {
		if len(overheads) == 0 {
			return 0
		}
		return float64(overheads[int(float64(len(overheads)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "ttft-overhead-p50-ms")
	b.ReportMetric(pct(0.99), "ttft-overhead-p99-ms")
	b.ReportMetric(float64(errs), "errors")
}

// BenchmarkRequestGuards measures what the server's handler (request log
// and metrics, Host check, CORS, origin check, token, routing) costs a
// request of a progress stream's route, beside the bare mux serving the
// same request in the same run: sub-benchmarks "guarded" and "mux", and
// the ratio of the two as guarded/mux (reported by the first). The
// request carries the token and a same-origin Origin, so every check runs
// to the end.
func BenchmarkRequestGuards(b *testing.B) {
	token := strings.Repeat("t", MinTokenLength)
	s, err := New(Config{Models: []Model{newFake("m")}, Token: token, CORSOrigins: []string{"https://ui.example"},
		StreamRoutes: []string{"GET /api/runs/{id}/events"}})
	if err != nil {
		b.Fatal(err)
	}
	s.Mux().HandleFunc("GET /api/runs/{id}/events", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	req, _ := http.NewRequest(http.MethodGet, "http://localhost:8080/api/runs/r1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Origin", "http://localhost:8080")
	req.RemoteAddr = "127.0.0.1:5000"
	serve := func(b *testing.B, h http.Handler) time.Duration {
		w := &discardWriter{header: http.Header{}}
		start := time.Now()
		for b.Loop() {
			clear(w.header)
			h.ServeHTTP(w, req)
			if w.status != http.StatusNoContent {
				b.Fatalf("status %d", w.status)
			}
		}
		return time.Since(start) / time.Duration(b.N)
	}
	var mux time.Duration
	b.Run("mux", func(b *testing.B) { mux = serve(b, s.Mux()) })
	b.Run("guarded", func(b *testing.B) {
		guarded := serve(b, s.Handler())
		if mux > 0 {
			b.ReportMetric(float64(guarded)/float64(mux), "guarded/mux")
		}
	})
}

// discardWriter is a ResponseWriter that keeps the status only.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

func (w *discardWriter) WriteHeader(code int) { w.status = code }

// BenchmarkDecode measures reading a request into an exchange (strict
// decoding, every field's check, the messages, the model's settings) for
// a chat UI's follow-up in each API, beside decoding the same body into
// a map with encoding/json in the same run (the floor: reading the JSON
// at all); each reports decode/json.
func BenchmarkDecode(b *testing.B) {
	s, err := New(Config{Models: []Model{newFake("m")}, MaxBodyBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	answer := strings.Repeat("An idea about balconies and what grows on them. ", 40)
	bodies := map[string]string{
		"chat": `{"model":"m","stream":true,"stream_options":{"include_usage":true},"user":"652ac880c4102a77fe54c5db","messages":[` +
			`{"role":"system","content":"Keep it short."},{"role":"user","content":"urban farming"},` +
			`{"role":"assistant","content":"` + answer + `"},{"role":"user","content":"only on balconies"}],"temperature":0.7,"max_tokens":1024}`,
		"responses": `{"model":"m","stream":true,"instructions":"Keep it short.","input":[{"role":"user","content":"urban farming"},` +
			`{"role":"assistant","content":"` + answer + `"},{"role":"user","content":"only on balconies"}],"reasoning":{"effort":"low"},"max_output_tokens":1024}`,
	}
	for _, api := range []string{"chat", "responses"} {
		body := []byte(bodies[api])
		decode := s.decodeChat
		if api == "responses" {
			decode = s.decodeResponses
		}
		var floor time.Duration
		b.Run(api+"/json", func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					b.Fatal(err)
				}
			}
			floor = time.Since(start) / time.Duration(b.N)
		})
		b.Run(api+"/decode", func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				if _, err := decode(body); err != nil {
					b.Fatal(err)
				}
			}
			if floor > 0 {
				b.ReportMetric(float64(time.Since(start)/time.Duration(b.N))/float64(floor), "decode/json")
			}
		})
	}
}
