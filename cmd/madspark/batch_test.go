package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// results is the shape of a batch's results.json.
type results struct {
	BatchID   string `json:"batch_id"`
	Pipeline  string `json:"pipeline"`
	Mode      string `json:"mode"`
	Notice    string `json:"notice"`
	Total     int    `json:"total"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Pending   int    `json:"pending"`
	Items     []struct {
		Line   int             `json:"line"`
		Topic  string          `json:"topic"`
		Tags   []string        `json:"tags"`
		RunID  string          `json:"run_id"`
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Result json.RawMessage `json:"result"`
	} `json:"items"`
}

func readResults(t *testing.T, path string) results {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r results
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("results are not JSON: %v\n%s", err, data)
	}
	return r
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBatchMalformedRow(t *testing.T) {
	env := mockEnv(t)
	csv := writeTemp(t, "ideas.csv", `topic,context,temperature_preset,num_candidates,tags,owner
sustainable urban farming,low-cost,creative,3,"food, cities",ana
AI in education,accessible to all,balanced,many,edu,bo
ocean cleanup,,wild,2,,cy
sustainable urban farming,low-cost,creative,3,again,dee
"a ""quoted"" topic",x,spicy,3,,ed
remote work
`)
	dir := t.TempDir()
	out, exports := filepath.Join(dir, "results.json"), filepath.Join(dir, "exports")
	// A column that is no parameter refuses the file, before anything
	// runs, unless it is ignored.
	refused := invoke(t, env, "batch", csv, "--output", out)
	if refused.code != exitUsage || !strings.Contains(refused.stderr, `unknown column "owner" (column 6)`) || !strings.Contains(refused.stderr, "--ignore-unknown-columns") {
		t.Fatalf("unknown column: exit %d: %s", refused.code, refused.stderr)
	}
	if runs := invoke(t, env, "runs", "list", "--output-format", "json"); strings.TrimSpace(runs.stdout) != "[]" {
		t.Fatalf("a refused file ran: %s", runs.stdout)
	}
	r := invoke(t, env, "batch", csv, "--ignore-unknown-columns", "--output", out, "--export-dir", exports, "--concurrency", "2")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (some items failed); stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`ignoring unknown columns "owner"`,
		`line 3: num_candidates: want an integer, got "many"`,
		`line 6: temperature_preset: unknown temperature preset "spicy"`,
		"2 of 6 items failed (lines 3, 6)",
		"mock mode",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	res := readResults(t, out)
	if res.Total != 6 || res.Succeeded != 4 || res.Failed != 2 || res.Pending != 0 || len(res.Items) != 6 || res.Mode != "mock" || !strings.Contains(res.Notice, "MOCK DATA") {
		t.Fatalf("results: %+v", res)
	}
	runIDs := map[string]bool{}
	for i, it := range res.Items {
		if want := []int{2, 3, 4, 5, 6, 7}[i]; it.Line != want {
			t.Errorf("item %d has line %d, want %d", i, it.Line, want)
		}
		switch it.Line {
		case 3, 6:
			if it.Status != "rejected" || it.RunID != "" || it.Error == "" || it.Result != nil {
				t.Errorf("line %d: %+v", it.Line, it)
			}
		default:
			var sr struct {
				Topic      string `json:"topic"`
				Candidates []any  `json:"candidates"`
			}
			if it.Status != "succeeded" || it.RunID == "" || runIDs[it.RunID] || json.Unmarshal(it.Result, &sr) != nil || sr.Topic != it.Topic || len(sr.Candidates) == 0 {
				t.Errorf("line %d: %+v", it.Line, it)
			}
			runIDs[it.RunID] = true
		}
	}
	if tags := res.Items[0].Tags; len(tags) != 2 || tags[0] != "food" || tags[1] != "cities" {
		t.Errorf("tags = %q", tags)
	}
	// num_candidates 2 is fewer than the default three argued over.
	var ocean struct {
		Candidates []any `json:"candidates"`
	}
	json.Unmarshal(res.Items[2].Result, &ocean)
	if len(ocean.Candidates) != 2 {
		t.Errorf("ocean cleanup has %d candidates, want 2", len(ocean.Candidates))
	}
	// One export per succeeded item; the two rows with the same topic do
	// not overwrite each other.
	entries, err := os.ReadDir(exports)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("%d exports, want 4: %v", len(entries), entries)
	}
	farming := 0
	for _, e := range entries {
		if strings.Contains(e.Name(), "sustainable-urban-farming") {
			farming++
		}
		md, err := os.ReadFile(filepath.Join(exports, e.Name(), "report.md"))
		if err != nil || !strings.Contains(strings.ToLower(string(md)), "mock data") {
			t.Errorf("export %s: %v", e.Name(), err)
		}
	}
	if farming != 2 {
		t.Errorf("%d exports for the repeated topic, want 2", farming)
	}

	// The batch is on record: its status from another command, which
	// exits 1 for its failed items, in every output format.
	st := invoke(t, env, "batch", "status", res.BatchID)
	if st.code != 1 || strings.Count(st.stdout, "succeeded") != 4 || strings.Count(st.stdout, "rejected") != 2 || !strings.Contains(st.stderr, "2 of 6 items failed") {
		t.Fatalf("batch status: %+v", st)
	}
	if st := invoke(t, env, "batch", "status", res.BatchID, "--output-format", "json"); st.code != 1 {
		t.Fatalf("batch status --output-format json: exit %d %s", st.code, st.stderr)
	}
	again := filepath.Join(dir, "again.json")
	if st := invoke(t, env, "batch", "status", res.BatchID, "--output", again); st.code != 1 {
		t.Fatalf("batch status --output: exit %d %s", st.code, st.stderr)
	}
	if res2 := readResults(t, again); res2.Succeeded != 4 || len(res2.Items) != 6 {
		t.Fatalf("results from status: %+v", res2)
	}
}

func TestBatchJSON(t *testing.T) {
	env := mockEnv(t)
	// The seed's fields, with the legacy names, and a bad item.
	sparkJSON := writeTemp(t, "ideas.json", `[
  {"theme": "urban farming", "constraints": "cheap", "num_candidates": 2, "tags": ["a", "b"]},
  {"topic": "ocean cleanup",
   "num_candidates": "three"},
  {"topic": "remote work", "enhanced_reasoning": true, "num_candidates": 3}
]`)
	out := filepath.Join(t.TempDir(), "r.json")
	r := invoke(t, env, "batch", sparkJSON, "--output", out)
	if r.code != 1 || !strings.Contains(r.stderr, "item 2 (line 3): num_candidates: want an integer, got \"three\"") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	res := readResults(t, out)
	if res.Succeeded != 2 || res.Items[0].Topic != "urban farming" || res.Items[0].Line != 2 || res.Items[2].Line != 5 {
		t.Fatalf("results: %+v", res)
	}
	if !strings.Contains(string(res.Items[0].Result), `"context": "cheap"`) && !strings.Contains(string(res.Items[0].Result), `"context":"cheap"`) {
		t.Fatalf("legacy constraints not used as context: %s", res.Items[0].Result)
	}

	// Another registered pipeline, by its own parameters.
	chaosJSON := writeTemp(t, "chaos.json", `[{"prompt": "food waste", "seed": 1, "tags": "x"}, {"prompt": "noise", "colour": "red"}]`)
	out = filepath.Join(t.TempDir(), "c.json")
	r = invoke(t, env, "batch", chaosJSON, "--pipeline", "chaos", "--output", out)
	if r.code != 1 || !strings.Contains(r.stderr, "item 2 (line 1): chaos parameters: colour: unknown field") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	res = readResults(t, out)
	if res.Items[1].Status != "rejected" || !strings.HasPrefix(res.Items[1].Error, "item 2: ") {
		t.Errorf("the rejected JSON item's error does not name it: %+v", res.Items[1])
	}
	if res.Pipeline != "chaos" || res.Succeeded != 1 || res.Items[0].Topic != "food waste" || !bytes.Contains(res.Items[0].Result, []byte("iterations")) {
		t.Fatalf("chaos results: %+v", res)
	}
}

func TestBatchBadInput(t *testing.T) {
	env := mockEnv(t)
	noHeader := writeTemp(t, "a.csv", "urban farming,cheap\nocean,clean\n")
	empty := writeTemp(t, "b.csv", "")
	onlyHeader := writeTemp(t, "c.csv", "topic,context\n")
	dup := writeTemp(t, "d.csv", "topic,topic\nx,y\n")
	badJSON := writeTemp(t, "e.json", `[{"topic": "x"}, {"topic": }]`)
	object := writeTemp(t, "f.json", `{"topic": "x"}`)
	notJSON := writeTemp(t, "g.json", "topic\nx\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"batch", noHeader}, "the first line must be a header"},
		{[]string{"batch", empty}, "empty file"},
		{[]string{"batch", onlyHeader}, "no items"},
		{[]string{"batch", dup}, `column "topic" appears twice`},
		{[]string{"batch", badJSON}, "item 2 (line 1): invalid JSON"},
		{[]string{"batch", object}, `f.json: want a JSON array of items, [{"topic": …}, …], got one object`},
		{[]string{"batch", notJSON}, `g.json: want a JSON array of items, [{"topic": …}, …], got invalid JSON`},
		{[]string{"batch", filepath.Join(t.TempDir(), "missing.csv")}, "read batch file: no file "},
		{[]string{"batch", onlyHeader, "--pipeline", "nosuch"}, `unknown pipeline "nosuch"`},
		{[]string{"batch", noHeader, "--pipeline", "chaos"}, "CSV is spark's batch format"},
		{[]string{"batch", noHeader, "--no-worker", "--concurrency", "3"}, "does nothing with --no-worker"},
		{[]string{"batch", "status", "nope"}, "no batch nope"},
		{[]string{"batch"}, "batch needs FILE; usage: madspark batch FILE"},
	} {
		r := invoke(t, env, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestBatchWorkedElsewhere enqueues a batch without a worker, then starts
// one: the batch waits, and completes.
func TestBatchWorkedElsewhere(t *testing.T) {
	env := mockEnv(t)
	env["MADSPARK_MOCK_LATENCY"] = "20ms"
	csv := writeTemp(t, "ideas.csv", "topic,num_candidates\nalpha,2\nbeta,2\ngamma,2\n")
	out := filepath.Join(t.TempDir(), "results.json")
	done := make(chan result)
	go func() { done <- invoke(t, env, "batch", csv, "--no-worker", "--output", out) }()
	// Wait for the batch to be queued, then work it in another "process".
	var runIDs []string
	for deadline := time.Now().Add(10 * time.Second); len(runIDs) < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the batch was never queued")
		}
		list := invoke(t, env, "runs", "list", "--status", "queued", "--output-format", "json")
		runIDs = regexp.MustCompile(`"run_id": "([^"]+)"`).FindAllString(list.stdout, -1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wout, werr bytes.Buffer
	wdone := make(chan int)
	go func() {
		wdone <- run(ctx, []string{"worker", "--max-concurrent", "2"}, func(k string) string { return env[k] }, strings.NewReader(""), &wout, &werr)
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the batch did not finish")
	}
	cancel()
	if code := <-wdone; code != 0 || !strings.Contains(werr.String(), "worker stopped") {
		t.Fatalf("worker exit %d: %s", code, werr.String())
	}
	if r.code != 0 {
		t.Fatalf("batch exit %d: %s", r.code, r.stderr)
	}
	if res := readResults(t, out); res.Succeeded != 3 || res.Failed != 0 {
		t.Fatalf("results: %+v", res)
	}
}

func TestRunsCancelAndWatch(t *testing.T) {
	env := mockEnv(t)
	csv := writeTemp(t, "ideas.csv", "topic\nnever worked\n")
	done := make(chan result)
	go func() {
		done <- invoke(t, env, "batch", csv, "--no-worker", "--output", filepath.Join(t.TempDir(), "r.json"))
	}()
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the batch was never queued")
		}
		list := invoke(t, env, "runs", "list", "--status", "queued", "--output-format", "json")
		if m := regexp.MustCompile(`"run_id": "([^"]+)"`).FindStringSubmatch(list.stdout); m != nil {
			id = m[1]
		}
	}
	if r := invoke(t, env, "runs", "cancel", id); r.code != 0 || !strings.Contains(r.stderr, "cancelled") {
		t.Fatalf("cancel: %+v", r)
	}
	// The batch sees it and ends, cancelled (not failed), exit 1.
	select {
	case r := <-done:
		if r.code != 1 || !strings.Contains(r.stderr, "1 of 1 items cancelled") {
			t.Fatalf("batch after cancel: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the batch did not end after its only run was cancelled")
	}
	if r := invoke(t, env, "runs", "cancel", id); r.code != 2 || r.stderr != "madspark: run "+id+" has finished already (cancelled)\n" {
		t.Fatalf("cancel twice: %+v", r)
	}
	// So does a finished run that the queue never held.
	local := decode(t, invoke(t, env, "urban farming", "--output-format", "json"))
	if r := invoke(t, env, "runs", "cancel", local.RunID); r.code != 2 || !strings.Contains(r.stderr, "has finished already (succeeded)") {
		t.Fatalf("cancel a local run: %+v", r)
	}
	w := invoke(t, env, "runs", "watch", id)
	lines := strings.Split(strings.TrimSpace(w.stdout), "\n")
	var first, last struct {
		Seq      int    `json:"seq"`
		Type     string `json:"type"`
		Stage    string `json:"stage"`
		Progress int    `json:"progress"`
	}
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if w.code != 0 || len(lines) != 2 || first.Stage != "queued" || first.Seq != 1 || last.Type != "error" || last.Progress != 100 {
		t.Fatalf("watch: %+v", w)
	}
	if r := invoke(t, env, "runs", "watch", "nope"); r.code != 2 {
		t.Fatalf("watch missing: %+v", r)
	}
}

// TestServeWorksQueuedRuns: the server works the queue unless --no-worker,
// and drains its worker when it stops.
func TestServeWorksQueuedRuns(t *testing.T) {
	env := mockEnv(t)
	csv := writeTemp(t, "ideas.csv", "topic,num_candidates\nserved one,2\nserved two,2\n")
	out := filepath.Join(t.TempDir(), "results.json")
	done := make(chan result, 1)
	go func() { done <- invoke(t, env, "batch", csv, "--no-worker", "--output", out) }()

	serve := func(ctx context.Context, args ...string) (chan int, *syncBuffer) {
		var errb syncBuffer
		ch := make(chan int, 1)
		go func() {
			ch <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
		}()
		return ch, &errb
	}
	// Without a worker, nothing is worked.
	ctx, cancel := context.WithCancel(context.Background())
	exit, errb := serve(ctx, "--no-worker")
	// Give it time to take work, had it a worker, once it is serving.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(errb.String(), "serving http://") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	if code := <-exit; code != 0 || strings.Contains(errb.String(), "worker") {
		t.Fatalf("serve --no-worker: exit %d: %s", code, errb.String())
	}
	select {
	case r := <-done:
		t.Fatalf("the batch finished without a worker: %+v", r)
	default:
	}
	// With one, the batch completes.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	exit, errb = serve(ctx, "--max-concurrent", "2")
	select {
	case r := <-done:
		if r.code != 0 {
			t.Fatalf("batch exit %d: %s", r.code, r.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not work the batch: %s", errb.String())
	}
	cancel()
	if code := <-exit; code != 0 || !strings.Contains(errb.String(), "worker") {
		t.Fatalf("serve: exit %d: %s", code, errb.String())
	}
	if res := readResults(t, out); res.Succeeded != 2 {
		t.Fatalf("results: %+v", res)
	}
}
