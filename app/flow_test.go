package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/spark"
)

// openMock opens the app in mock mode on a new SQLite file; notices are
// written to the returned buffer.
func openMock(t *testing.T, vars map[string]string) (*App, *bytes.Buffer) {
	t.Helper()
	env := map[string]string{"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	for k, v := range vars {
		env[k] = v
	}
	var notices bytes.Buffer
	a, err := Open(context.Background(), Config{Getenv: func(k string) string { return env[k] }, Notices: &notices, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, &notices
}

// TestSparkThenResumeRefused: a spark run through the app is recorded and
// reported; resuming it is refused as input, naming why.
func TestSparkThenResumeRefused(t *testing.T) {
	a, notices := openMock(t, nil)
	ctx := context.Background()
	p := spark.DefaultParams()
	p.Topic, p.NumCandidates, p.NumTopCandidates = "community tool libraries", 3, 2
	rep, run, err := a.Spark(ctx, p, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunID != run.ID() || len(rep.Candidates) != 2 || rep.Mode != "mock" {
		t.Fatalf("report %s, %d candidates, mode %s", rep.RunID, len(rep.Candidates), rep.Mode)
	}
	if !strings.Contains(notices.String(), "mock mode") {
		t.Errorf("no mock notice: %q", notices)
	}
	rec, err := a.Store.Run(ctx, run.ID())
	if err != nil || rec.Status != madspark.RunSucceeded || rec.Usage.LLMCalls == 0 {
		t.Fatalf("recorded %+v, %v", rec, err)
	}
	_, err = a.Resume(ctx, run.ID(), "", "", time.Minute)
	if _, ok := errors.AsType[InputError](err); !ok || !strings.Contains(err.Error(), "already succeeded") {
		t.Fatalf("resume of a succeeded run: %v", err)
	}
	if _, err := a.Resume(ctx, "no-such-run", "", "", time.Minute); err == nil || err.Error() != "no run no-such-run" {
		t.Fatalf("resume of a missing run: %v", err)
	}
}

// TestChaosWritesItsFiles: a chaos run writes each iteration's files, the
// idea memory, the summary and the result into its directory, by default
// one of its own in the outputs directory, and the result names the
// directory.
func TestChaosWritesItsFiles(t *testing.T) {
	a, _ := openMock(t, nil)
	p := chaos.DefaultParams()
	p.Prompt, p.Seed = "a board game about rivers", 7
	outputs := filepath.Join(t.TempDir(), "outs")
	dir, err := MakeOutputDir(func(k string) string { return map[string]string{"MADSPARK_OUTPUT_DIR": outputs}[k] }, "")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != outputs || !strings.HasPrefix(filepath.Base(dir), "run_") {
		t.Fatalf("the default directory is %s, want run_… in %s", dir, outputs)
	}
	out, err := a.Chaos(context.Background(), p, dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"final_output.txt", "result.json", "ideas.json"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !bytes.Contains(out.Result, []byte(`"output_dir": "`+dir+`"`)) || !strings.Contains(out.Summary, "run ") {
		t.Errorf("result %s…, summary %q…", out.Result[:min(200, len(out.Result))], out.Summary[:min(200, len(out.Summary))])
	}
}

// TestBatchRunsTheGoodRows: a batch worked in this process runs its good
// rows and records the bad one with its line; the results say so, and the
// batch can be read back by its ID.
func TestBatchRunsTheGoodRows(t *testing.T) {
	a, _ := openMock(t, nil)
	ctx := context.Background()
	reg, err := a.Registry("")
	if err != nil {
		t.Fatal(err)
	}
	in, err := batch.Parse(reg, "spark", "topics.csv", []byte("topic,num_candidates\nsolar kiosks,2\n,2\nbike repair cafés,x\nrain gardens,2\n"), batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	updates := 0
	b, err := a.RunBatch(ctx, reg, "spark", "topics.csv", in, BatchOptions{Concurrency: 2, Timeout: time.Minute, Quiet: true,
		OnUpdate: func(*madspark.Batch) { updates++ }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Results(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 4 || res.Succeeded != 2 || len(res.FailedLines()) != 2 || updates == 0 {
		t.Fatalf("total %d, succeeded %d, failed lines %v, %d updates", res.Total, res.Succeeded, res.FailedLines(), updates)
	}
	again, err := a.OpenBatch(ctx, b.ID)
	if err != nil || len(again.Items) != 4 {
		t.Fatalf("read back: %v", err)
	}
	if _, err := a.OpenBatch(ctx, "no-such-batch"); !errors.As(err, new(InputError)) {
		t.Fatalf("missing batch: %v", err)
	}
}

// TestOpenRefusesBadSettings: settings that cannot work are input errors,
// before anything is opened.
func TestOpenRefusesBadSettings(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"concurrency": {"MADSPARK_PROVIDER_CONCURRENCY": "0"},
		"provider":    {"MADSPARK_PROVIDER": "nonesuch"},
		"prices":      {"MADSPARK_PRICES": filepath.Join(t.TempDir(), "missing.json")},
	} {
		env := map[string]string{"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
		for k, v := range vars {
			env[k] = v
		}
		_, err := Open(context.Background(), Config{Getenv: func(k string) string { return env[k] }})
		if _, ok := errors.AsType[InputError](err); !ok {
			t.Errorf("%s: %v, want an InputError", name, err)
		}
	}
}

// TestSessionKeepsTheConversation: each answered query becomes history for
// the next; /reset forgets it, empty lines are skipped, /exit ends the
// session, and a query that fails is told without ending it.
func TestSessionKeepsTheConversation(t *testing.T) {
	a, _ := openMock(t, nil)
	d, err := a.Debater()
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	var history []int
	var failures []error
	s := &Session{
		In:           strings.NewReader("first question\n\nsecond question\n/reset\nthird question\n/exit\nnever asked\n"),
		Conversation: &Conversation{},
		Ask: func(ctx context.Context, p debate.Params) (*Answer, error) {
			asked = append(asked, p.Query)
			history = append(history, len(p.History))
			if p.Query == "second question" {
				return nil, errors.New("provider down")
			}
			return d.Ask(ctx, p, nil, time.Minute)
		},
		Failed: func(err error) { failures = append(failures, err) },
	}
	if err := s.Run(context.Background(), debate.Settings{Mode: "simple", Rounds: 1}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(asked, "|") != "first question|second question|third question" || len(failures) != 1 {
		t.Fatalf("asked %q, failures %v", asked, failures)
	}
	// The second query carries the first exchange; after /reset the
	// third carries nothing.
	if history[0] != 0 || history[1] != 2 || history[2] != 0 {
		t.Fatalf("history lengths %v", history)
	}
}
