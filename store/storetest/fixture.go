package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// A fixture is one of everything a store keeps, written by one version of
// a store (WriteFixture) into a database that later versions must open,
// upgrade and read as it was written (CheckFixture). The databases written
// by earlier versions are kept with the stores' tests.

// fixtureData is what WriteFixture writes, made anew for each use.
type fixtureData struct {
	runs     []*madspark.Run
	steps    []*madspark.Step
	events   []*madspark.Event
	ideas    []madspark.RememberedIdea
	batch    *madspark.Batch
	bookmark *madspark.Bookmark
	conv     *madspark.Conversation
	messages []*madspark.ChatMessage
	lease    *madspark.RunLease
	worker   *madspark.WorkerLease
}

// fixtureLife is how long the fixture's leases last: beyond any test.
const fixtureLife = 50 * 365 * 24 * time.Hour

func fixture() *fixtureData {
	at := time.Date(2025, 6, 7, 8, 9, 10, 123456000, time.UTC)
	usage := llm.Usage{LLMCalls: 2, InputTokens: 120, OutputTokens: 80, CostUSD: 0.0125}
	done := &madspark.Run{ID: "fx-done", Pipeline: "spark", Status: madspark.RunSucceeded, Mode: "live", Provider: "openai",
		Model: "gpt-4o-mini", Params: json.RawMessage(`{"topic":"Urban bees","context":"roofs"}`),
		Result: json.RawMessage(`{"ideas":[{"title":"Rooftop hives","score":8.5}]}`), Usage: usage,
		Tags: []string{"bees", "city"}, Subject: "Urban bees", CreatedAt: at, FinishedAt: at.Add(90 * time.Second)}
	live := &madspark.Run{ID: "fx-live", Pipeline: "debate", Status: madspark.RunRunning, Mode: "mock", Provider: "mock",
		Model: "mock-1", Params: json.RawMessage(`{"query":"Rust or Go?"}`), CreatedAt: at.Add(time.Minute)}
	call := madspark.Call{Agent: "spark.generate", Provider: "openai", Model: "gpt-4o-mini", System: "You generate ideas.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Urban bees"}}, Temperature: 0.7, MaxTokens: 500,
		Response: `{"ideas":[]}`, FinishReason: "stop", Attempt: 1, Usage: usage, StartedAt: at.Add(time.Second),
		Latency: 1500 * time.Millisecond}
	return &fixtureData{
		runs: []*madspark.Run{done, live},
		steps: []*madspark.Step{
			{RunID: "fx-done", Key: "generate", InputHash: "h1", Status: madspark.StepDone, Output: json.RawMessage(`{"ideas":[]}`),
				Usage: usage, StartedAt: at.Add(time.Second), FinishedAt: at.Add(3 * time.Second), Calls: []madspark.Call{call},
				Repairs: []llm.Repair{{Agent: "spark.generate", Rule: "key", Action: "Title → title"}}},
			{RunID: "fx-done", Key: "evaluate", InputHash: "h2", Status: madspark.StepFailed, Error: "the model said no",
				StartedAt: at.Add(4 * time.Second), FinishedAt: at.Add(5 * time.Second)},
			{RunID: "fx-live", Key: "route", InputHash: "h3", Status: madspark.StepRunning, StartedAt: at.Add(61 * time.Second)},
		},
		events: []*madspark.Event{
			{RunID: "fx-done", Type: madspark.EventProgress, Stage: "generate", Progress: 20, Message: "generating", Time: at.Add(time.Second)},
			{RunID: "fx-done", Type: madspark.EventResult, Stage: "done", Progress: 100, Data: done.Result, Time: at.Add(90 * time.Second)},
			{RunID: "fx-live", Type: madspark.EventProgress, Stage: "route", Progress: 5, Time: at.Add(61 * time.Second)},
		},
		ideas: []madspark.RememberedIdea{
			{Memory: "urban bees", Name: "Rooftop hives", Data: json.RawMessage(`{"score":8.5}`), RunID: "fx-done", Iteration: 1, AcceptedAt: at},
			{Memory: "urban bees", Name: "Hive map", Data: json.RawMessage(`{"score":7}`), RunID: "fx-done", Iteration: 2, AcceptedAt: at.Add(time.Second)},
		},
		batch: &madspark.Batch{ID: "fx-batch", Pipeline: "spark", Source: "topics.csv", CreatedAt: at, Items: []madspark.BatchItem{
			{Line: 2, Topic: "Urban bees", Tags: []string{"bees"}, RunID: "fx-done"},
			{Line: 3, Topic: "", Error: "the topic is empty"},
		}},
		bookmark: &madspark.Bookmark{ID: "fx-mark", RunID: "fx-done", CandidateIndex: 1, IdeaText: "Rooftop hives", ImprovedIdea: "Rooftop hives, mapped",
			Topic: "Urban bees", Context: "roofs", Score: 8.5, ImprovedScore: 9, Tags: []string{"bees", "keep"}, Notes: "try it",
			CreatedAt: at, Metadata: madspark.BookmarkMetadata{ModelUsed: "gpt-4o-mini", Temperature: 0.7, TokenCount: 200}},
		conv: &madspark.Conversation{ID: "fx-chat", Title: "Rust or Go?", Model: "madspark-debate", CreatedAt: at},
		messages: []*madspark.ChatMessage{
			{Role: madspark.ChatUser, Content: "Rust or Go?", CreatedAt: at.Add(time.Second)},
			{Role: madspark.ChatAssistant, Content: "Go, for this.", RunID: "fx-live", Model: "madspark-debate", CreatedAt: at.Add(2 * time.Second)},
		},
		lease:  &madspark.RunLease{RunID: "fx-live", Token: "fx-token", Holder: "madspark serve (pid 7 on host fx)", Host: "fx", PID: 7},
		worker: &madspark.WorkerLease{ID: "fx-worker", Host: "fx", PID: 8},
	}
}

// WriteFixture writes the fixture into s, an empty store.
func WriteFixture(ctx context.Context, s Store) error {
	f := fixture()
	var errs []error
	for _, r := range f.runs {
		errs = append(errs, s.CreateRun(ctx, r))
	}
	for _, st := range f.steps {
		errs = append(errs, s.SaveStep(ctx, st))
	}
	for _, e := range f.events {
		errs = append(errs, s.AppendEvent(ctx, e))
	}
	errs = append(errs, s.FinishRun(ctx, f.runs[0]), s.RememberIdeas(ctx, f.ideas), s.CreateBatch(ctx, f.batch),
		s.CreateBookmark(ctx, f.bookmark), s.CreateConversation(ctx, f.conv))
	for _, m := range f.messages {
		errs = append(errs, s.AppendMessage(ctx, f.conv.ID, m))
	}
	errs = append(errs, s.TakeRunLease(ctx, f.lease, fixtureLife), s.RenewLease(ctx, f.worker, fixtureLife),
		s.PutCache(ctx, "fx-key", []byte("fx-value")))
	return errors.Join(errs...)
}

// CheckFixture checks that s holds what WriteFixture wrote, and that it
// goes on from there: sequence numbers continue, leases are still held.
func CheckFixture(t *testing.T, s Store) {
	t.Helper()
	f, c := fixture(), ctx(t)
	checkIDs(t, "Runs", mustRuns(t, s, madspark.RunFilter{Limit: 2}), "fx-live", "fx-done")
	for _, want := range f.runs {
		got := mustRun(t, s, want.ID)
		checkRun(t, got, want)
		if !reflect.DeepEqual(got.Tags, want.Tags) {
			t.Errorf("run %s tags = %q, want %q", want.ID, got.Tags, want.Tags)
		}
	}
	steps := append(mustSteps(t, s, "fx-done"), mustSteps(t, s, "fx-live")...)
	if len(steps) != len(f.steps) {
		t.Fatalf("steps = %v, want %d", stepKeys(steps), len(f.steps))
	}
	for i, want := range f.steps {
		checkStep(t, steps[i], want)
	}
	evs := append(mustEvents(t, s, "fx-done", 0, 0), mustEvents(t, s, "fx-live", 0, 0)...)
	if len(evs) != len(f.events) {
		t.Fatalf("events = %+v, want %d", evs, len(f.events))
	}
	for i, want := range f.events {
		got, seq := evs[i], []int64{1, 2, 1}[i]
		checkTime(t, fmt.Sprintf("event %d time", i), got.Time, want.Time)
		checkJSON(t, fmt.Sprintf("event %d data", i), got.Data, want.Data)
		if got.RunID != want.RunID || got.Seq != seq || got.Type != want.Type || got.Stage != want.Stage ||
			got.Progress != want.Progress || got.Message != want.Message {
			t.Errorf("event %d = %+v, want %+v", i, got, want)
		}
	}
	checkIdeas(t, "urban bees", mustIdeas(t, s, "urban bees"), f.ideas...)
	checkFixtureQueue(t, s, f)
	checkFixtureChat(t, s, f)
	if v, ok, err := s.GetCache(c, "fx-key"); err != nil || !ok || string(v) != "fx-value" {
		t.Errorf("GetCache = %q, %v, %v", v, ok, err)
	}

	// It goes on from there.
	e := &madspark.Event{RunID: "fx-live", Type: madspark.EventProgress, Stage: "answer", Progress: 50}
	mustAppend(t, s, e)
	if e.Seq != 2 {
		t.Errorf("next event's seq = %d, want 2", e.Seq)
	}
	mustSaveStep(t, s, &madspark.Step{RunID: "fx-done", Key: "improve", Status: madspark.StepDone})
	if keys := stepKeys(mustSteps(t, s, "fx-done")); !reflect.DeepEqual(keys, []string{"generate", "evaluate", "improve"}) {
		t.Errorf("steps after one more = %v", keys)
	}
	m := &madspark.ChatMessage{Role: madspark.ChatUser, Content: "Why?"}
	if err := s.AppendMessage(c, f.conv.ID, m); err != nil || m.Seq != 3 {
		t.Errorf("next message = %d, %v; want seq 3", m.Seq, err)
	}
	next := madspark.RememberedIdea{Memory: "urban bees", Name: "Bee hotel", Data: json.RawMessage(`{}`), AcceptedAt: time.Now()}
	mustRemember(t, s, next)
	checkIdeas(t, "urban bees", mustIdeas(t, s, "urban bees"), append(f.ideas, next)...)
	other := &madspark.RunLease{RunID: "fx-live", Token: "other", Holder: "other"}
	var held *madspark.RunHeldError
	if err := s.TakeRunLease(c, other, time.Minute); !errors.As(err, &held) || held.Lease.Holder != f.lease.Holder {
		t.Errorf("TakeRunLease of the fixture's held run = %v, want held by %q", err, f.lease.Holder)
	}
	if err := s.KeepRunLease(c, f.lease, time.Minute); err != nil {
		t.Errorf("KeepRunLease by the fixture's holder: %v", err)
	}
	if err := s.ExtendLease(c, f.worker, time.Minute); err != nil {
		t.Errorf("ExtendLease of the fixture's worker: %v", err)
	}
}

// checkFixtureQueue checks the fixture's batch and leases.
func checkFixtureQueue(t *testing.T, s Store, f *fixtureData) {
	t.Helper()
	c := ctx(t)
	b, err := s.Batch(c, f.batch.ID)
	if err != nil {
		t.Fatalf("Batch: %v", err)
	}
	checkTime(t, "batch created", b.CreatedAt, f.batch.CreatedAt)
	f.batch.Items[0].Status = madspark.RunSucceeded
	if b.Pipeline != f.batch.Pipeline || b.Source != f.batch.Source || !reflect.DeepEqual(b.Items, f.batch.Items) {
		t.Errorf("batch = %+v, want %+v", b, f.batch)
	}
	ls, err := s.RunLeases(c)
	if err != nil || len(ls) != 1 || ls[0].RunID != f.lease.RunID || ls[0].Token != f.lease.Token ||
		ls[0].Holder != f.lease.Holder || ls[0].Host != "fx" || ls[0].PID != 7 || ls[0].Expired {
		t.Errorf("RunLeases = %+v, %v; want the fixture's, live", ls, err)
	}
	ws, err := s.Leases(c)
	if err != nil || len(ws) != 1 || ws[0].ID != f.worker.ID || ws[0].Host != "fx" || ws[0].PID != 8 || ws[0].Expired ||
		ws[0].ExpiresAt.Sub(ws[0].StartedAt) < fixtureLife-time.Hour {
		t.Errorf("Leases = %+v, %v; want the fixture's, live", ws, err)
	}
}

// checkFixtureChat checks the fixture's bookmark and conversation.
func checkFixtureChat(t *testing.T, s Store, f *fixtureData) {
	t.Helper()
	c := ctx(t)
	bs, n, err := s.Bookmarks(c, madspark.BookmarkFilter{Tags: []string{"keep"}, Query: "MAPPED"})
	if err != nil || n != 1 || len(bs) != 1 {
		t.Fatalf("Bookmarks = %v, %d, %v; want the fixture's", bs, n, err)
	}
	checkTime(t, "bookmark created", bs[0].CreatedAt, f.bookmark.CreatedAt)
	bs[0].CreatedAt = f.bookmark.CreatedAt
	if !reflect.DeepEqual(bs[0], f.bookmark) {
		t.Errorf("bookmark =\n%+v, want\n%+v", bs[0], f.bookmark)
	}
	conv := mustConversation(t, s, f.conv.ID)
	checkTime(t, "conversation created", conv.CreatedAt, f.conv.CreatedAt)
	checkTime(t, "conversation updated", conv.UpdatedAt, f.messages[1].CreatedAt)
	if conv.Title != f.conv.Title || conv.Model != f.conv.Model || len(conv.Messages) != len(f.messages) {
		t.Fatalf("conversation = %+v, want %+v with %d messages", conv, f.conv, len(f.messages))
	}
	for i, want := range f.messages {
		got := conv.Messages[i]
		checkTime(t, fmt.Sprintf("message %d created", i), got.CreatedAt, want.CreatedAt)
		if got.Seq != int64(i+1) || got.Role != want.Role || got.Content != want.Content || got.RunID != want.RunID || got.Model != want.Model {
			t.Errorf("message %d = %+v, want %+v", i, got, want)
		}
	}
}

// CheckUpgraded checks a store opened on a database written with the first
// five migrations only, holding run fx-old with one step as they were
// written then: they read with what later migrations added at its default,
// and the store keeps everything else (WriteFixture, CheckFixture).
func CheckUpgraded(t *testing.T, s Store) {
	t.Helper()
	at := time.Date(2024, 1, 2, 3, 4, 5, 678901000, time.UTC)
	old := &madspark.Run{ID: "fx-old", Pipeline: "spark", Status: madspark.RunSucceeded, Mode: "live", Provider: "openai",
		Model: "gpt-4o", Params: json.RawMessage(`{"topic":"Old bees"}`), Result: json.RawMessage(`{"ideas":[]}`),
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 10}, CreatedAt: at, FinishedAt: time.Date(2024, 1, 2, 3, 5, 5, 0, time.UTC)}
	got := mustRun(t, s, "fx-old")
	checkRun(t, got, old)
	if !reflect.DeepEqual(got.Tags, []string{"old"}) || got.Subject != "" || got.Topic() != "Old bees" {
		t.Errorf("old run: tags %q, subject %q, topic %q", got.Tags, got.Subject, got.Topic())
	}
	checkStep(t, mustSteps(t, s, "fx-old")[0], &madspark.Step{RunID: "fx-old", Key: "generate", InputHash: "h0",
		Status: madspark.StepDone, Output: json.RawMessage(`{"ideas":[]}`), Usage: llm.Usage{LLMCalls: 1},
		StartedAt: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC), FinishedAt: time.Date(2024, 1, 2, 3, 4, 7, 0, time.UTC)})
	if err := WriteFixture(ctx(t), s); err != nil {
		t.Fatalf("WriteFixture: %v", err)
	}
	CheckFixture(t, s)
}

// CheckEarlier runs CheckFixture on the store open returns for a database
// of the latest schema that an earlier version wrote with WriteFixture
// (named "schema10"), and CheckUpgraded on one of the first five
// migrations ("schema5"), as subtests of t.
func CheckEarlier(t *testing.T, open func(t *testing.T, name string) Store) {
	for name, check := range map[string]func(*testing.T, Store){"schema10": CheckFixture, "schema5": CheckUpgraded} {
		t.Run(name, func(t *testing.T) { check(t, open(t, name)) })
	}
}

// OpenAtOnce opens n stores with open at the same moment, as processes that
// start together do (their migrations race), fails t if one fails, and
// closes them when t ends.
func OpenAtOnce[S interface{ Close() error }](t *testing.T, n int, open func() (S, error)) []S {
	t.Helper()
	dbs, errs := make([]S, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = open() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d of %d at once: %v", i, n, err)
		}
		t.Cleanup(func() { _ = dbs[i].Close() })
	}
	return dbs
}
