package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/store/postgres/pgtest"
)

func TestGenerateIdeas(t *testing.T) {
	hs := newHarness(t, options{})
	r := hs.do("POST", "/api/generate-ideas", map[string]any{"topic": "urban farming", "context": "cheap", "num_candidates": 4,
		"num_top_candidates": 2, "temperature_preset": "wild", "enhanced_reasoning": true, "no_novelty_filter": true, "tags": []string{"sync"}})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var rep struct {
		RunID      string `json:"run_id"`
		Pipeline   string `json:"pipeline"`
		Mode       string `json:"mode"`
		Topic      string `json:"topic"`
		Candidates []struct {
			MultiDim *struct{ Mean float64 } `json:"multi_dimensional_evaluation"`
		} `json:"candidates"`
		Usage struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"usage"`
	}
	r.json(t, &rep)
	if rep.Pipeline != "spark" || rep.Mode != "mock" || rep.Topic != "urban farming" || len(rep.Candidates) != 2 ||
		rep.Candidates[0].MultiDim == nil || rep.Usage.LLMCalls != 8 || r.header.Get("Location") != "/api/runs/"+rep.RunID {
		t.Fatalf("report: %s", clip(r.body))
	}
	run := hs.run(rep.RunID)
	var p struct {
		Temperatures  struct{ Generate float64 } `json:"temperatures"`
		NoveltyFilter bool                       `json:"novelty_filter"`
	}
	_ = json.Unmarshal(run.Params, &p)
	if run.Status != madspark.RunSucceeded || p.Temperatures.Generate != 1.2 || p.NoveltyFilter || run.Tags[0] != "sync" {
		t.Errorf("recorded run: %+v %s", run.RunSummary, run.Params)
	}
	// Fewer ideas than the default number argued over: all of them.
	r = hs.do("POST", "/api/generate-ideas", map[string]any{"topic": "x", "num_candidates": 2})
	r.json(t, &rep)
	if r.status != 200 || len(rep.Candidates) != 2 {
		t.Errorf("num_candidates 2: %d %s", r.status, clip(r.body))
	}
	for _, tc := range []struct {
		body   string
		status int
		field  string
	}{
		{`{"topic":"x","temperature_preset":"spicy"}`, 422, "temperature_preset"},
		{`{"topic":"x","temperature_preset":"wild","temperature":1}`, 422, "temperature"},
		{`{"topic":"x","temperature":3}`, 422, "temperature"},
		{`{"topic":"x","num_candidates":0}`, 422, "num_candidates"},
		{`{"topic":"x","num_top_candidates":9}`, 422, "num_top_candidates"},
		{`{"topic":"x","novelty_threshold":2}`, 422, "novelty_threshold"},
		{`{"topic":""}`, 422, "topic"},
		{`{"context":"y"}`, 422, "topic"},
		{`{"theme":"x"}`, 400, "theme"},
		{`{"topic":"x","num_candidates":"3"}`, 400, "num_candidates"},
		{`{"topic":"x","tags":[""]}`, 422, "tags[0]"},
	} {
		r := hs.do("POST", "/api/generate-ideas", tc.body)
		if e := r.err(t); r.status != tc.status || e.Error.Field != tc.field {
			t.Errorf("%s: %d %q %s; want %d %q", tc.body, r.status, e.Error.Field, e.Error.Message, tc.status, tc.field)
		}
	}
}

func TestTemperaturePresets(t *testing.T) {
	hs := newHarness(t, options{})
	var p api.Presets
	hs.do("GET", "/api/temperature-presets", nil).json(t, &p)
	if len(p.Presets) != 4 || p.Default != "creative" || p.Presets["balanced"].IdeaGeneration != 0.7 || p.Presets["wild"].Evaluation != 0.4 {
		t.Errorf("presets: %+v", p)
	}
}

func TestHealthDetailed(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:6379: connection refused")
	var cacheErr error
	hs := newHarness(t, options{workers: 1, config: func(c *api.Config) {
		c.Info.Cache, c.Info.CachePing = "redis", func(context.Context) error { return cacheErr }
	}})
	health := func() (int, api.HealthDetailed) {
		r := hs.do("GET", "/health/detailed", nil)
		var h api.HealthDetailed
		r.json(t, &h)
		return r.status, h
	}
	status, h := health()
	if status != 200 || h.Status != "ok" || h.LastRun != nil || h.ErrorRate1h != 0 || !h.Database.OK || h.Database.Driver != "sqlite" ||
		!h.Cache.OK || h.Cache.Driver != "redis" || !h.Queue.OK || h.Queue.Workers != 1 || h.Mode != "mock" || h.ProviderConfigured {
		t.Errorf("fresh: %d %+v", status, h)
	}
	ok := hs.succeeded("spark", map[string]any{"topic": "x", "num_candidates": 1, "num_top_candidates": 1})
	// A failed run: its parameters no longer decode when a worker takes it.
	failed := &madspark.Run{ID: "failed-run", Pipeline: "spark", Status: madspark.RunFailed, Error: "boom", CreatedAt: time.Now(), FinishedAt: time.Now().Add(time.Millisecond)}
	if err := hs.db.CreateRun(t.Context(), failed); err != nil {
		t.Fatal(err)
	}
	cacheErr = down
	status, h = health()
	if status != 200 || h.Status != "degraded" || h.Cache.OK || !strings.Contains(h.Cache.Error, "connection refused") ||
		h.LastRun == nil || h.LastRun.RunID != "failed-run" || h.LastRun.Status != madspark.RunFailed || h.ErrorRate1h != 0.5 || h.Finished1h != 2 {
		t.Errorf("after a success and a failure, cache down: %d %+v (ok run %s)", status, h, ok.RunID)
	}
	// Without a worker the queue is not healthy.
	idle := newHarness(t, options{})
	r := idle.do("GET", "/health/detailed", nil)
	r.json(t, &h)
	if h.Status != "degraded" || h.Queue.OK || h.Queue.Workers != 0 {
		t.Errorf("no worker: %+v", h)
	}
}

// TestRateLimit: a client over its rate gets 429 with Retry-After, in the
// API's error shape, whatever bearer token it makes up.
func TestRateLimit(t *testing.T) {
	hs := newHarness(t, options{config: func(c *api.Config) { c.RateLimit, c.RateBurst = 0.5, 3 }})
	for i := range 3 {
		if r := hs.do("GET", "/api/pipelines", nil); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	r := hs.do("GET", "/api/runs", nil)
	e := r.err(t)
	retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 429 || e.Error.Type != "rate_limited" || retry < 1 || retry > 2 {
		t.Fatalf("over the limit: %d %v %s", r.status, r.header, r.body)
	}
	// A token the server did not check is no new client: fresh random
	// tokens do not get fresh buckets.
	for i := range 3 {
		if r := hs.do("GET", "/api/pipelines", nil, "Authorization", fmt.Sprintf("Bearer random-%d", i)); r.status != 429 {
			t.Errorf("made-up token %d: %d, want 429", i, r.status)
		}
	}
	// The server's own endpoints are not limited.
	if r := hs.do("GET", "/health", nil); r.status != 200 {
		t.Errorf("/health: %d", r.status)
	}
}

// TestAuthAndCORS: the API is behind the server's token, and a page of an
// allowed origin may call it.
func TestAuthAndCORS(t *testing.T) {
	hs := newHarness(t, options{token: "s3cret-tok", origins: []string{"http://localhost:5173"}})
	hs.token = ""
	for _, path := range []string{"/api/runs", "/api/pipelines", "/health/detailed", "/api/openapi.json", "/ws/runs/x"} {
		r := hs.do("GET", path, nil)
		if e := r.err(t); r.status != 401 || e.Error.Type != "unauthorized" || strings.Contains(string(r.body), "s3cret") {
			t.Errorf("GET %s without the token: %d %s", path, r.status, r.body)
		}
	}
	hs.token = "s3cret-tok"
	r := hs.do("GET", "/api/runs", nil, "Origin", "http://localhost:5173")
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("with the token, from the allowed origin: %d %v", r.status, r.header)
	}
	req, _ := http.NewRequest("OPTIONS", hs.url+"/api/runs", nil)
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 204 || !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", res.StatusCode, res.Header)
	}
}

// TestPipelineModels: every pipeline that takes one line of text is an
// OpenAI model answering with its run's Markdown; proposal, which needs a
// profile, is not.
func TestPipelineModels(t *testing.T) {
	hs := newHarness(t, options{})
	r := hs.do("GET", "/v1/models", nil)
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	r.json(t, &list)
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "madspark-assess,madspark-chaos,madspark-spark" {
		t.Errorf("models: %v", ids)
	}
	for model, want := range map[string]string{"madspark-spark": "Ideas: urban farming", "madspark-chaos": "urban farming", "madspark-assess": "urban farming"} {
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"urban farming"}]}`, model)
		r := hs.do("POST", "/v1/chat/completions", body)
		var c struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
			Madspark struct {
				RunID string `json:"run_id"`
			} `json:"madspark"`
		}
		r.json(t, &c)
		if r.status != 200 || len(c.Choices) != 1 || !strings.Contains(c.Choices[0].Message.Content, want) || !strings.Contains(c.Choices[0].Message.Content, "MOCK DATA") {
			t.Errorf("%s: %d %s", model, r.status, clip(r.body))
			continue
		}
		if run := hs.run(c.Madspark.RunID); run.Status != madspark.RunSucceeded || "madspark-"+run.Pipeline != model {
			t.Errorf("%s: run %+v", model, run.RunSummary)
		}
	}
	r = hs.do("POST", "/v1/chat/completions", `{"model":"madspark-spark","messages":[{"role":"user","content":"`+strings.Repeat("x", 2001)+`"}]}`)
	if r.status != 400 || !strings.Contains(string(r.body), "topic is 2001 characters") {
		t.Errorf("over-long topic: %d %s", r.status, r.body)
	}
}

// TestPipelineModelClientGone: a chat client that goes away mid-run
// cancels the run, which is recorded as cancelled, not failed.
func TestPipelineModelClientGone(t *testing.T) {
	hs := newHarness(t, options{latency: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", hs.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"madspark-spark","messages":[{"role":"user","content":"urban farming"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the request was answered (%d) before the client went away", res.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var l api.RunList
		hs.do("GET", "/api/runs?pipeline=spark", nil).json(t, &l)
		if len(l.Runs) == 1 && l.Runs[0].Status == madspark.RunCancelled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs: %+v", l.Runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPostgres: the paths that touch the store, on PostgreSQL.
func TestPostgres(t *testing.T) {
	hs := newHarness(t, options{postgres: pgtest.URL(t), workers: 2})
	run := hs.succeeded("spark", map[string]any{"topic": "urban farming", "num_candidates": 3})
	hs.succeeded("spark", map[string]any{"topic": "ocean cleanup", "num_candidates": 3})
	var l api.RunList
	hs.do("GET", "/api/runs?q=Urban", nil).json(t, &l)
	if len(l.Runs) != 1 || l.Runs[0].RunID != run.RunID {
		t.Errorf("q=Urban: %+v", l.Runs)
	}
	r, b := hs.bookmark(run.RunID, 0, map[string]any{"tags": []string{"pg"}})
	if r.status != 201 {
		t.Fatalf("bookmark: %d %s", r.status, r.body)
	}
	if r, _ := hs.bookmark(run.RunID, 0, nil); r.status != 409 {
		t.Errorf("duplicate on PostgreSQL: %d", r.status)
	}
	if p := hs.bookmarks("/api/bookmarks/search?q=URBAN&tag=pg"); p.Total != 1 || p.Bookmarks[0].ID != b.Bookmark.ID {
		t.Errorf("search: %+v", p)
	}
	evs, _, err := hs.sse(t.Context(), "/api/runs/"+run.RunID+"/events")
	if err != nil || len(evs) < 3 || evs[len(evs)-1].event != "result" {
		t.Errorf("events on PostgreSQL: %d, %v", len(evs), err)
	}
	exp := hs.do("GET", "/api/bookmarks/export", nil)
	other := newHarness(t, options{postgres: pgtest.URL(t)})
	if r := other.do("POST", "/api/bookmarks/import", exp.body); r.status != 200 || !strings.Contains(string(r.body), `"imported":1`) {
		t.Errorf("import on PostgreSQL: %d %s", r.status, r.body)
	}
}

// TestPipelineModelSettings: the settings clients send by default each
// have their effect on a pipeline model: promptfoo's temperature 0 and
// max_tokens 1024 are taken; temperature, top_p and seed replace every
// agent's own and the instructions join every system prompt; max_tokens
// cuts the answer with finish_reason length; stop ends it before the
// sequence. A JSON format and tools are refused naming them.
func TestPipelineModelSettings(t *testing.T) {
	hs := newHarness(t, options{})
	type completion struct {
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
		Madspark struct {
			RunID string `json:"run_id"`
		} `json:"madspark"`
	}
	ask := func(body string) (completion, resp) {
		r := hs.do("POST", "/v1/chat/completions", body)
		var c completion
		if r.status == 200 {
			r.json(t, &c)
		}
		return c, r
	}
	for _, model := range []string{"madspark-spark", "madspark-chaos", "madspark-assess"} {
		// promptfoo's defaults.
		c, r := ask(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"urban farming"}],"temperature":0,"max_tokens":1024}`, model))
		if r.status != 200 || c.Choices[0].FinishReason == "" {
			t.Fatalf("%s with promptfoo's defaults: %d %s", model, r.status, clip(r.body))
		}
		full, r := ask(fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":"Answer in French."},{"role":"user","content":"urban farming"}],"temperature":0.1,"top_p":0.4,"seed":3}`, model))
		if r.status != 200 || full.Choices[0].FinishReason != "stop" {
			t.Fatalf("%s: %d %s", model, r.status, clip(r.body))
		}
		steps, err := hs.db.Steps(t.Context(), full.Madspark.RunID)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		for _, s := range steps {
			for _, call := range s.Calls {
				calls++
				if call.Temperature != 0.1 || !strings.HasSuffix(call.System, "Answer in French.") {
					t.Errorf("%s: step %s: temperature %v, system …%q", model, s.Key, call.Temperature, clip([]byte(call.System[max(0, len(call.System)-60):])))
				}
			}
		}
		if calls == 0 {
			t.Errorf("%s: no call journaled", model)
		}

		cut, r := ask(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"urban farming"}],"max_completion_tokens":20}`, model))
		text := cut.Choices[0].Message.Content
		if r.status != 200 || cut.Choices[0].FinishReason != "length" || !strings.HasPrefix(full.Choices[0].Message.Content, text[:min(len(text), 10)]) || len(text) > 200 {
			t.Errorf("%s max_tokens 20: %d %q %s", model, r.status, text, cut.Choices[0].FinishReason)
		}
		// A stop sequence that the document holds: its first line ends.
		stopped, r := ask(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"urban farming"}],"stop":["\n"]}`, model))
		if r.status != 200 || strings.Contains(stopped.Choices[0].Message.Content, "\n") || stopped.Choices[0].FinishReason != "stop" ||
			!strings.HasPrefix(full.Choices[0].Message.Content, stopped.Choices[0].Message.Content) {
			t.Errorf("%s stop: %d %q", model, r.status, stopped.Choices[0].Message.Content)
		}
		for _, bad := range []struct{ extra, param string }{
			{`"response_format":{"type":"json_object"}`, "response_format"},
			{`"tools":[{"type":"function","function":{"name":"f"}}]`, "tools"},
		} {
			_, r := ask(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"urban farming"}],%s}`, model, bad.extra))
			if r.status != 400 || !strings.Contains(string(r.body), `"param":"`+bad.param+`"`) {
				t.Errorf("%s %s: %d %s", model, bad.param, r.status, clip(r.body))
			}
		}
	}
}

// TestPipelineModelShowsItsWork: a streamed pipeline model sends each
// stage as reasoning when it starts, before any call of it has answered,
// and its answer after; a client that reads only the content gets only
// the answer, and a plain answer carries the same stages in
// reasoning_content.
func TestPipelineModelShowsItsWork(t *testing.T) {
	gate := make(chan struct{})
	var once sync.Once
	hs := newHarness(t, options{client: func(c llm.Client) llm.Client {
		return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			select { // no call answers before the test saw the first stage
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return c.Generate(ctx, req)
		})
	}})
	req, _ := http.NewRequest("POST", hs.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"madspark-spark","stream":true,"messages":[{"role":"user","content":"urban farming"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	defer once.Do(func() { close(gate) })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var reasoning, content strings.Builder
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &ch) != nil || len(ch.Choices) == 0 {
			continue
		}
		d := ch.Choices[0].Delta
		if d.ReasoningContent != "" {
			if content.Len() > 0 {
				t.Errorf("reasoning after the answer began: %q", d.ReasoningContent)
			}
			reasoning.WriteString(d.ReasoningContent)
			once.Do(func() { close(gate) }) // the first stage came before any call answered
		}
		content.WriteString(d.Content)
	}
	if !strings.HasPrefix(reasoning.String(), "generate: ") || !strings.Contains(reasoning.String(), "\nevaluate: ") ||
		!strings.Contains(content.String(), "Ideas: urban farming") || strings.Contains(content.String(), "generate: ") {
		t.Fatalf("reasoning %q, content %.80q", reasoning.String(), content.String())
	}

	r := hs.do("POST", "/v1/chat/completions", `{"model":"madspark-spark","messages":[{"role":"user","content":"urban farming"}]}`)
	var c struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
	}
	r.json(t, &c)
	if c.Choices[0].Message.ReasoningContent != reasoning.String() || !strings.Contains(c.Choices[0].Message.Content, "Ideas: urban farming") {
		t.Errorf("plain: reasoning %q, want %q", c.Choices[0].Message.ReasoningContent, reasoning.String())
	}
}
