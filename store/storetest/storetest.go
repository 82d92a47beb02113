// Package storetest is a conformance suite for implementations of the
// storage contracts of package madspark: madspark.RunStore,
// madspark.CacheStore, madspark.IdeaStore, madspark.EventStore,
// madspark.BatchStore, madspark.LeaseStore, madspark.BookmarkStore and
// madspark.ConversationStore.
//
// A store's tests call Run with a function that opens a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Store {
//			return openEmptyStore(t) // closed by a t.Cleanup
//		})
//	}
//
// The suite pins down what every store must do alike, beyond the interface
// documentation: errors for missing runs read `run "id": not found` and wrap
// madspark.ErrNotFound; runs are listed newest first, runs created at the
// same instant by descending ID; RunFilter.Limit of 0 or less means 50 and is
// capped at 1000; a replaced step keeps its place; listings are empty, not
// nil, when nothing matches; JSON fields must be valid JSON and come back
// with the same meaning (not necessarily the same bytes); times come back in
// UTC, equal to what was stored at least to the microsecond (a store may
// truncate, but not round, to microseconds).
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// Store is what a full store implements: runs, their steps and events, the
// response cache, remembered ideas, batches, worker and run leases,
// bookmarks and conversations.
type Store interface {
	madspark.RunStore
	madspark.CacheStore
	madspark.IdeaStore
	madspark.EventStore
	madspark.BatchStore
	madspark.LeaseStore
	madspark.RunLeaseStore
	madspark.RunRecorder
	madspark.BookmarkStore
	madspark.ConversationStore
}

// test is one case of the suite.
type test[S any] struct {
	name string
	fn   func(t *testing.T, s S)
}

// Run runs the conformance suite for a Store as subtests of t. Each subtest
// calls open for a fresh, empty store of its own; open must arrange for the
// store to be closed (with t.Cleanup) and must be safe to call from parallel
// subtests, since the subtests call t.Parallel.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	tests := []test[Store]{
		{"CreateRunRoundTrip", testCreateRunRoundTrip},
		{"CreateRunDefaults", testCreateRunDefaults},
		{"CreateRunRejects", testCreateRunRejects},
		{"FinishRun", testFinishRun},
		{"FinishRunRejects", testFinishRunRejects},
		{"NotFound", testNotFound},
		{"JSONValues", testJSONValues},
		{"RunsOrder", testRunsOrder},
		{"RunsFilter", testRunsFilter},
		{"RunsLimitOffset", testRunsLimitOffset},
		{"RunsLimitCap", testRunsLimitCap},
		{"StepRoundTrip", testStepRoundTrip},
		{"StepUpsert", testStepUpsert},
		{"StepsPerRun", testStepsPerRun},
		{"SaveStepRejects", testSaveStepRejects},
		{"ConcurrentSaveStep", testConcurrentSaveStep},
		{"IdeasRoundTrip", testIdeasRoundTrip},
		{"IdeasKeepFirst", testIdeasKeepFirst},
		{"IdeasPerMemory", testIdeasPerMemory},
		{"IdeasRejectInvalidJSON", testIdeasRejectInvalidJSON},
		{"SetRunStatus", testSetRunStatus},
		{"EventsRoundTrip", testEventsRoundTrip},
		{"EventsPaging", testEventsPaging},
		{"EventsRejects", testEventsRejects},
		{"ConcurrentAppendEvent", testConcurrentAppendEvent},
		{"BatchRoundTrip", testBatchRoundTrip},
		{"BatchRejects", testBatchRejects},
		{"BatchesList", testBatchesList},
		{"Leases", testLeases},
		{"RunLeases", testRunLeases},
		{"InterruptRun", testInterruptRun},
		{"RunLeaseContention", testRunLeaseContention},
		{"StartRun", testStartRun},
		{"EndRun", testEndRun},
		{"RunTags", testRunTags},
		{"RunsQuery", testRunsQuery},
		{"LastEvent", testLastEvent},
		{"BookmarkRoundTrip", testBookmarkRoundTrip},
		{"BookmarkRejects", testBookmarkRejects},
		{"BookmarksFilter", testBookmarksFilter},
		{"BookmarksOrder", testBookmarksOrder},
		{"BookmarkUpdate", testBookmarkUpdate},
		{"ConversationRoundTrip", testConversationRoundTrip},
		{"ConversationRejects", testConversationRejects},
		{"ConversationsOrder", testConversationsOrder},
		{"ConversationRenameDelete", testConversationRenameDelete},
		{"ConversationTruncate", testConversationTruncate},
		{"ConcurrentAppendMessage", testConcurrentAppendMessage},
		{"PruneCache", testPruneCache},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
	t.Run("Cache", func(t *testing.T) {
		RunCacheStore(t, func(t *testing.T) madspark.CacheStore { return open(t) })
	})
}

// RunCacheStore runs the conformance suite for a madspark.CacheStore alone,
// such as a cache that is not part of a full Store, as subtests of t. open
// has the same duties as for Run: each call returns a fresh store, which
// must not see the entries of any other.
func RunCacheStore(t *testing.T, open func(t *testing.T) madspark.CacheStore) {
	t.Helper()
	tests := []test[madspark.CacheStore]{
		{"Miss", testCacheMiss},
		{"RoundTrip", testCacheRoundTrip},
		{"Overwrite", testCacheOverwrite},
		{"EmptyValue", testCacheEmptyValue},
		{"Keys", testCacheKeys},
		{"LargeValue", testCacheLargeValue},
		{"Concurrent", testCacheConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// ---- helpers ----

// zone is a time zone other than UTC, with a half-hour offset.
var zone = time.FixedZone("X", 5*3600+1800)

// base is a time with a nanosecond fraction, in zone.
var base = time.Date(2025, 3, 4, 5, 6, 7, 123456789, zone)

func ctx(t *testing.T) context.Context { return t.Context() }

func newRun(id, pipeline string, created time.Time) *madspark.Run {
	return &madspark.Run{
		ID:        id,
		Pipeline:  pipeline,
		Status:    madspark.RunRunning,
		Mode:      "mock",
		Provider:  "mock",
		Model:     "mock-1",
		Params:    json.RawMessage(`{"topic":"x"}`),
		CreatedAt: created,
	}
}

func mustCreate(t *testing.T, s madspark.RunStore, r *madspark.Run) {
	t.Helper()
	if err := s.CreateRun(ctx(t), r); err != nil {
		t.Fatalf("CreateRun %q: %v", r.ID, err)
	}
}

func mustRun(t *testing.T, s madspark.RunStore, id string) *madspark.Run {
	t.Helper()
	r, err := s.Run(ctx(t), id)
	if err != nil {
		t.Fatalf("Run %q: %v", id, err)
	}
	return r
}

func mustSaveStep(t *testing.T, s madspark.RunStore, st *madspark.Step) {
	t.Helper()
	if err := s.SaveStep(ctx(t), st); err != nil {
		t.Fatalf("SaveStep %q of run %q: %v", st.Key, st.RunID, err)
	}
}

func mustSteps(t *testing.T, s madspark.RunStore, runID string) []*madspark.Step {
	t.Helper()
	steps, err := s.Steps(ctx(t), runID)
	if err != nil {
		t.Fatalf("Steps %q: %v", runID, err)
	}
	if steps == nil {
		t.Fatalf("Steps %q = nil, want a non-nil slice", runID)
	}
	return steps
}

func mustRuns(t *testing.T, s madspark.RunStore, f madspark.RunFilter) []*madspark.Run {
	t.Helper()
	runs, err := s.Runs(ctx(t), f)
	if err != nil {
		t.Fatalf("Runs %+v: %v", f, err)
	}
	if runs == nil {
		t.Fatalf("Runs %+v = nil, want a non-nil slice", f)
	}
	return runs
}

// sameJSON reports whether a and b are both empty, or both valid JSON with
// the same meaning (object key order, whitespace, escapes and the spelling
// of numbers do not matter).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == 0 && len(b) == 0
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func checkJSON(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	if !sameJSON(got, want) {
		t.Errorf("%s = %s, want %s", what, show(got), show(want))
	}
}

// show formats a JSON value for a message, telling nil apart.
func show(v json.RawMessage) string {
	if v == nil {
		return "nil"
	}
	return strconv.Quote(string(v))
}

// sameTime reports whether got is want to the microsecond: got must equal
// want truncated to microseconds, or want itself.
func sameTime(got, want time.Time) bool {
	return got.Equal(want) || got.Equal(want.Truncate(time.Microsecond))
}

func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if want.IsZero() {
		if !got.IsZero() {
			t.Errorf("%s = %v, want the zero time", what, got)
		}
		return
	}
	if !sameTime(got, want) {
		t.Errorf("%s = %v, want %v", what, got.Format(time.RFC3339Nano), want.UTC().Format(time.RFC3339Nano))
	}
	if got.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, got.Location())
	}
}

func checkRun(t *testing.T, got, want *madspark.Run) {
	t.Helper()
	if got.ID != want.ID || got.Pipeline != want.Pipeline || got.Status != want.Status ||
		got.Mode != want.Mode || got.Provider != want.Provider || got.Model != want.Model ||
		got.Error != want.Error || got.Subject != want.Subject {
		t.Errorf("run %q:\n got %+v\nwant %+v", want.ID, got, want)
	}
	if got.Usage != want.Usage {
		t.Errorf("run %q: usage = %+v, want %+v", want.ID, got.Usage, want.Usage)
	}
	checkJSON(t, "run "+want.ID+" params", got.Params, want.Params)
	checkJSON(t, "run "+want.ID+" result", got.Result, want.Result)
	checkTime(t, "run "+want.ID+" created", got.CreatedAt, want.CreatedAt)
	checkTime(t, "run "+want.ID+" finished", got.FinishedAt, want.FinishedAt)
}

func checkStep(t *testing.T, got, want *madspark.Step) {
	t.Helper()
	if got.RunID != want.RunID || got.Key != want.Key || got.InputHash != want.InputHash ||
		got.Status != want.Status || got.Error != want.Error {
		t.Errorf("step %s/%s:\n got %+v\nwant %+v", want.RunID, want.Key, got, want)
	}
	if got.Usage != want.Usage {
		t.Errorf("step %s/%s: usage = %+v, want %+v", want.RunID, want.Key, got.Usage, want.Usage)
	}
	if len(got.Repairs) != len(want.Repairs) || (len(want.Repairs) > 0 && !reflect.DeepEqual(got.Repairs, want.Repairs)) {
		t.Errorf("step %s/%s: repairs = %+v, want %+v", want.RunID, want.Key, got.Repairs, want.Repairs)
	}
	what := "step " + want.RunID + "/" + want.Key
	checkJSON(t, what+" output", got.Output, want.Output)
	checkTime(t, what+" started", got.StartedAt, want.StartedAt)
	checkTime(t, what+" finished", got.FinishedAt, want.FinishedAt)
	checkCalls(t, what, got.Calls, want.Calls)
}

// checkCalls checks that the calls of a step came back as saved.
func checkCalls(t *testing.T, what string, got, want []madspark.Call) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d calls, want %d: %+v", what, len(got), len(want), got)
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		checkTime(t, fmt.Sprintf("%s call %d started", what, i), g.StartedAt, w.StartedAt)
		g.StartedAt, w.StartedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s call %d:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

func runIDs(runs []*madspark.Run) []string {
	s := []string{}
	for _, r := range runs {
		s = append(s, r.ID)
	}
	return s
}

func checkIDs(t *testing.T, what string, got []*madspark.Run, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if g := runIDs(got); !reflect.DeepEqual(g, want) {
		t.Errorf("%s = %v, want %v", what, g, want)
	}
}

func stepKeys(steps []*madspark.Step) []string {
	s := []string{}
	for _, st := range steps {
		s = append(s, st.Key)
	}
	return s
}

func checkNotFound(t *testing.T, what string, err error, id string) {
	t.Helper()
	if !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("%s: err = %v, want one wrapping madspark.ErrNotFound", what, err)
		return
	}
	if want := fmt.Sprintf("run %q: not found", id); err.Error() != want {
		t.Errorf("%s: err = %q, want %q", what, err, want)
	}
}

func checkNotStored(t *testing.T, s madspark.RunStore, id string) {
	t.Helper()
	if _, err := s.Run(ctx(t), id); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("rejected run %q: Run err = %v, want ErrNotFound", id, err)
	}
}

// ---- runs ----

func testCreateRunRoundTrip(t *testing.T, s Store) {
	full := &madspark.Run{
		ID:         "run-full",
		Pipeline:   "spark",
		Status:     madspark.RunSucceeded,
		Mode:       "live",
		Provider:   "openai",
		Model:      "gpt-x",
		Params:     json.RawMessage(`{"topic":"urban gardens","n":3,"nested":{"a":[1,2.5,"é"]},"ok":true,"none":null}`),
		Result:     json.RawMessage(`{"ideas":[{"title":"a","score":8.5}]}`),
		Error:      "partial: one critic timed out",
		Usage:      llm.Usage{LLMCalls: 3, CachedCalls: 1, InputTokens: 1200, OutputTokens: 345, CostUSD: 0.01234},
		Subject:    "urban gardens — ünïcode",
		CreatedAt:  base,
		FinishedAt: base.Add(90*time.Second + 987654321),
	}
	want := *full
	mustCreate(t, s, full)
	if !reflect.DeepEqual(*full, want) {
		t.Errorf("CreateRun changed a complete run:\n got %+v\nwant %+v", *full, want)
	}
	checkRun(t, mustRun(t, s, "run-full"), &want)

	// Only what is required.
	minimal := &madspark.Run{ID: "run-min", Pipeline: "p", Status: madspark.RunRunning, CreatedAt: base.Add(time.Second)}
	mustCreate(t, s, minimal)
	got := mustRun(t, s, "run-min")
	checkRun(t, got, minimal)
	if got.Params != nil || got.Result != nil || !got.FinishedAt.IsZero() {
		t.Errorf("run-min: params %s, result %s, finished %v; want nil, nil, zero", show(got.Params), show(got.Result), got.FinishedAt)
	}

	// IDs and text are kept exactly.
	odd := newRun("run/ünïcødé 'quoted' \"x\" ;--", "pipe line", base.Add(2*time.Second))
	odd.Error = "multi\nline\ttext with 'quotes' and ünïcødé 🚀"
	mustCreate(t, s, odd)
	checkRun(t, mustRun(t, s, odd.ID), odd)

	// Runs that differ only in the case of the ID are distinct.
	upper := newRun("RUN-FULL", "other", base)
	mustCreate(t, s, upper)
	checkRun(t, mustRun(t, s, "RUN-FULL"), upper)
	checkRun(t, mustRun(t, s, "run-full"), &want)
}

func testCreateRunDefaults(t *testing.T, s Store) {
	before := time.Now()
	r := &madspark.Run{ID: "d", Pipeline: "spark"}
	mustCreate(t, s, r)
	after := time.Now()
	if r.Status != madspark.RunRunning {
		t.Errorf("CreateRun set status %q, want %q", r.Status, madspark.RunRunning)
	}
	if r.CreatedAt.Before(before.Truncate(time.Microsecond)) || r.CreatedAt.After(after) {
		t.Errorf("CreateRun set CreatedAt %v, want between %v and %v", r.CreatedAt, before, after)
	}
	got := mustRun(t, s, "d")
	checkRun(t, got, r)
}

func testCreateRunRejects(t *testing.T, s Store) {
	c := ctx(t)
	orig := newRun("dup", "spark", base)
	mustCreate(t, s, orig)
	dup := newRun("dup", "other", base.Add(time.Hour))
	dup.Params = json.RawMessage(`{"second":true}`)
	if err := s.CreateRun(c, dup); err == nil {
		t.Error("CreateRun with a duplicate ID succeeded")
	} else if errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("CreateRun with a duplicate ID: err = %v wraps ErrNotFound", err)
	}
	checkRun(t, mustRun(t, s, "dup"), orig)

	if err := s.CreateRun(c, &madspark.Run{Pipeline: "spark"}); err == nil {
		t.Error("CreateRun without ID succeeded")
	}
	if err := s.CreateRun(c, nil); err == nil {
		t.Error("CreateRun(nil) succeeded")
	}
	for _, bad := range []string{`{not json`, `{"a":1}x`, `'single'`, ` `} {
		r := newRun("bad-params", "spark", base)
		r.Params = json.RawMessage(bad)
		if err := s.CreateRun(c, r); err == nil {
			t.Errorf("CreateRun with params %q succeeded", bad)
		}
		r = newRun("bad-result", "spark", base)
		r.Result = json.RawMessage(bad)
		if err := s.CreateRun(c, r); err == nil {
			t.Errorf("CreateRun with result %q succeeded", bad)
		}
	}
	checkNotStored(t, s, "bad-params")
	checkNotStored(t, s, "bad-result")
	checkIDs(t, "runs after rejects", mustRuns(t, s, madspark.RunFilter{}), "dup")
}

func testFinishRun(t *testing.T, s Store) {
	c := ctx(t)
	r := newRun("r", "spark", base)
	r.Params = json.RawMessage(`{"topic":"urban gardens","n":3}`)
	mustCreate(t, s, r)
	stored := *r

	// FinishRun records status, result, error, usage and finish time, and
	// nothing else.
	fin := *r
	fin.Pipeline, fin.Mode, fin.Provider, fin.Model = "changed", "changed", "changed", "changed"
	fin.Params = json.RawMessage(`{"changed":true}`)
	fin.CreatedAt = base.Add(time.Hour)
	fin.Status = madspark.RunSucceeded
	fin.Result = json.RawMessage(`{"ideas":[{"title":"a","score":8.5}]}`)
	fin.Error = ""
	fin.Usage = llm.Usage{LLMCalls: 3, CachedCalls: 1, InputTokens: 1200, OutputTokens: 345, CostUSD: 0.01234}
	fin.FinishedAt = base.Add(90*time.Second + 1500)
	if err := s.FinishRun(c, &fin); err != nil {
		t.Fatal(err)
	}
	want := stored
	want.Status, want.Result, want.Error, want.Usage, want.FinishedAt = fin.Status, fin.Result, fin.Error, fin.Usage, fin.FinishedAt
	checkRun(t, mustRun(t, s, "r"), &want)

	// Finishing again replaces those fields, clearing the result.
	again := want
	again.Status = madspark.RunFailed
	again.Result = nil
	again.Error = "provider: rate limited"
	again.Usage = llm.Usage{}
	again.FinishedAt = base.Add(2 * time.Hour)
	if err := s.FinishRun(c, &again); err != nil {
		t.Fatal(err)
	}
	checkRun(t, mustRun(t, s, "r"), &again)

	// A zero FinishedAt is set to the current time, in the run as well.
	f := newRun("f", "spark", base)
	f.Params = nil
	mustCreate(t, s, f)
	f.Status = madspark.RunFailed
	f.Error = "boom"
	before := time.Now()
	if err := s.FinishRun(c, f); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if f.FinishedAt.Before(before.Truncate(time.Microsecond)) || f.FinishedAt.After(after) {
		t.Errorf("FinishRun set FinishedAt %v, want between %v and %v", f.FinishedAt, before, after)
	}
	checkRun(t, mustRun(t, s, "f"), f)
}

func testFinishRunRejects(t *testing.T, s Store) {
	c := ctx(t)
	r := newRun("r", "spark", base)
	mustCreate(t, s, r)
	bad := *r
	bad.Status = madspark.RunSucceeded
	bad.Result = json.RawMessage(`{"truncated":`)
	bad.FinishedAt = base.Add(time.Minute)
	if err := s.FinishRun(c, &bad); err == nil {
		t.Error("FinishRun with an invalid result succeeded")
	}
	checkRun(t, mustRun(t, s, "r"), r)
	if err := s.FinishRun(c, &madspark.Run{Status: madspark.RunFailed}); err == nil {
		t.Error("FinishRun without ID succeeded")
	}
	if err := s.FinishRun(c, nil); err == nil {
		t.Error("FinishRun(nil) succeeded")
	}
}

func testNotFound(t *testing.T, s Store) {
	c := ctx(t)
	_, err := s.Run(c, "nope")
	checkNotFound(t, "Run", err, "nope")
	err = s.FinishRun(c, &madspark.Run{ID: "nope", Status: madspark.RunFailed})
	checkNotFound(t, "FinishRun", err, "nope")
	err = s.SaveStep(c, &madspark.Step{RunID: "nope", Key: "k", Status: madspark.StepDone})
	checkNotFound(t, "SaveStep", err, "nope")
	if steps := mustSteps(t, s, "nope"); len(steps) != 0 {
		t.Errorf("Steps of a missing run = %v, want empty", stepKeys(steps))
	}
	checkIDs(t, "runs of an empty store", mustRuns(t, s, madspark.RunFilter{}))

	// Lookups are exact: no prefix, case or pattern matching.
	mustCreate(t, s, newRun("abc", "spark", base))
	for _, id := range []string{"ab", "ABC", "abc ", "a%", "a_c", ""} {
		_, err := s.Run(c, id)
		checkNotFound(t, "Run "+strconv.Quote(id), err, id)
	}
	if err := s.SaveStep(c, &madspark.Step{RunID: "ABC", Key: "k", Status: madspark.StepDone}); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("SaveStep into run %q: err = %v, want ErrNotFound", "ABC", err)
	}
	if steps := mustSteps(t, s, "abc"); len(steps) != 0 {
		t.Errorf("steps of abc = %v, want none", stepKeys(steps))
	}
}

func testJSONValues(t *testing.T, s Store) {
	c := ctx(t)
	values := []string{
		`{"b":1,"a":2,"c":{"z":[3,2,1],"y":{}}}`,
		`[1,"two",3.5,true,false,null,{"k":[]}]`,
		`"just a string with \"quotes\", \\ backslash, \n newline, \u00e9 and \u0000 NUL"`,
		`"ünïcødé and 🚀 raw"`,
		`42`,
		`-1.5e-7`,
		`12345678901234567890`,
		`true`,
		`null`,
		`{}`,
		`[]`,
		"  {\n\t\"spaced\" : [ 1 , 2 ]\n}  ",
	}
	for i, v := range values {
		id := fmt.Sprintf("j%02d", i)
		r := newRun(id, "json", base)
		r.Params = json.RawMessage(v)
		r.Result = json.RawMessage(v)
		mustCreate(t, s, r)
		checkRun(t, mustRun(t, s, id), r)

		r.Result = json.RawMessage(v)
		r.Status = madspark.RunSucceeded
		r.FinishedAt = base.Add(time.Second)
		if err := s.FinishRun(c, r); err != nil {
			t.Fatalf("FinishRun with result %s: %v", v, err)
		}
		checkRun(t, mustRun(t, s, id), r)

		st := &madspark.Step{RunID: id, Key: "k", Status: madspark.StepDone, Output: json.RawMessage(v)}
		mustSaveStep(t, s, st)
		if steps := mustSteps(t, s, id); len(steps) != 1 {
			t.Errorf("run %s has %d steps, want 1", id, len(steps))
		} else {
			checkStep(t, steps[0], st)
		}

		idea := madspark.RememberedIdea{Memory: "json", Name: id, Data: json.RawMessage(v), AcceptedAt: base}
		if err := s.RememberIdeas(c, []madspark.RememberedIdea{idea}); err != nil {
			t.Fatalf("RememberIdeas with data %s: %v", v, err)
		}
	}
	ideas, err := s.RememberedIdeas(c, "json")
	if err != nil {
		t.Fatal(err)
	}
	if len(ideas) != len(values) {
		t.Fatalf("got %d ideas, want %d", len(ideas), len(values))
	}
	for i, v := range values {
		checkJSON(t, "idea "+ideas[i].Name+" data", ideas[i].Data, json.RawMessage(v))
	}

	// An empty (not nil) value is stored as no value.
	r := newRun("empty", "json", base)
	r.Params = json.RawMessage{}
	r.Result = json.RawMessage{}
	mustCreate(t, s, r)
	got := mustRun(t, s, "empty")
	if got.Params != nil || got.Result != nil {
		t.Errorf("empty params and result came back as %s and %s, want nil", show(got.Params), show(got.Result))
	}
}

func testRunsOrder(t *testing.T, s Store) {
	b := base.UTC()
	// r0 is the oldest. The times mix whole seconds and fractions, which
	// sort wrongly as variable-width RFC 3339 text, and a zone other than
	// UTC, which sorts wrongly as local text.
	times := []time.Time{
		b,
		b.Add(time.Second),
		b.Add(time.Second + 100*time.Millisecond),
		b.Add(2 * time.Second).In(zone),
		b.Add(2*time.Second + time.Microsecond),
		b.Add(time.Hour).In(time.FixedZone("W", -10*3600)),
	}
	for _, i := range []int{3, 0, 5, 1, 4, 2} { // out of order
		mustCreate(t, s, newRun("r"+strconv.Itoa(i), "spark", times[i]))
	}
	checkIDs(t, "newest first", mustRuns(t, s, madspark.RunFilter{}), "r5", "r4", "r3", "r2", "r1", "r0")

	// Runs created at the same instant are ordered by descending ID,
	// byte-wise.
	same := b.Add(-time.Hour)
	for _, id := range []string{"t-b", "t-B", "t-a", "t-A", "t-_", "t-10", "t-9"} {
		mustCreate(t, s, newRun(id, "tie", same))
	}
	checkIDs(t, "ties", mustRuns(t, s, madspark.RunFilter{Pipeline: "tie"}), "t-b", "t-a", "t-_", "t-B", "t-A", "t-9", "t-10")

	// Listed runs are complete.
	full := newRun("full", "full", b.Add(-2*time.Hour))
	full.Status = madspark.RunSucceeded
	full.Result = json.RawMessage(`{"ok":[1]}`)
	full.Error = "e"
	full.Usage = llm.Usage{LLMCalls: 1, CachedCalls: 2, InputTokens: 3, OutputTokens: 4, CostUSD: 0.5}
	full.FinishedAt = b
	mustCreate(t, s, full)
	got := mustRuns(t, s, madspark.RunFilter{Pipeline: "full"})
	if len(got) != 1 {
		t.Fatalf("got %d runs, want 1", len(got))
	}
	checkRun(t, got[0], full)
}

func testRunsFilter(t *testing.T, s Store) {
	c := ctx(t)
	pipelines := []string{"spark", "eval", "spark", "eval", "spark", "spark"}
	for i, p := range pipelines {
		mustCreate(t, s, newRun("r"+strconv.Itoa(i), p, base.Add(time.Duration(i)*time.Second)))
	}
	for i, st := range map[int]madspark.RunStatus{1: madspark.RunSucceeded, 4: madspark.RunSucceeded, 2: madspark.RunFailed} {
		r := mustRun(t, s, "r"+strconv.Itoa(i))
		r.Status = st
		if err := s.FinishRun(c, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		f    madspark.RunFilter
		want []string
	}{
		{madspark.RunFilter{Pipeline: "spark"}, []string{"r5", "r4", "r2", "r0"}},
		{madspark.RunFilter{Pipeline: "eval"}, []string{"r3", "r1"}},
		{madspark.RunFilter{Status: madspark.RunSucceeded}, []string{"r4", "r1"}},
		{madspark.RunFilter{Status: madspark.RunFailed}, []string{"r2"}},
		{madspark.RunFilter{Status: madspark.RunRunning}, []string{"r5", "r3", "r0"}},
		{madspark.RunFilter{Pipeline: "spark", Status: madspark.RunRunning}, []string{"r5", "r0"}},
		{madspark.RunFilter{Pipeline: "spark", Status: madspark.RunSucceeded, Limit: 1}, []string{"r4"}},
		{madspark.RunFilter{Pipeline: "spark", Offset: 1, Limit: 2}, []string{"r4", "r2"}},
		{madspark.RunFilter{Pipeline: "none"}, nil},
		{madspark.RunFilter{Pipeline: "Spark"}, nil},
		{madspark.RunFilter{Pipeline: "spar%"}, nil},
		{madspark.RunFilter{Status: "succeeded%"}, nil},
		{madspark.RunFilter{Pipeline: "eval", Status: madspark.RunFailed}, nil},
	} {
		checkIDs(t, fmt.Sprintf("%+v", tc.f), mustRuns(t, s, tc.f), tc.want...)
	}
}

func testRunsLimitOffset(t *testing.T, s Store) {
	const n = 60
	var all []string
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		// r00 is the newest.
		mustCreate(t, s, newRun(id, "bulk", base.Add(-time.Duration(i)*time.Minute)))
		all = append(all, id)
	}
	for _, tc := range []struct {
		f    madspark.RunFilter
		want []string
	}{
		{madspark.RunFilter{}, all[:50]},
		{madspark.RunFilter{Limit: -1}, all[:50]},
		{madspark.RunFilter{Limit: 2}, all[:2]},
		{madspark.RunFilter{Limit: 1}, all[:1]},
		{madspark.RunFilter{Limit: 2, Offset: 2}, all[2:4]},
		{madspark.RunFilter{Offset: 55}, all[55:]},
		{madspark.RunFilter{Offset: 10}, all[10:60]},
		{madspark.RunFilter{Offset: -3, Limit: 3}, all[:3]},
		{madspark.RunFilter{Offset: n}, nil},
		{madspark.RunFilter{Offset: 1000}, nil},
		{madspark.RunFilter{Limit: 100}, all},
		{madspark.RunFilter{Limit: 1_000_000}, all},
	} {
		checkIDs(t, fmt.Sprintf("%+v", tc.f), mustRuns(t, s, tc.f), tc.want...)
	}
}

func testRunsLimitCap(t *testing.T, s Store) {
	if testing.Short() {
		t.Skip("creates over 1000 runs")
	}
	const n = 1003
	for i := range n {
		mustCreate(t, s, &madspark.Run{ID: fmt.Sprintf("r%04d", i), Pipeline: "bulk", CreatedAt: base})
	}
	got := mustRuns(t, s, madspark.RunFilter{Limit: n})
	if len(got) != 1000 || got[0].ID != "r1002" || got[999].ID != "r0003" {
		t.Errorf("Limit %d: got %d runs, want the cap of 1000", n, len(got))
	}
	got = mustRuns(t, s, madspark.RunFilter{Limit: 1000, Offset: 1000})
	checkIDs(t, "the rest", got, "r0002", "r0001", "r0000")
}

// ---- steps ----

func testStepRoundTrip(t *testing.T, s Store) {
	mustCreate(t, s, newRun("a", "spark", base))
	full := &madspark.Step{
		RunID:     "a",
		Key:       "evaluate",
		InputHash: "sha256:0123456789abcdef",
		Status:    madspark.StepDone,
		Output:    json.RawMessage(`{"scores":[8.5,7],"notes":"ok"}`),
		Error:     "retried once",
		Usage:     llm.Usage{LLMCalls: 2, CachedCalls: 1, InputTokens: 100, OutputTokens: 50, CostUSD: 0.25},
		Repairs: []llm.Repair{
			{Agent: "spark.evaluate", Rule: "range", Action: "/evaluations/0/score: 10.5 → 10 (the maximum)"},
			{Agent: "spark.evaluate", Rule: "index", Action: "indices 1..3 → 0..2"},
		},
		StartedAt:  base,
		FinishedAt: base.Add(1500*time.Millisecond + 999),
		Calls: []madspark.Call{{
			Agent: "spark.evaluate", Provider: "openai", Model: "gpt-4o-mini",
			System:   "You score ideas.\n\"quoted\" \u2014 and a NUL \x00 too",
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "Score: ünïcode 💡"}},
			Sent: []llm.Message{{Role: llm.RoleSystem, Content: "You score ideas.\n\nReply with only a JSON value of this shape: {\"score\": number}"},
				{Role: llm.RoleUser, Content: "Score: ünïcode 💡"}},
			ResponseFormat: json.RawMessage(`{"type":"json_schema","json_schema":{"name":"score","schema":{"type":"object"},"strict":false}}`),
			Temperature:    0.7, MaxTokens: 800,
			Response: `{"scores":[8.5,7]}`, FinishReason: "stop", Attempt: 1, Retries: 2,
			Usage:     llm.Usage{LLMCalls: 1, InputTokens: 60, OutputTokens: 30, CostUSD: 0.2},
			StartedAt: base.Add(time.Millisecond + 7), Latency: 1200*time.Millisecond + 3,
		}, {
			Agent: "spark.evaluate", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "Score"}, {Role: llm.RoleAssistant, Content: "bad"}, {Role: llm.RoleUser, Content: "fix"}},
			Attempt: 2, Cached: true, Usage: llm.Usage{CachedCalls: 1}, StartedAt: base.Add(time.Second),
		}, {
			Agent: "spark.evaluate", Messages: []llm.Message{}, Error: "rate limited", Attempt: 1, StartedAt: base.Add(time.Second),
		}},
	}
	want := *full
	mustSaveStep(t, s, full)
	if !reflect.DeepEqual(*full, want) {
		t.Errorf("SaveStep changed its step:\n got %+v\nwant %+v", *full, want)
	}
	minimal := &madspark.Step{RunID: "a", Key: "failed", Status: madspark.StepFailed}
	mustSaveStep(t, s, minimal)
	// A model without a known price: its cost is unknown.
	unpriced := &madspark.Step{RunID: "a", Key: "unpriced", Status: madspark.StepRunning,
		Usage: llm.Usage{LLMCalls: 1, InputTokens: 7, OutputTokens: 3, UnpricedCalls: 1}}
	mustSaveStep(t, s, unpriced)
	steps := mustSteps(t, s, "a")
	if len(steps) != 3 {
		t.Fatalf("got steps %v, want [evaluate failed unpriced]", stepKeys(steps))
	}
	checkStep(t, steps[0], &want)
	checkStep(t, steps[1], minimal)
	checkStep(t, steps[2], unpriced)
	if steps[1].Output != nil || !steps[1].StartedAt.IsZero() || !steps[1].FinishedAt.IsZero() {
		t.Errorf("minimal step = %+v, want no output and zero times", steps[1])
	}
	// The usage of a running run is that of its steps so far, an unknown
	// cost included; nothing else of it changes.
	run := newRun("a", "spark", base)
	run.Usage = want.Usage
	run.Usage.Add(unpriced.Usage)
	run.Usage.CostUSD = 0
	checkRun(t, mustRun(t, s, "a"), run)
	if got := mustRun(t, s, "a").Usage; got.Priced() || got.LLMCalls != 3 || got.InputTokens != 107 {
		t.Errorf("run usage = %+v, want 3 calls, 107 input tokens, unpriced", got)
	}
	// A finished run keeps the usage it finished with.
	done := newRun("b", "spark", base)
	mustCreate(t, s, done)
	done.Status, done.Usage = madspark.RunSucceeded, llm.Usage{LLMCalls: 9}
	if err := s.FinishRun(ctx(t), done); err != nil {
		t.Fatal(err)
	}
	mustSaveStep(t, s, &madspark.Step{RunID: "b", Key: "late", Status: madspark.StepDone, Usage: llm.Usage{LLMCalls: 1}})
	if got := mustRun(t, s, "b").Usage; got != done.Usage {
		t.Errorf("finished run's usage = %+v, want %+v", got, done.Usage)
	}
}

func testStepUpsert(t *testing.T, s Store) {
	t0 := base
	mustCreate(t, s, newRun("a", "spark", t0))
	keys := []string{"generate", "evaluate", "improve", "reevaluate", "a-first-by-name"}
	var want []*madspark.Step
	for i, k := range keys {
		st := &madspark.Step{
			RunID: "a", Key: k, InputHash: "h" + k, Status: madspark.StepDone,
			Output:     json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)),
			Usage:      llm.Usage{LLMCalls: 1, InputTokens: i},
			StartedAt:  t0.Add(time.Duration(len(keys)-i) * time.Second), // not in key order
			FinishedAt: t0.Add(time.Duration(len(keys)-i)*time.Second + 500*time.Millisecond),
		}
		mustSaveStep(t, s, st)
		want = append(want, st)
	}
	// Replace the second and the last steps; the second twice. Every field
	// is replaced, including by empty values.
	repl := &madspark.Step{
		RunID: "a", Key: "evaluate", InputHash: "h2", Status: madspark.StepFailed,
		Output: json.RawMessage(`{"replaced":true}`), Error: "boom",
		Usage:     llm.Usage{LLMCalls: 2, CostUSD: 0.5},
		StartedAt: t0.Add(time.Minute), FinishedAt: t0.Add(2 * time.Minute),
		Calls: []madspark.Call{{Agent: "x", Messages: []llm.Message{{Role: llm.RoleUser, Content: "second"}}, Attempt: 1}},
	}
	mustSaveStep(t, s, &madspark.Step{RunID: "a", Key: "evaluate", Status: madspark.StepFailed, Error: "first retry",
		Calls: []madspark.Call{{Agent: "x", Messages: []llm.Message{{Role: llm.RoleUser, Content: "first"}}, Attempt: 1}}})
	mustSaveStep(t, s, repl)
	want[1] = repl
	cleared := &madspark.Step{RunID: "a", Key: "a-first-by-name", Status: madspark.StepDone}
	mustSaveStep(t, s, cleared)
	want[4] = cleared
	// A new step goes to the end.
	last := &madspark.Step{RunID: "a", Key: "zz-new", Status: madspark.StepDone, Output: json.RawMessage(`[]`)}
	mustSaveStep(t, s, last)
	want = append(want, last)

	steps := mustSteps(t, s, "a")
	if got, w := stepKeys(steps), stepKeys(want); !reflect.DeepEqual(got, w) {
		t.Fatalf("steps = %v, want %v", got, w)
	}
	for i := range steps {
		checkStep(t, steps[i], want[i])
	}
}

func testStepsPerRun(t *testing.T, s Store) {
	mustCreate(t, s, newRun("a", "spark", base))
	mustCreate(t, s, newRun("b", "spark", base))
	mustCreate(t, s, newRun("A", "spark", base))
	for _, k := range []string{"generate", "evaluate", "improve"} {
		mustSaveStep(t, s, &madspark.Step{RunID: "a", Key: k, Status: madspark.StepDone, Error: "a " + k})
	}
	// The same keys in another run, in another order.
	for _, k := range []string{"improve", "generate"} {
		mustSaveStep(t, s, &madspark.Step{RunID: "b", Key: k, Status: madspark.StepFailed, Error: "b " + k})
	}
	mustSaveStep(t, s, &madspark.Step{RunID: "A", Key: "improve", Status: madspark.StepDone, Error: "A improve"})
	// Replacing a step of b does not touch a.
	mustSaveStep(t, s, &madspark.Step{RunID: "b", Key: "generate", Status: madspark.StepDone, Error: "b generate 2"})

	for _, tc := range []struct {
		run  string
		keys []string
		errs []string
	}{
		{"a", []string{"generate", "evaluate", "improve"}, []string{"a generate", "a evaluate", "a improve"}},
		{"b", []string{"improve", "generate"}, []string{"b improve", "b generate 2"}},
		{"A", []string{"improve"}, []string{"A improve"}},
	} {
		steps := mustSteps(t, s, tc.run)
		if got := stepKeys(steps); !reflect.DeepEqual(got, tc.keys) {
			t.Errorf("steps of %s = %v, want %v", tc.run, got, tc.keys)
			continue
		}
		for i, st := range steps {
			if st.RunID != tc.run || st.Error != tc.errs[i] {
				t.Errorf("step %d of %s = %s/%s %q, want %s/%s %q", i, tc.run, st.RunID, st.Key, st.Error, tc.run, tc.keys[i], tc.errs[i])
			}
		}
	}
}

func testSaveStepRejects(t *testing.T, s Store) {
	c := ctx(t)
	mustCreate(t, s, newRun("a", "spark", base))
	good := &madspark.Step{RunID: "a", Key: "k", Status: madspark.StepDone, Output: json.RawMessage(`{"v":1}`)}
	mustSaveStep(t, s, good)
	for _, st := range []*madspark.Step{
		nil,
		{Key: "k", Status: madspark.StepDone},
		{RunID: "a", Status: madspark.StepDone},
		{RunID: "a", Key: "k", Status: madspark.StepDone, Output: json.RawMessage(`{"v":`)},
		{RunID: "a", Key: "new", Status: madspark.StepDone, Output: json.RawMessage(`nope`)},
	} {
		if err := s.SaveStep(c, st); err == nil {
			t.Errorf("SaveStep(%+v) succeeded", st)
		} else if errors.Is(err, madspark.ErrNotFound) {
			t.Errorf("SaveStep(%+v): err = %v wraps ErrNotFound", st, err)
		}
	}
	steps := mustSteps(t, s, "a")
	if len(steps) != 1 {
		t.Fatalf("steps = %v, want [k]", stepKeys(steps))
	}
	checkStep(t, steps[0], good)
}

func testConcurrentSaveStep(t *testing.T, s Store) {
	c := ctx(t)
	const goroutines, perG = 8, 15
	mustCreate(t, s, newRun("shared", "concurrent", base))
	for g := range goroutines {
		mustCreate(t, s, newRun(fmt.Sprintf("own-%d", g), "concurrent", base))
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for j := range perG {
				// Each goroutine saves its own steps into the shared run
				// and into a run of its own, and all of them keep
				// replacing one common step.
				for _, st := range []*madspark.Step{
					{RunID: "shared", Key: fmt.Sprintf("g%d-%02d", g, j), Status: madspark.StepDone, Output: json.RawMessage(strconv.Itoa(j))},
					{RunID: fmt.Sprintf("own-%d", g), Key: fmt.Sprintf("s%02d", j), Status: madspark.StepDone},
					{RunID: "shared", Key: "common", Status: madspark.StepDone, Error: fmt.Sprintf("g%d-%02d", g, j)},
				} {
					if err := s.SaveStep(c, st); err != nil {
						errs <- fmt.Errorf("goroutine %d: SaveStep %s/%s: %w", g, st.RunID, st.Key, err)
						return
					}
				}
				if _, err := s.Steps(c, "shared"); err != nil {
					errs <- fmt.Errorf("goroutine %d: Steps: %w", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	steps := mustSteps(t, s, "shared")
	if len(steps) != goroutines*perG+1 {
		t.Fatalf("shared run has %d steps, want %d", len(steps), goroutines*perG+1)
	}
	// Each goroutine's steps are in the order it saved them, and every
	// key is there once.
	next := make([]int, goroutines)
	seen := map[string]bool{}
	for _, st := range steps {
		if seen[st.Key] {
			t.Errorf("step %q listed twice", st.Key)
		}
		seen[st.Key] = true
		if st.Key == "common" {
			continue
		}
		var g, j int
		if _, err := fmt.Sscanf(st.Key, "g%d-%d", &g, &j); err != nil || g < 0 || g >= goroutines {
			t.Errorf("unexpected step %q", st.Key)
			continue
		}
		if j != next[g] {
			t.Errorf("step %q is out of order: want g%d-%02d next", st.Key, g, next[g])
		}
		next[g] = j + 1
	}
	if !seen["common"] {
		t.Error(`step "common" is missing`)
	}
	for g := range goroutines {
		steps := mustSteps(t, s, fmt.Sprintf("own-%d", g))
		want := []string{}
		for j := range perG {
			want = append(want, fmt.Sprintf("s%02d", j))
		}
		if got := stepKeys(steps); !reflect.DeepEqual(got, want) {
			t.Errorf("steps of own-%d = %v, want %v", g, got, want)
		}
	}
}

// ---- ideas ----

func idea(memory, name string, iteration int) madspark.RememberedIdea {
	return madspark.RememberedIdea{
		Memory:     memory,
		Name:       name,
		Data:       json.RawMessage(`{"n":` + strconv.Quote(name) + `}`),
		RunID:      "run-1",
		Iteration:  iteration,
		AcceptedAt: base.Add(time.Duration(iteration) * time.Second),
	}
}

func mustRemember(t *testing.T, s madspark.IdeaStore, ideas ...madspark.RememberedIdea) {
	t.Helper()
	if err := s.RememberIdeas(ctx(t), ideas); err != nil {
		t.Fatalf("RememberIdeas: %v", err)
	}
}

func mustIdeas(t *testing.T, s madspark.IdeaStore, memory string) []madspark.RememberedIdea {
	t.Helper()
	ideas, err := s.RememberedIdeas(ctx(t), memory)
	if err != nil {
		t.Fatalf("RememberedIdeas %q: %v", memory, err)
	}
	if ideas == nil {
		t.Fatalf("RememberedIdeas %q = nil, want a non-nil slice", memory)
	}
	return ideas
}

func checkIdeas(t *testing.T, memory string, got []madspark.RememberedIdea, want ...madspark.RememberedIdea) {
	t.Helper()
	names := func(ideas []madspark.RememberedIdea) []string {
		s := []string{}
		for _, it := range ideas {
			s = append(s, it.Name)
		}
		return s
	}
	if g, w := names(got), names(want); !reflect.DeepEqual(g, w) {
		t.Errorf("ideas of %q = %v, want %v", memory, g, w)
		return
	}
	for i, g := range got {
		w := want[i]
		what := fmt.Sprintf("idea %q of %q", w.Name, memory)
		if g.Memory != w.Memory || g.RunID != w.RunID || g.Iteration != w.Iteration {
			t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
		}
		checkJSON(t, what+" data", g.Data, w.Data)
		checkTime(t, what+" accepted", g.AcceptedAt, w.AcceptedAt)
	}
}

func testIdeasRoundTrip(t *testing.T, s Store) {
	full := madspark.RememberedIdea{
		Memory:     "urban gardens",
		Name:       "Rooftop hives 🐝",
		Data:       json.RawMessage(`{"title":"Rooftop hives","score":8.5,"tags":["bees","roofs"]}`),
		RunID:      "run-42",
		Iteration:  1 << 40,
		AcceptedAt: base,
	}
	zero := madspark.RememberedIdea{Memory: "urban gardens", Name: "", Data: json.RawMessage(`null`)}
	mustRemember(t, s, full, zero)
	checkIdeas(t, "urban gardens", mustIdeas(t, s, "urban gardens"), full, zero)

	// Nothing to remember is no error.
	mustRemember(t, s)
	if err := s.RememberIdeas(ctx(t), nil); err != nil {
		t.Errorf("RememberIdeas(nil): %v", err)
	}
	if got := mustIdeas(t, s, "nothing"); len(got) != 0 {
		t.Errorf("ideas of an empty memory = %+v", got)
	}
}

func testIdeasKeepFirst(t *testing.T, s Store) {
	mustRemember(t, s, idea("food", "b", 0), idea("food", "a", 0))
	// A repeat keeps the first record and its place; a repeat within one
	// call too; new ideas go to the end.
	dup := idea("food", "b", 5)
	dup.Data = json.RawMessage(`{"n":"changed"}`)
	dup.RunID = "run-2"
	mustRemember(t, s, dup, idea("food", "c", 1), idea("food", "c", 2), idea("food", "0", 3))
	checkIdeas(t, "food", mustIdeas(t, s, "food"),
		idea("food", "b", 0), idea("food", "a", 0), idea("food", "c", 1), idea("food", "0", 3))
}

func testIdeasPerMemory(t *testing.T, s Store) {
	mustRemember(t, s, idea("m1", "x", 0), idea("m2", "x", 1), idea("m1", "y", 2), idea("M1", "z", 3))
	mustRemember(t, s, idea("m2", "w", 4), idea("m1", "x", 9))
	checkIdeas(t, "m1", mustIdeas(t, s, "m1"), idea("m1", "x", 0), idea("m1", "y", 2))
	checkIdeas(t, "m2", mustIdeas(t, s, "m2"), idea("m2", "x", 1), idea("m2", "w", 4))
	checkIdeas(t, "M1", mustIdeas(t, s, "M1"), idea("M1", "z", 3))
	for _, m := range []string{"m", "m%", "", "m1 "} {
		if got := mustIdeas(t, s, m); len(got) != 0 {
			t.Errorf("ideas of %q = %+v, want none", m, got)
		}
	}
}

func testIdeasRejectInvalidJSON(t *testing.T, s Store) {
	c := ctx(t)
	mustRemember(t, s, idea("food", "a", 0))
	for _, data := range []json.RawMessage{json.RawMessage(`{`), nil, json.RawMessage(``), json.RawMessage(`{"a":1} {}`)} {
		bad := madspark.RememberedIdea{Memory: "food", Name: "bad", Data: data}
		// The whole call is rejected, including the valid ideas before the
		// invalid one.
		err := s.RememberIdeas(c, []madspark.RememberedIdea{idea("food", "b", 1), bad, idea("food", "c", 2)})
		if err == nil {
			t.Errorf("RememberIdeas with data %s succeeded", show(data))
		} else if !strings.Contains(err.Error(), `"bad"`) {
			t.Errorf("RememberIdeas with data %s: err = %q, want it to name the idea", show(data), err)
		}
	}
	checkIdeas(t, "food", mustIdeas(t, s, "food"), idea("food", "a", 0))
}

// ---- cache ----

func mustPut(t *testing.T, s madspark.CacheStore, key string, value []byte) {
	t.Helper()
	if err := s.PutCache(ctx(t), key, value); err != nil {
		t.Fatalf("PutCache %q: %v", key, err)
	}
}

func checkHit(t *testing.T, s madspark.CacheStore, key string, want []byte) {
	t.Helper()
	v, ok, err := s.GetCache(ctx(t), key)
	if err != nil || !ok || v == nil || !bytes.Equal(v, want) {
		t.Errorf("GetCache %q = %q, %v, %v; want %q, true, nil", key, trim(v), ok, err, trim(want))
	}
}

func checkMiss(t *testing.T, s madspark.CacheStore, key string) {
	t.Helper()
	v, ok, err := s.GetCache(ctx(t), key)
	if err != nil || ok || v != nil {
		t.Errorf("GetCache %q = %q, %v, %v; want nil, false, nil", key, trim(v), ok, err)
	}
}

// trim shortens a value for a message.
func trim(b []byte) []byte {
	if len(b) > 64 {
		return append(b[:64:64], "..."...)
	}
	return b
}

// cacheKey returns a key of the shape the response cache uses: 64 hex
// digits.
func cacheKey(i int) string { return fmt.Sprintf("%064x", i) }

// testPruneCache checks that a store whose cache can be pruned by age
// (Prune, beside madspark.CacheStore) deletes the entries stored before the
// time given and counts them.
func testPruneCache(t *testing.T, s Store) {
	p, ok := s.(interface {
		Prune(ctx context.Context, olderThan time.Time) (int64, error)
	})
	if !ok {
		t.Skip("the store does not prune its cache")
	}
	mustPut(t, s, "a", []byte("a"))
	mustPut(t, s, "b", []byte("b"))
	if n, err := p.Prune(ctx(t), time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("Prune of entries older than an hour = %d, %v; want 0", n, err)
	}
	if n, err := p.Prune(ctx(t), time.Now().Add(time.Second)); err != nil || n != 2 {
		t.Fatalf("Prune of all = %d, %v; want 2", n, err)
	}
	checkMiss(t, s, "a")
}

func testCacheMiss(t *testing.T, s madspark.CacheStore) {
	checkMiss(t, s, cacheKey(1))
	checkMiss(t, s, "")
}

func testCacheRoundTrip(t *testing.T, s madspark.CacheStore) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	js := []byte(`{"text":"hello","provider":"mock","model":"m","finish_reason":"stop","created_at":"2025-01-01T00:00:00Z"}`)
	mustPut(t, s, cacheKey(1), all)
	mustPut(t, s, cacheKey(2), js)
	checkHit(t, s, cacheKey(1), all)
	checkHit(t, s, cacheKey(2), js)

	// The returned value is the caller's.
	v, _, _ := s.GetCache(ctx(t), cacheKey(2))
	for i := range v {
		v[i] = 'x'
	}
	checkHit(t, s, cacheKey(2), js)
	// So is the stored one.
	in := []byte("mutable")
	mustPut(t, s, cacheKey(3), in)
	copy(in, "changed")
	checkHit(t, s, cacheKey(3), []byte("mutable"))
}

func testCacheOverwrite(t *testing.T, s madspark.CacheStore) {
	mustPut(t, s, cacheKey(1), []byte("old value, longer than the new one"))
	mustPut(t, s, cacheKey(1), []byte("new"))
	checkHit(t, s, cacheKey(1), []byte("new"))
	mustPut(t, s, cacheKey(1), []byte{})
	checkHit(t, s, cacheKey(1), []byte{})
	mustPut(t, s, cacheKey(1), []byte("again"))
	checkHit(t, s, cacheKey(1), []byte("again"))
}

func testCacheEmptyValue(t *testing.T, s madspark.CacheStore) {
	mustPut(t, s, "nil", nil)
	mustPut(t, s, "empty", []byte{})
	checkHit(t, s, "nil", []byte{})
	checkHit(t, s, "empty", []byte{})
}

func testCacheKeys(t *testing.T, s madspark.CacheStore) {
	keys := []string{"k", "K", "k2", "k ", " k", "k*", "k?", "ünï:cødé", "a/b", "a:b", strings.Repeat("long", 100)}
	for i, k := range keys {
		mustPut(t, s, k, []byte(strconv.Itoa(i)))
	}
	for i, k := range keys {
		checkHit(t, s, k, []byte(strconv.Itoa(i)))
	}
	for _, k := range []string{"", "k3", "kk", "*", "k%", "a", "long"} {
		checkMiss(t, s, k)
	}
}

func testCacheLargeValue(t *testing.T, s madspark.CacheStore) {
	v := bytes.Repeat([]byte("0123456789abcdef\x00\xff"), 1<<16) // 1.1 MiB
	mustPut(t, s, cacheKey(1), v)
	checkHit(t, s, cacheKey(1), v)
}

func testCacheConcurrent(t *testing.T, s madspark.CacheStore) {
	c := ctx(t)
	const goroutines, perG = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for j := range perG {
				own := fmt.Sprintf("g%d-%d", g, j)
				if err := s.PutCache(c, own, []byte(own)); err != nil {
					errs <- err
					return
				}
				if err := s.PutCache(c, "shared", []byte(own)); err != nil {
					errs <- err
					return
				}
				if v, ok, err := s.GetCache(c, own); err != nil || !ok || string(v) != own {
					errs <- fmt.Errorf("GetCache %q = %q, %v, %v", own, v, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	v, ok, err := s.GetCache(c, "shared")
	if err != nil || !ok || !strings.HasPrefix(string(v), "g") {
		t.Errorf("GetCache shared = %q, %v, %v", v, ok, err)
	}
}
