package api_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// runsOf lists the runs of a pipeline, newest first.
func (hs *harness) runsOf(pipeline string) []api.RunSummary {
	hs.t.Helper()
	var page api.RunList
	r := hs.do("GET", "/api/runs?limit=100&pipeline="+pipeline, nil)
	if r.status != 200 {
		hs.t.Fatalf("GET /api/runs: %d %s", r.status, r.body)
	}
	r.json(hs.t, &page)
	return page.Runs
}

// TestRunOutcome: a run's record and its row in the list say how it came
// out beyond its status: a proposal that did not pass its quality control
// says so (and one that passed, too), with how long it took; a run with
// no verdict has none.
func TestRunOutcome(t *testing.T) {
	hs := newHarness(t, options{workers: 2})
	tight := map[string]any{}
	for k, v := range profile {
		tight[k] = v
	}
	// Fewer hours than the smallest study needs: quality control never passes.
	tight["weekly_hours"], tight["total_timeline"] = 1, map[string]any{"value": 1, "unit": "months"}
	failed := hs.succeeded("proposal", map[string]any{"profile": tight, "max_refinements": 1})
	passed := hs.succeeded("proposal", map[string]any{"profile": profile})
	spark := hs.succeeded("spark", map[string]any{"topic": "urban farming", "num_candidates": 3})

	if v := failed.Outcome.Verdict; v == nil || v.Passed || v.Check != "quality control" || !strings.HasPrefix(v.Note, "not passed after 1 refinement: ") {
		t.Errorf("the proposal that failed quality control: verdict %+v", v)
	}
	if v := passed.Outcome.Verdict; v == nil || !v.Passed || !strings.HasPrefix(v.Note, "coherence ") {
		t.Errorf("the proposal that passed: verdict %+v", v)
	}
	if o := spark.Outcome; o.Verdict != nil || o.Partial || o.Repairs != 0 {
		t.Errorf("a mock spark run's outcome: %+v", o)
	}
	for _, run := range []api.Run{failed, passed, spark} {
		if run.DurationMS == nil || *run.DurationMS < 0 || *run.DurationMS > 60_000 || run.Parent != nil {
			t.Errorf("run %s: duration %v, parent %+v", run.Pipeline, run.DurationMS, run.Parent)
		}
	}
	listed := hs.runsOf("proposal")
	i := slices.IndexFunc(listed, func(r api.RunSummary) bool { return r.RunID == failed.RunID })
	if i < 0 || listed[i].Outcome.Verdict == nil || listed[i].Outcome.Verdict.Passed || listed[i].DurationMS == nil {
		t.Errorf("the list does not say the proposal failed quality control: %+v", listed)
	}
}

// TestRunParents: the runs an eval, a batch and a conversation make name
// them as their parent, with its title, in the list and in their record;
// the parent's tag is not among the run's tags.
func TestRunParents(t *testing.T) {
	hs := newHarness(t, options{workers: 2})
	// An eval of spark on one built-in topic.
	var ev api.StartRunResponse
	hs.do("POST", "/api/evals", map[string]any{"pipeline": "spark", "topics": "builtin", "limit": 1}).json(t, &ev)
	evalRun := hs.wait(ev.RunID)
	// A batch of two rows, with tags.
	b := hs.batch("spark", "text/csv", "topic,num_candidates,tags\nrooftop beehives,2,food\nshared tool libraries,2,\n")
	hs.waitBatch(b.BatchID)
	// A conversation's answer.
	var c madspark.Conversation
	hs.do("POST", "/api/conversations", map[string]any{"model": "madspark-direct"}).json(t, &c)
	hs.do("PATCH", "/api/conversations/"+c.ID, map[string]any{"title": "Goroutines"})
	_, answer := hs.ask(t, "/api/conversations/"+c.ID+"/messages", map[string]any{"content": "What is a goroutine?"})

	byID := map[string]api.RunSummary{}
	for _, p := range []string{"spark", "debate"} {
		for _, r := range hs.runsOf(p) {
			byID[r.RunID] = r
		}
	}
	var evalKids, batchKids int
	for _, r := range byID {
		switch {
		case r.Parent == nil:
			t.Errorf("run %s (%s) has no parent", r.RunID, r.Title)
		case r.Parent.Kind == "eval":
			evalKids++
			if r.Parent.ID != ev.RunID || r.Parent.Title != evalRun.Title || r.Parent.Title == "" {
				t.Errorf("an eval's run: parent %+v, want %s (%q)", r.Parent, ev.RunID, evalRun.Title)
			}
		case r.Parent.Kind == "batch":
			batchKids++
			if r.Parent.ID != b.BatchID || r.Parent.Title != b.Source {
				t.Errorf("a batch's run: parent %+v, want %s (%q)", r.Parent, b.BatchID, b.Source)
			}
			if want := map[string][]string{"rooftop beehives": {"food"}, "shared tool libraries": {}}[r.Title]; !slices.Equal(r.Tags, want) {
				t.Errorf("the batch row %q has tags %q, want %q", r.Title, r.Tags, want)
			}
		case r.Parent.Kind == "chat":
			if r.RunID != answer.RunID || r.Parent.ID != c.ID || r.Parent.Title != "Goroutines" || len(r.Tags) != 0 {
				t.Errorf("the answer's run %s: parent %+v, tags %q", r.RunID, r.Parent, r.Tags)
			}
		}
	}
	if evalKids != 1 || batchKids != 2 || len(byID) != 4 {
		t.Errorf("%d runs: %d of the eval, %d of the batch", len(byID), evalKids, batchKids)
	}
	if run := hs.run(answer.RunID); run.Parent == nil || run.Parent.Title != "Goroutines" {
		t.Errorf("the answer's run record: parent %+v", run.Parent)
	}
	// A parent gone leaves its runs grouped, untitled.
	if err := hs.db.DeleteConversation(t.Context(), c.ID); err != nil {
		t.Fatal(err)
	}
	if run := hs.run(answer.RunID); run.Parent == nil || run.Parent.ID != c.ID || run.Parent.Title != "" {
		t.Errorf("the answer's run after its conversation was deleted: parent %+v", run.Parent)
	}
}

// TestBatchBestAndCSV: a batch's rows carry their run's best-scored idea
// (the improved one) and outcome; its results download as CSV, a row per
// line of the file, rejected ones with their reason.
func TestBatchBestAndCSV(t *testing.T) {
	hs := newHarness(t, options{workers: 2})
	b := hs.batch("spark", "text/csv", "topic,num_candidates,tags\nrooftop beehives,3,\"food, =cities\"\nquiet streets,many,\n")
	done := hs.waitBatch(b.BatchID)
	if len(done.Items) != 2 {
		t.Fatalf("rows: %+v", done.Items)
	}
	row, bad := done.Items[0], done.Items[1]
	var res struct {
		Candidates []struct {
			ImprovedIdea  string  `json:"improved_idea"`
			ImprovedScore float64 `json:"improved_score"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(hs.run(row.RunID).Result, &res); err != nil || len(res.Candidates) == 0 {
		t.Fatalf("the row's result: %v", err)
	}
	best := res.Candidates[0]
	for _, c := range res.Candidates[1:] {
		if c.ImprovedScore > best.ImprovedScore {
			best = c
		}
	}
	if row.Best == nil || row.Best.Text != best.ImprovedIdea || row.Best.Score != best.ImprovedScore || row.Outcome == nil || row.Outcome.Repairs != 0 {
		t.Errorf("the succeeded row: best %+v, outcome %+v; want %q (%v)", row.Best, row.Outcome, best.ImprovedIdea, best.ImprovedScore)
	}
	if bad.Status != "rejected" || bad.Best != nil || bad.Outcome != nil {
		t.Errorf("the rejected row: %+v", bad)
	}

	r := hs.do("GET", "/api/batches/"+b.BatchID+"/results?format=csv", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		r.header.Get("Content-Disposition") != fmt.Sprintf(`attachment; filename="madspark-batch-%s-results.csv"`, b.BatchID[len(b.BatchID)-8:]) {
		t.Fatalf("the CSV: %d %v", r.status, r.header)
	}
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("the CSV has %d rows: %v\n%s", len(rows), err, r.body)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, want := range []string{"line", "topic", "tags", "status", "best_idea", "best_score", "verdict", "repairs", "llm_calls", "cost_usd", "duration_s", "run_id", "error"} {
		if _, ok := col[want]; !ok {
			t.Errorf("the CSV has no column %s: %q", want, rows[0])
		}
	}
	first, second := rows[1], rows[2]
	if first[col["line"]] != "2" || first[col["topic"]] != "rooftop beehives" || first[col["status"]] != "succeeded" ||
		first[col["best_idea"]] != best.ImprovedIdea || first[col["best_score"]] != fmt.Sprint(best.ImprovedScore) ||
		first[col["run_id"]] != row.RunID || first[col["llm_calls"]] == "0" || first[col["cost_usd"]] != "0.000000" || first[col["error"]] != "" {
		t.Errorf("the succeeded row: %q", first)
	}
	if first[col["tags"]] != "food, =cities" {
		t.Errorf("tags %q", first[col["tags"]])
	}
	if second[col["line"]] != "3" || second[col["status"]] != "rejected" || !strings.Contains(second[col["error"]], "many") || second[col["run_id"]] != "" {
		t.Errorf("the rejected row: %q", second)
	}
	// A cell that starts like a formula is kept from being one.
	b2 := hs.batch("spark", "text/csv", "topic,num_candidates\n\"=HYPERLINK(\"\"x\"\")\",2\n")
	hs.waitBatch(b2.BatchID)
	r = hs.do("GET", "/api/batches/"+b2.BatchID+"/results?format=csv", nil)
	if rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll(); err != nil || len(rows) != 2 || rows[1][col["topic"]] != `'=HYPERLINK("x")` {
		t.Errorf("a formula topic: %q, %v", rows, err)
	}
	if r := hs.do("GET", "/api/batches/"+b.BatchID+"/results?format=xml", nil); r.status != 422 || r.err(t).Error.Field != "format" {
		t.Errorf("format xml: %d %s", r.status, r.body)
	}
}

// TestUpdateBookmark: PATCH sets the tags and notes given and keeps the
// rest; the tag filter follows; what it cannot take exactly is refused,
// naming the field, and changes nothing.
func TestUpdateBookmark(t *testing.T) {
	hs := newHarness(t, options{})
	runID := hs.sparkRun("urban farming")
	_, created := hs.bookmark(runID, 0, map[string]any{"tags": []string{"food"}, "notes": "first"})
	id := created.Bookmark.ID
	path := "/api/bookmarks/" + id
	var b madspark.Bookmark
	r := hs.do("PATCH", path, map[string]any{"tags": []string{"rooftops", "pilot", "rooftops"}, "notes": "  ask the council first\nthen the tenants  "})
	r.json(t, &b)
	if r.status != 200 || !slices.Equal(b.Tags, []string{"rooftops", "pilot"}) || b.Notes != "ask the council first\nthen the tenants" ||
		b.IdeaText != created.Bookmark.IdeaText || b.RunID != runID {
		t.Fatalf("PATCH tags and notes: %d %+v", r.status, b)
	}
	if p := hs.bookmarks("/api/bookmarks?tag=pilot"); !slices.Equal(ids(p), []string{id}) {
		t.Errorf("the new tag finds %v", ids(p))
	}
	if p := hs.bookmarks("/api/bookmarks?tag=food"); len(p.Bookmarks) != 0 {
		t.Errorf("the removed tag still finds %v", ids(p))
	}
	r = hs.do("PATCH", path, map[string]any{"notes": ""})
	r.json(t, &b)
	if r.status != 200 || b.Notes != "" || !slices.Equal(b.Tags, []string{"rooftops", "pilot"}) {
		t.Errorf("PATCH notes only: %d %+v", r.status, b)
	}
	r = hs.do("PATCH", path, map[string]any{"tags": []string{}})
	r.json(t, &b)
	if r.status != 200 || len(b.Tags) != 0 {
		t.Errorf("PATCH no tags: %d %+v", r.status, b)
	}
	for _, tc := range []struct {
		name, body string
		status     int
		field      string
	}{
		{"nothing", `{}`, 422, ""},
		{"unknown field", `{"title":"x"}`, 400, "title"},
		{"tags not a list", `{"tags":"a"}`, 400, "tags"},
		{"bad tag", `{"tags":["ok","` + strings.Repeat("t", 51) + `"]}`, 422, "tags[1]"},
		{"tag over two lines", `{"tags":["a\nb"]}`, 400, "tags[0]"},
		{"notes too long", `{"notes":"` + strings.Repeat("n", 5001) + `"}`, 422, "notes"},
	} {
		r := hs.do("PATCH", path, json.RawMessage(tc.body))
		if e := r.err(t); r.status != tc.status || e.Error.Field != tc.field {
			t.Errorf("%s: %d %s, want %d naming %q", tc.name, r.status, r.body, tc.status, tc.field)
		}
	}
	if got := hs.do("GET", path, nil); !strings.Contains(string(got.body), `"tags":[]`) {
		t.Errorf("a refused PATCH changed the bookmark: %s", got.body)
	}
	if r := hs.do("PATCH", "/api/bookmarks/nope", map[string]any{"notes": "x"}); r.status != 404 {
		t.Errorf("PATCH a missing bookmark: %d %s", r.status, r.body)
	}
}

// TestProviderStatus: GET /api/provider says whether the provider's calls
// go through: ok, then paused after failures in a row, until when and why,
// then on trial once that time has passed, and ok after a trial that
// succeeded.
func TestProviderStatus(t *testing.T) {
	watch := &middleware.BreakerWatch{}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var down atomic.Bool
	failing := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if down.Load() {
			return nil, &llm.Error{Provider: "openai", Status: 503, Message: "overloaded", Retryable: true}
		}
		return &llm.Response{Text: "ok"}, nil
	})
	breaker := middleware.Breaker(middleware.BreakerConfig{Threshold: 2, Cooldown: 30 * time.Second, Watch: watch, Now: func() time.Time { return now }})(failing)
	hs := newHarness(t, options{config: func(c *api.Config) {
		c.Info.Breaker, c.Info.ProviderLocal, c.Info.ProviderAddress = watch, true, "127.0.0.1:11434"
	}})
	status := func() api.ProviderStatus {
		t.Helper()
		var st api.ProviderStatus
		r := hs.do("GET", "/api/provider", nil)
		if r.status != 200 || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("GET /api/provider: %d %s", r.status, r.body)
		}
		r.json(t, &st)
		return st
	}
	if st := status(); st.State != "ok" || st.Provider != "mock" || !st.Local || st.Address != "127.0.0.1:11434" || st.RetryAt != nil || st.Failure != nil {
		t.Errorf("at first: %+v", st)
	}
	down.Store(true)
	for range 2 {
		_, _ = breaker.Generate(t.Context(), &llm.Request{})
	}
	st := status()
	if st.State != "paused" || st.Failures != 2 || st.RetryAt == nil || !st.RetryAt.Equal(now.Add(30*time.Second)) ||
		st.Failure == nil || st.Failure.Kind != "provider_error" || st.Failure.Provider != "openai" {
		t.Errorf("after two failures: %+v (failure %+v)", st, st.Failure)
	}
	now = now.Add(30 * time.Second)
	if st := status(); st.State != "trial" || st.RetryAt != nil || st.Failure == nil {
		t.Errorf("after the pause: %+v", st)
	}
	down.Store(false)
	if _, err := breaker.Generate(t.Context(), &llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if st := status(); st.State != "ok" || st.Failures != 0 || st.Failure != nil {
		t.Errorf("after a good trial: %+v", st)
	}
}

// TestConversationRetries: while a call of an answer is retried, the
// stream says so as it happens (which attempt, after what pause, why),
// before the answer.
func TestConversationRetries(t *testing.T) {
	var calls atomic.Int32
	hs := newHarness(t, options{client: func(next llm.Client) llm.Client {
		flaky := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			if calls.Add(1) <= 2 {
				return nil, &llm.Error{Provider: "openai", Status: 500, Message: "The server had an error.", Retryable: true}
			}
			return next.Generate(ctx, req)
		})
		return middleware.Retry(middleware.RetryConfig{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})(flaky)
	}})
	var c madspark.Conversation
	hs.do("POST", "/api/conversations", map[string]any{"model": "madspark-direct"}).json(t, &c)
	r := hs.do("POST", "/api/conversations/"+c.ID+"/messages", map[string]any{"content": "What is a goroutine?"})
	evs := parseChat(t, r.body)
	var kinds []string
	var retries []api.ChatRetry
	for _, e := range evs {
		kinds = append(kinds, e.event)
		if e.event == "retry" {
			var rt api.ChatRetry
			if err := json.Unmarshal(e.data, &rt); err != nil {
				t.Fatal(err)
			}
			retries = append(retries, rt)
		}
	}
	if len(kinds) < 4 || kinds[0] != "question" || kinds[1] != "retry" || kinds[2] != "retry" || kinds[len(kinds)-1] != "answer" {
		t.Fatalf("events %q", kinds)
	}
	for i, rt := range retries {
		if rt.Attempt != i+2 || rt.DelayMS != int64(1000<<i) || rt.Failure == nil || rt.Failure.Kind != "provider_error" || rt.Failure.Status != 500 {
			t.Errorf("retry %d: %+v (failure %+v)", i, rt, rt.Failure)
		}
	}
}

// TestConversationStopKeepsPartial: an answer stopped while it was being
// written is kept as what had been written, marked stopped; it answers
// nothing, so the next question carries no history from it.
func TestConversationStopKeepsPartial(t *testing.T) {
	var stall atomic.Bool
	stall.Store(true)
	hs := newHarness(t, options{client: func(next llm.Client) llm.Client {
		return llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			if !stall.Load() || req.OnDelta == nil {
				return next.Generate(ctx, req)
			}
			req.OnDelta("A goroutine is a function ")
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}})
	var c madspark.Conversation
	hs.do("POST", "/api/conversations", map[string]any{"model": "madspark-direct"}).json(t, &c)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", hs.url+"/api/conversations/"+c.ID+"/messages", strings.NewReader(`{"content":"What is a goroutine?"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && sc.Text() != "event: delta" {
	}
	cancel() // Stop, once the answer is being written
	res.Body.Close()
	var got api.Conversation
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		hs.do("GET", "/api/conversations/"+c.ID, nil).json(t, &got)
		if len(got.Messages) == 2 {
			break
		}
	}
	if len(got.Messages) != 2 || got.Messages[1].Role != madspark.ChatStopped || got.Messages[1].Content != "A goroutine is a function " || got.Messages[1].Model != "madspark-direct" {
		t.Fatalf("after Stop: %+v", got.Messages)
	}
	stall.Store(false)
	_, a := hs.ask(t, "/api/conversations/"+c.ID+"/messages", map[string]any{"content": "And a channel?"})
	var p struct {
		History []llm.Message `json:"history"`
	}
	if err := json.Unmarshal(hs.run(a.RunID).Params, &p); err != nil || len(p.History) != 0 {
		t.Errorf("the next question carries history %+v, %v; want none from a stopped answer", p.History, err)
	}
}
