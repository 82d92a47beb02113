package assess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/search"
)

const tavilyKey = "tvly-test-SECRET0123456789"

// tavily is an in-process stand-in for the Tavily Search API (POST
// /search, bearer key, {"results": [...]}) that answers each query with
// pages named after it. Queries containing fail get a 500. It records the
// most requests it had in flight at once; the first two requests wait for
// each other, so concurrency is seen whenever there is any.
type tavily struct {
	fail     string
	inFlight atomic.Int32
	peak     atomic.Int32
	second   chan struct{}
	mu       sync.Mutex
	queries  []string
	srv      *httptest.Server
}

func newTavily(t *testing.T, fail string) *tavily {
	tv := &tavily{fail: fail, second: make(chan struct{})}
	tv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/search" || r.Header.Get("Authorization") != "Bearer "+tavilyKey {
			http.Error(w, `{"detail":{"error":"bad request"}}`, http.StatusBadRequest)
			return
		}
		var body struct {
			Query      string `json:"query"`
			MaxResults int    `json:"max_results"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"detail":{"error":"bad json"}}`, http.StatusBadRequest)
			return
		}
		n := tv.inFlight.Add(1)
		defer tv.inFlight.Add(-1)
		for p := tv.peak.Load(); n > p && !tv.peak.CompareAndSwap(p, n); p = tv.peak.Load() {
		}
		tv.mu.Lock()
		tv.queries = append(tv.queries, body.Query)
		nth := len(tv.queries)
		tv.mu.Unlock()
		switch nth {
		case 1:
			// Hold the first request until a second one arrives.
			select {
			case <-tv.second:
			case <-time.After(3 * time.Second):
			}
		case 2:
			close(tv.second)
		}
		if tv.fail != "" && strings.Contains(body.Query, tv.fail) {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"detail":{"error":"upstream exploded (key ` + tavilyKey + `)"}}`))
			return
		}
		page := fmt.Sprintf("%08x", mock.Hash(body.Query))
		var results []map[string]any
		for i := 1; i <= min(body.MaxResults, 2); i++ {
			results = append(results, map[string]any{
				"title": fmt.Sprintf("%s, part %d", body.Query, i), "url": fmt.Sprintf("https://research.example/%s/%d", page, i),
				"content": "Figures and facts about " + body.Query, "score": 0.9 / float64(i),
			})
		}
		json.NewEncoder(w).Encode(map[string]any{"results": results})
	}))
	t.Cleanup(tv.srv.Close)
	return tv
}

func (tv *tavily) provider() search.Provider {
	return search.NewTavily(tavilyKey, search.WithBaseURL(tv.srv.URL))
}

func TestWebResearch(t *testing.T) {
	dir := t.TempDir()
	tv := newTavily(t, "")
	h := newHarness(t, Config{Mock: true, Searcher: tv.provider()}, nil)
	res, _, err := h.run(context.Background(), params(dir, func(p *Params) { p.Mode, p.FactCheck, p.MaxWebsearches = AnalyzeReviewAndJudge, true, 3 }))
	if err != nil {
		t.Fatal(err)
	}
	// The analyst planned at most --max-websearches queries; all ran, side
	// by side.
	if len(res.Queries) != 3 || len(tv.queries) != 3 || tv.peak.Load() < 2 {
		t.Fatalf("queries %v, searched %v, peak concurrency %d", res.Queries, tv.queries, tv.peak.Load())
	}
	if !res.WebTools || res.WebNote != "" || len(res.Sources) != 6 {
		t.Fatalf("web tools %v, note %q, %d sources", res.WebTools, res.WebNote, len(res.Sources))
	}
	returned := map[string]bool{}
	for _, s := range res.Sources {
		returned[s.URL] = true
	}
	first := h.cnt.Of(agentAnalyst)[1].Prompt()
	for u := range returned {
		if !strings.Contains(first, u) {
			t.Errorf("the analyst was not given %s", u)
		}
	}
	cited := CitedURLs(res.Final().Analysis)
	if len(cited) == 0 {
		t.Fatal("the analysis cites nothing")
	}
	for _, u := range cited {
		if !returned[u] {
			t.Errorf("cited %s, which no search returned", u)
		}
	}
	// With its sources cited, the fact checker approves the first draft.
	if res.Iterations[0].FactCheck.Verdict != Approve {
		t.Errorf("fact check: %+v", res.Iterations[0].FactCheck)
	}
	sum := readJSON[RunSummary](t, filepath.Join(dir, filepath.FromSlash(res.Files.Summary)))
	if sum.Agents["analyst"].Searches != 3 || sum.Agents["analyst"].Calls != 3 {
		t.Errorf("analyst summary %+v", sum.Agents["analyst"])
	}
	meta := readJSON[Metadata](t, filepath.Join(dir, filepath.FromSlash(res.Files.Metadata)))
	if !meta.WebTools || meta.Searches != 3 {
		t.Errorf("metadata web tools %v, searches %d", meta.WebTools, meta.Searches)
	}
	noSecret(t, dir)
}

// noSecret fails when the search key appears in any file under dir.
func noSecret(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), tavilyKey) {
				t.Errorf("%s contains the API key", p)
			}
		}
		return nil
	})
}

func TestWebResearchFailures(t *testing.T) {
	t.Run("one search fails, the others are used", func(t *testing.T) {
		dir := t.TempDir()
		tv := newTavily(t, "regulation")
		h := newHarness(t, Config{Mock: true, Searcher: tv.provider()}, nil)
		res, _, err := h.run(context.Background(), params(dir, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !res.WebTools || len(res.Sources) != 6 || !strings.HasPrefix(res.WebNote, "1 of 4 web searches failed") {
			t.Fatalf("web tools %v, %d sources, note %q", res.WebTools, len(res.Sources), res.WebNote)
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "logs", "runs", "*", "messages.jsonl"))
		b, _ := os.ReadFile(logs[0])
		if strings.Count(string(b), `"kind":"search"`) != 4 || !strings.Contains(string(b), "upstream exploded") {
			t.Fatalf("messages.jsonl does not record the searches:\n%s", b)
		}
		noSecret(t, dir)
	})
	t.Run("too many queries are cut to the budget", func(t *testing.T) {
		tv := newTavily(t, "")
		calls := 0
		h := newHarness(t, Config{Mock: true, Searcher: tv.provider()}, map[string]mock.Responder{agentAnalyst: func(req *llm.Request) (any, error) {
			if in, ok := req.Input.(researchInput); ok && calls == 0 {
				calls++
				plan := mockPlan(researchInput{Idea: in.Idea, Max: 4})
				return plan, nil
			}
			return mockAnalyst(req)
		}})
		res, _, err := h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.MaxWebsearches = 2 }))
		if err != nil {
			t.Fatal(err)
		}
		plans := h.cnt.Of(agentAnalyst)
		if len(res.Queries) != 2 || len(plans) != 2 || len(tv.queries) != 2 { // the plan, then the analysis: no re-ask
			t.Fatalf("queries %v, %d analyst calls, %d searches", res.Queries, len(plans), len(tv.queries))
		}
		if !hasRepair(res.Repairs, agentAnalyst, "budget", "4 queries → the first 2") {
			t.Fatalf("repairs %+v", res.Repairs)
		}
	})
	t.Run("no search provider, or web tools off", func(t *testing.T) {
		h := newHarness(t, Config{Mock: true}, nil)
		res, _, err := h.run(context.Background(), params(t.TempDir(), nil))
		if err != nil || res.WebTools || res.WebNote != NoSearchNote {
			t.Fatalf("%v, web tools %v, note %q", err, res.WebTools, res.WebNote)
		}
		if !strings.Contains(h.cnt.Of(agentAnalyst)[0].Prompt(), "Do not write any URL") {
			t.Fatal("the analyst was not told to cite no URL")
		}
		tv := newTavily(t, "")
		h = newHarness(t, Config{Mock: true, Searcher: tv.provider()}, nil)
		res, _, err = h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.NoWebTools = true }))
		if err != nil || res.WebTools || res.WebNote != "web tools turned off for this run" || len(tv.queries) != 0 {
			t.Fatalf("%v, web tools %v, note %q, %d searches", err, res.WebTools, res.WebNote, len(tv.queries))
		}
	})
}

// inventing answers like the mock analyst with a made-up reference added,
// the first times times.
func inventing(times int) mock.Responder {
	var mu sync.Mutex
	n := 0
	return func(req *llm.Request) (any, error) {
		v, err := mockAnalyst(req)
		text, ok := v.(string)
		if err != nil || !ok {
			return v, err
		}
		mu.Lock()
		defer mu.Unlock()
		if n < times {
			n++
			text += "\n- [9] Market report — https://invented.example/report-2025\n"
		}
		return text, nil
	}
}

func sourceURLs(res *Result) []string {
	var out []string
	for _, s := range res.Sources {
		out = append(out, s.URL)
	}
	return out
}

func TestCitedURLsMustBeReturned(t *testing.T) {
	t.Run("a made-up URL is removed, without a re-ask", func(t *testing.T) {
		tv := newTavily(t, "")
		h := newHarness(t, Config{Mock: true, Searcher: tv.provider()}, map[string]mock.Responder{agentAnalyst: inventing(1)})
		res, _, err := h.run(context.Background(), params(t.TempDir(), nil))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(h.cnt.Of(agentAnalyst)); n != 2 { // plan, draft
			t.Fatalf("%d analyst calls", n)
		}
		if a := res.Final().Analysis; strings.Contains(a, "invented.example") || !strings.Contains(a, "Market report") || len(uncited(a, sourceURLs(res))) != 0 {
			t.Fatalf("the made-up URL survived, or the line went:\n%s", a)
		}
		if !hasRepair(res.Repairs, agentAnalyst, "reference", "https://invented.example/report-2025") {
			t.Fatalf("repairs %+v", res.Repairs)
		}
	})
	t.Run("without web research no URL at all", func(t *testing.T) {
		h := newHarness(t, Config{Mock: true}, map[string]mock.Responder{agentAnalyst: inventing(2)})
		res, _, err := h.run(context.Background(), params(t.TempDir(), nil))
		if err != nil {
			t.Fatal(err)
		}
		if len(CitedURLs(res.Final().Analysis)) != 0 || !hasRepair(res.Repairs, agentAnalyst, "reference", "1 URL(s) no search returned removed") {
			t.Fatalf("URLs %v, repairs %+v", CitedURLs(res.Final().Analysis), res.Repairs)
		}
	})
}

func TestSynthesize(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := newHarness(t, Config{Mock: true}, nil)
	ideas := []string{idea, "Drone delivery of blood samples between rural clinics", "A marketplace for unused commercial kitchen hours",
		"Insurance for freelance software developers", "Solar-powered cold storage for smallholder farmers"}
	for _, in := range ideas {
		if _, _, err := h.run(ctx, params(dir, func(p *Params) { p.Idea, p.Mode = in, AnalyzeReviewAndJudge })); err != nil {
			t.Fatal(err)
		}
	}
	// One analysis without the judge, one broken evaluation.
	if _, _, err := h.run(ctx, params(dir, func(p *Params) { p.Idea = "Not judged at all" })); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "analyses", "broken", "evaluation.json")
	os.MkdirAll(filepath.Dir(broken), 0o755)
	os.WriteFile(broken, []byte(`{"grades": {"market_potential": {"grade": "Z"}}}`), 0o644)

	// The synthesizer first tries to reorder the ranking; it is sent back.
	var mu sync.Mutex
	tries := 0
	h2 := newHarness(t, Config{Mock: true}, map[string]mock.Responder{agentSynthesizer: func(req *llm.Request) (any, error) {
		v, err := mockSynthesizer(req)
		n := v.(Narrative)
		mu.Lock()
		defer mu.Unlock()
		if tries++; tries == 1 {
			n.Top[0], n.Top[1] = n.Top[1], n.Top[0]
		}
		return n, err
	}})
	r, err := h2.eng.Start(ctx, runInfo(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := h2.pipe.Synthesize(ctx, r, SynthesisParams{OutputDir: dir, Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Ranking) != 5 || s.Top != 3 || len(s.Skipped) != 1 || s.Skipped[0].File != "analyses/broken/evaluation.json" {
		t.Fatalf("ranking %d, top %d, skipped %+v", len(s.Ranking), s.Top, s.Skipped)
	}
	for i := 1; i < len(s.Ranking); i++ {
		if s.Ranking[i].WeightedScore > s.Ranking[i-1].WeightedScore || s.Ranking[i].Rank != i+1 {
			t.Fatalf("ranking out of order: %+v", s.Ranking)
		}
	}
	// The order is repaired, without a second call.
	if n := len(h2.cnt.Of(agentSynthesizer)); n != 1 || !hasRepair(s.Repairs, agentSynthesizer, "reference", "top "+s.Ranking[1].Slug+", "+s.Ranking[0].Slug) {
		t.Fatalf("%d synthesizer calls, repairs %+v", n, s.Repairs)
	}
	for i, pick := range s.Narrative.Top {
		if pick.Slug != s.Ranking[i].Slug {
			t.Fatalf("top %d is %s, ranked %s", i, pick.Slug, s.Ranking[i].Slug)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "reports", "synthesis.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(md)
	for i, r := range s.Ranking {
		pos := strings.Index(report, fmt.Sprintf("### %d. %s", r.Rank, r.Idea))
		if (i < 3) != (pos >= 0) {
			t.Errorf("rank %d (%s) in the top section: %v", r.Rank, r.Slug, pos >= 0)
		}
		if i < 3 && !strings.Contains(report, s.Narrative.Top[i].Why) {
			t.Errorf("the reason for %s is missing", r.Slug)
		}
	}
	for _, want := range []string{MockNote, "## Ranking", "Market potential: 0.20", "analyses/broken/evaluation.json", "../analyses/" + s.Ranking[0].Slug + "/analysis.md"} {
		if !strings.Contains(report, want) {
			t.Errorf("synthesis.md lacks %q", want)
		}
	}
	if got := readJSON[Synthesis](t, filepath.Join(dir, "reports", "synthesis.json")); len(got.Ranking) != 5 {
		t.Errorf("synthesis.json ranking %d", len(got.Ranking))
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "runs", "*_synthesis", "run_summary.json"))
	if len(logs) != 1 || readJSON[RunSummary](t, logs[0]).Agents["synthesizer"].Calls != 1 {
		t.Fatalf("synthesis logs %v", logs)
	}
	noTempFiles(t, dir)

	r, _ = h2.eng.Start(ctx, runInfo(), nil)
	if _, err := h2.pipe.Synthesize(ctx, r, SynthesisParams{OutputDir: t.TempDir(), Top: 3}); !errors.Is(err, ErrNoEvaluations) {
		t.Fatalf("empty directory: %v", err)
	}
}
