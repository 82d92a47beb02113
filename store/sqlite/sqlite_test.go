package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/store/migration"
	"github.com/madspark/madspark/store/storetest"
)

func openTest(t *testing.T, path string) *DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "madspark.db")
	}
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

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

func mustCreate(t *testing.T, db *DB, r *madspark.Run) {
	t.Helper()
	if err := db.CreateRun(context.Background(), r); err != nil {
		t.Fatalf("CreateRun %s: %v", r.ID, err)
	}
}

func jsonEqual(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v (%s)", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func timeEqual(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
	if !got.IsZero() && got.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, got.Location())
	}
}

func TestRunRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")

	loc := time.FixedZone("X", 5*3600+1800)
	created := time.Date(2025, 3, 4, 5, 6, 7, 123456789, loc)
	r := newRun("run-1", "spark", created)
	r.Params = json.RawMessage(`{"topic":"urban gardens","n":3,"nested":{"a":[1,2]}}`)
	mustCreate(t, db, r)

	got, err := db.Run(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != madspark.RunRunning || got.Pipeline != "spark" || got.Mode != "mock" ||
		got.Provider != "mock" || got.Model != "mock-1" {
		t.Errorf("got %+v", got)
	}
	jsonEqual(t, "params", got.Params, r.Params)
	if got.Result != nil || got.Error != "" || !got.FinishedAt.IsZero() {
		t.Errorf("unfinished run has result %q, error %q, finished %v", got.Result, got.Error, got.FinishedAt)
	}
	timeEqual(t, "created", got.CreatedAt, created)

	finished := created.Add(90 * time.Second)
	r.Status = madspark.RunSucceeded
	r.Result = json.RawMessage(`{"ideas":[{"title":"a","score":8.5}]}`)
	r.Usage = llm.Usage{LLMCalls: 3, CachedCalls: 1, InputTokens: 1200, OutputTokens: 345, CostUSD: 0.01234}
	r.FinishedAt = finished
	if err := db.FinishRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err = db.Run(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != madspark.RunSucceeded {
		t.Errorf("status = %q", got.Status)
	}
	jsonEqual(t, "params", got.Params, r.Params)
	jsonEqual(t, "result", got.Result, r.Result)
	if got.Usage != r.Usage {
		t.Errorf("usage = %+v, want %+v", got.Usage, r.Usage)
	}
	timeEqual(t, "created", got.CreatedAt, created)
	timeEqual(t, "finished", got.FinishedAt, finished)

	// A failed run.
	f := newRun("run-2", "spark", created)
	f.Params = nil
	mustCreate(t, db, f)
	f.Status = madspark.RunFailed
	f.Error = "provider: rate limited"
	f.FinishedAt = time.Time{}
	if err := db.FinishRun(ctx, f); err != nil {
		t.Fatal(err)
	}
	if f.FinishedAt.IsZero() {
		t.Error("FinishRun did not set FinishedAt")
	}
	got, err = db.Run(ctx, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != madspark.RunFailed || got.Error != f.Error || got.Params != nil || got.Result != nil {
		t.Errorf("got %+v", got)
	}
	timeEqual(t, "finished", got.FinishedAt, f.FinishedAt)

	// Defaults filled in by CreateRun.
	d := &madspark.Run{ID: "run-3", Pipeline: "spark"}
	mustCreate(t, db, d)
	if d.CreatedAt.IsZero() || d.Status != madspark.RunRunning {
		t.Errorf("defaults not set: %+v", d)
	}

	// Duplicate IDs and invalid input are rejected.
	if err := db.CreateRun(ctx, newRun("run-1", "spark", created)); err == nil {
		t.Error("CreateRun with a duplicate ID succeeded")
	}
	if err := db.CreateRun(ctx, &madspark.Run{Pipeline: "spark"}); err == nil {
		t.Error("CreateRun without ID succeeded")
	}
	bad := newRun("run-4", "spark", created)
	bad.Params = json.RawMessage(`{not json`)
	if err := db.CreateRun(ctx, bad); err == nil {
		t.Error("CreateRun with invalid params succeeded")
	}
	if _, err := db.Run(ctx, "run-4"); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("rejected run was stored: %v", err)
	}
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")

	_, err := db.Run(ctx, "nope")
	if !errors.Is(err, madspark.ErrNotFound) {
		t.Fatalf("Run: err = %v, want ErrNotFound", err)
	}
	if want := `run "nope": not found`; err.Error() != want {
		t.Errorf("Run: err = %q, want %q", err, want)
	}
	err = db.FinishRun(ctx, &madspark.Run{ID: "nope", Status: madspark.RunFailed})
	if !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("FinishRun: err = %v, want ErrNotFound", err)
	}
	err = db.SaveStep(ctx, &madspark.Step{RunID: "nope", Key: "k", Status: madspark.StepDone})
	if !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("SaveStep: err = %v, want ErrNotFound", err)
	}
	steps, err := db.Steps(ctx, "nope")
	if err != nil || steps == nil || len(steps) != 0 {
		t.Errorf("Steps = %v, %v; want empty", steps, err)
	}
}

func ids(runs []*madspark.Run) []string {
	var s []string
	for _, r := range runs {
		s = append(s, r.ID)
	}
	return s
}

func equalIDs(t *testing.T, what string, got []*madspark.Run, want ...string) {
	t.Helper()
	g := ids(got)
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, g, want)
	}
}

func TestRunsListing(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")

	base := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	// r0 is oldest. Times include whole seconds and fractions, which would
	// sort wrongly as variable-width RFC 3339 text.
	offsets := []time.Duration{0, time.Second, time.Second + 100*time.Millisecond, 2 * time.Second, 2*time.Second + time.Nanosecond, time.Hour}
	pipelines := []string{"spark", "eval", "spark", "eval", "spark", "spark"}
	// Create out of order.
	for _, i := range []int{3, 0, 5, 1, 4, 2} {
		mustCreate(t, db, newRun("r"+strconv.Itoa(i), pipelines[i], base.Add(offsets[i])))
	}
	for _, i := range []int{1, 4} {
		r, err := db.Run(ctx, "r"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		r.Status = madspark.RunSucceeded
		if err := db.FinishRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	all, err := db.Runs(ctx, madspark.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	equalIDs(t, "all", all, "r5", "r4", "r3", "r2", "r1", "r0")

	got, _ := db.Runs(ctx, madspark.RunFilter{Pipeline: "spark"})
	equalIDs(t, "spark", got, "r5", "r4", "r2", "r0")
	got, _ = db.Runs(ctx, madspark.RunFilter{Status: madspark.RunSucceeded})
	equalIDs(t, "succeeded", got, "r4", "r1")
	got, _ = db.Runs(ctx, madspark.RunFilter{Pipeline: "spark", Status: madspark.RunRunning})
	equalIDs(t, "spark running", got, "r5", "r2", "r0")
	got, _ = db.Runs(ctx, madspark.RunFilter{Limit: 2})
	equalIDs(t, "limit 2", got, "r5", "r4")
	got, _ = db.Runs(ctx, madspark.RunFilter{Limit: 2, Offset: 2})
	equalIDs(t, "limit 2 offset 2", got, "r3", "r2")
	got, _ = db.Runs(ctx, madspark.RunFilter{Offset: 5})
	equalIDs(t, "offset 5", got, "r0")
	got, err = db.Runs(ctx, madspark.RunFilter{Pipeline: "none"})
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("no match = %v, %v; want empty", got, err)
	}

	// Default limit 50, cap 1000.
	for i := range 60 {
		mustCreate(t, db, newRun(fmt.Sprintf("bulk-%02d", i), "bulk", base.Add(-time.Duration(i+1)*time.Minute)))
	}
	got, _ = db.Runs(ctx, madspark.RunFilter{Pipeline: "bulk"})
	if len(got) != 50 || got[0].ID != "bulk-00" || got[49].ID != "bulk-49" {
		t.Errorf("default limit: %d runs, first %s", len(got), got[0].ID)
	}
	got, _ = db.Runs(ctx, madspark.RunFilter{Limit: 1_000_000})
	if len(got) != 66 {
		t.Errorf("large limit: %d runs, want 66", len(got))
	}
}

func TestSaveStepUpsert(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	t0 := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	mustCreate(t, db, newRun("a", "spark", t0))
	mustCreate(t, db, newRun("b", "spark", t0))

	keys := []string{"generate", "evaluate", "improve", "reevaluate"}
	for i, k := range keys {
		s := &madspark.Step{
			RunID: "a", Key: k, InputHash: "h" + k, Status: madspark.StepDone,
			Output:     json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)),
			Usage:      llm.Usage{LLMCalls: 1, InputTokens: i},
			StartedAt:  t0.Add(time.Duration(i) * time.Second),
			FinishedAt: t0.Add(time.Duration(i)*time.Second + 500*time.Millisecond),
		}
		if err := db.SaveStep(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Steps of another run, with the same keys, in another order.
	for _, k := range []string{"improve", "generate"} {
		if err := db.SaveStep(ctx, &madspark.Step{RunID: "b", Key: k, Status: madspark.StepFailed, Error: "b " + k}); err != nil {
			t.Fatal(err)
		}
	}
	// Replace the second step.
	repl := &madspark.Step{
		RunID: "a", Key: "evaluate", InputHash: "h2", Status: madspark.StepFailed,
		Output: json.RawMessage(`{"replaced":true}`), Error: "boom",
		Usage:     llm.Usage{LLMCalls: 2, CostUSD: 0.5},
		StartedAt: t0.Add(time.Minute), FinishedAt: t0.Add(2 * time.Minute),
	}
	if err := db.SaveStep(ctx, repl); err != nil {
		t.Fatal(err)
	}

	steps, err := db.Steps(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != len(keys) {
		t.Fatalf("got %d steps, want %d", len(steps), len(keys))
	}
	for i, s := range steps {
		if s.Key != keys[i] || s.RunID != "a" {
			t.Errorf("step %d = %s/%s, want a/%s", i, s.RunID, s.Key, keys[i])
		}
	}
	s := steps[1]
	if s.InputHash != "h2" || s.Status != madspark.StepFailed || s.Error != "boom" || s.Usage != repl.Usage {
		t.Errorf("replaced step = %+v", s)
	}
	jsonEqual(t, "output", s.Output, repl.Output)
	timeEqual(t, "started", s.StartedAt, repl.StartedAt)
	timeEqual(t, "finished", s.FinishedAt, repl.FinishedAt)
	jsonEqual(t, "output 0", steps[0].Output, json.RawMessage(`{"n":0}`))
	timeEqual(t, "started 3", steps[3].StartedAt, t0.Add(3*time.Second))

	bs, err := db.Steps(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].Key != "improve" || bs[1].Key != "generate" || bs[0].Error != "b improve" ||
		bs[0].Output != nil || !bs[0].StartedAt.IsZero() {
		t.Errorf("steps of b = %+v %+v", bs[0], bs[1])
	}
}

func TestCache(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")

	if v, ok, err := db.GetCache(ctx, "k"); err != nil || ok || v != nil {
		t.Fatalf("miss = %q, %v, %v", v, ok, err)
	}
	val := []byte{0, 1, 2, 0xff, 'x'}
	if err := db.PutCache(ctx, "k", val); err != nil {
		t.Fatal(err)
	}
	v, ok, err := db.GetCache(ctx, "k")
	if err != nil || !ok || !bytes.Equal(v, val) {
		t.Fatalf("hit = %q, %v, %v", v, ok, err)
	}
	if err := db.PutCache(ctx, "k", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := db.GetCache(ctx, "k"); err != nil || !ok || string(v) != "new" {
		t.Fatalf("overwritten = %q, %v, %v", v, ok, err)
	}
	if err := db.PutCache(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := db.GetCache(ctx, "empty"); err != nil || !ok || v == nil || len(v) != 0 {
		t.Fatalf("empty = %q, %v, %v", v, ok, err)
	}
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "madspark.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	r := newRun("keep", "spark", created)
	mustCreate(t, db, r)
	if err := db.SaveStep(ctx, &madspark.Step{RunID: "keep", Key: "s1", Status: madspark.StepDone, Output: json.RawMessage(`[1]`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutCache(ctx, "c", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if runtime.GOOS != "windows" {
		for _, p := range []string{path, filepath.Dir(path)} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			want := os.FileMode(0o600)
			if fi.IsDir() {
				want = 0o700
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%s mode = %v, want %v", p, got, want)
			}
		}
	}

	for i := range 2 { // reopen twice: migrations must be idempotent
		db := openTest(t, path)
		got, err := db.Run(ctx, "keep")
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		timeEqual(t, "created", got.CreatedAt, created)
		steps, err := db.Steps(ctx, "keep")
		if err != nil || len(steps) != 1 || string(steps[0].Output) != "[1]" {
			t.Errorf("reopen %d: steps = %v, %v", i, steps, err)
		}
		if v, ok, err := db.GetCache(ctx, "c"); err != nil || !ok || string(v) != "v" {
			t.Errorf("reopen %d: cache = %q, %v, %v", i, v, ok, err)
		}
		ms, _ := migration.Load(migrationFS, "migrations/*.sql")
		var n, maxV int
		if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &maxV); err != nil {
			t.Fatal(err)
		}
		if n != len(ms) || maxV != ms[len(ms)-1].Version {
			t.Errorf("schema_migrations has %d rows up to %d, want %d", n, maxV, len(ms))
		}
		var mode string
		if err := db.w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q, %v", mode, err)
		}
		var fk int
		if err := db.r.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
			t.Errorf("foreign_keys = %d, %v", fk, err)
		}
	}
}

// writeSteps creates a run and saves n steps into it, checking no error.
func writeSteps(ctx context.Context, db *DB, runID string, n int) error {
	if err := db.CreateRun(ctx, newRun(runID, "concurrent", time.Now())); err != nil {
		return err
	}
	for j := range n {
		s := &madspark.Step{
			RunID: runID, Key: fmt.Sprintf("step-%03d", j), Status: madspark.StepDone,
			Output: json.RawMessage(strconv.Itoa(j)), StartedAt: time.Now(), FinishedAt: time.Now(),
		}
		if err := db.SaveStep(ctx, s); err != nil {
			return err
		}
		if err := db.PutCache(ctx, runID+s.Key, []byte(s.Key)); err != nil {
			return err
		}
		if _, _, err := db.GetCache(ctx, runID+s.Key); err != nil {
			return err
		}
		if _, err := db.Steps(ctx, runID); err != nil {
			return err
		}
	}
	r, err := db.Run(ctx, runID)
	if err != nil {
		return err
	}
	r.Status = madspark.RunSucceeded
	return db.FinishRun(ctx, r)
}

// checkSteps checks that run runID has n steps in order.
func checkSteps(t *testing.T, db *DB, runID string, n int) {
	t.Helper()
	steps, err := db.Steps(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != n {
		t.Fatalf("run %s has %d steps, want %d", runID, len(steps), n)
	}
	for j, s := range steps {
		if s.RunID != runID || s.Key != fmt.Sprintf("step-%03d", j) {
			t.Errorf("run %s step %d = %s/%s", runID, j, s.RunID, s.Key)
		}
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	const goroutines, steps = 8, 20

	var wg sync.WaitGroup
	errs := make(chan error, goroutines+1)
	for i := range goroutines {
		wg.Go(func() {
			if err := writeSteps(ctx, db, fmt.Sprintf("run-%d", i), steps); err != nil {
				errs <- fmt.Errorf("writer %d: %w", i, err)
			}
		})
	}
	wg.Go(func() { // a reader listing meanwhile
		for range 50 {
			if _, err := db.Runs(ctx, madspark.RunFilter{Limit: 1000}); err != nil {
				errs <- fmt.Errorf("reader: %w", err)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range goroutines {
		checkSteps(t, db, fmt.Sprintf("run-%d", i), steps)
	}
}

func TestTwoHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	// Open both at once on a new file: migrations race.
	dbs := storetest.OpenAtOnce(t, 2, func() (*DB, error) { return Open(ctx, path) })
	var wg sync.WaitGroup

	const perHandle, steps = 4, 20
	errs := make(chan error, 2*perHandle)
	for h, db := range dbs {
		for i := range perHandle {
			wg.Go(func() {
				if err := writeSteps(ctx, db, fmt.Sprintf("h%d-run-%d", h, i), steps); err != nil {
					errs <- fmt.Errorf("handle %d writer %d: %w", h, i, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Each handle sees the other's writes.
	for _, db := range dbs {
		runs, err := db.Runs(ctx, madspark.RunFilter{Status: madspark.RunSucceeded})
		if err != nil || len(runs) != 2*perHandle {
			t.Fatalf("Runs = %d, %v; want %d", len(runs), err, 2*perHandle)
		}
		for h := range dbs {
			for i := range perHandle {
				checkSteps(t, db, fmt.Sprintf("h%d-run-%d", h, i), steps)
			}
		}
	}
}

// helperEnv makes the test binary act as a second process writing to the
// database file it names.
const helperEnv = "MADSPARK_SQLITE_TEST_HELPER_DB"

func TestTwoProcesses(t *testing.T) {
	if path := os.Getenv(helperEnv); path != "" {
		ctx := context.Background()
		db, err := Open(ctx, path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		var wg sync.WaitGroup
		failed := make(chan error, 4)
		for i := range 4 {
			wg.Go(func() {
				if err := writeSteps(ctx, db, fmt.Sprintf("child-%d", i), 20); err != nil {
					failed <- err
				}
			})
		}
		wg.Wait()
		close(failed)
		code := 0
		for err := range failed {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		if err := db.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		os.Exit(code)
	}
	if testing.Short() {
		t.Skip("starts a second process")
	}

	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "procs.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	db := openTest(t, path)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			if err := writeSteps(ctx, db, fmt.Sprintf("parent-%d", i), 20); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.Bytes())
	}
	for _, who := range []string{"parent", "child"} {
		for i := range 4 {
			checkSteps(t, db, fmt.Sprintf("%s-%d", who, i), 20)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, p := range []string{"", ":memory:", "file:x.db"} {
		if db, err := Open(ctx, p); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	// A path with characters special in URIs.
	p := filepath.Join(t.TempDir(), "we?ird #%20name.db")
	db := openTest(t, p)
	mustCreate(t, db, newRun("x", "spark", time.Now()))
	if _, err := os.Stat(p); err != nil {
		t.Errorf("database not at %s: %v", p, err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("MADSPARK_DB", "/ignored.db")
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	p, err := DefaultPath()
	if err != nil || p != filepath.Join(xdg, "madspark", "madspark.db") {
		t.Errorf("with XDG_DATA_HOME: %q, %v", p, err)
	}
	t.Setenv("XDG_DATA_HOME", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	p, err = DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, ".local", "share", "madspark", "madspark.db")
	switch runtime.GOOS {
	case "darwin", "ios":
		want = filepath.Join(home, "Library", "Application Support", "madspark", "madspark.db")
	case "windows":
		t.Skip("home directory is not $HOME")
	}
	if p != want {
		t.Errorf("DefaultPath = %q, want %q", p, want)
	}
}
