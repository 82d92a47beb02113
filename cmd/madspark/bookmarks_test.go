package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/document/pdf/pdftest"
)

type bookmarkList struct {
	Bookmarks []struct {
		ID           string   `json:"id"`
		RunID        string   `json:"run_id"`
		IdeaText     string   `json:"idea_text"`
		ImprovedIdea string   `json:"improved_idea"`
		Topic        string   `json:"topic"`
		Tags         []string `json:"tags"`
	} `json:"bookmarks"`
	Total int `json:"total"`
}

func listBookmarks(t *testing.T, env map[string]string, args ...string) bookmarkList {
	t.Helper()
	r := invoke(t, env, append([]string{"bookmarks", "list", "--output-format", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("bookmarks list: exit %d %s", r.code, r.stderr)
	}
	var l bookmarkList
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("bookmarks list JSON: %v\n%s", err, r.stdout)
	}
	return l
}

// TestBookmarkTagsAndBookmarksCommands: --bookmark-tags keeps a run's
// candidates, refusing near-duplicates; the bookmarks commands list,
// search, show, export, import and remove them.
func TestBookmarkTagsAndBookmarksCommands(t *testing.T) {
	env := mockEnv(t)
	// None yet: say how to keep some, rather than print an empty table.
	if r := invoke(t, env, "bookmarks", "list"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "no bookmarks yet; keep a run's ideas with madspark spark TOPIC --bookmark-tags TAG") {
		t.Fatalf("empty list: %+v", r)
	}
	r := invoke(t, env, "spark", "urban farming", "cheap", "--bookmark-tags", "food,city", "--output-format", "json")
	if r.code != 0 || strings.Count(r.stderr, "bookmarked as") != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	l := listBookmarks(t, env)
	if l.Total != 3 || l.Bookmarks[0].RunID != rep.RunID || !slices.Equal(l.Bookmarks[0].Tags, []string{"food", "city"}) || l.Bookmarks[0].Topic != "urban farming" {
		t.Fatalf("bookmarks: %+v", l)
	}
	// The same run again: every candidate is a near-duplicate, reported
	// and not kept; the run itself succeeds.
	r = invoke(t, env, "spark", "urban farming", "cheap", "--bookmark-tags", "again", "--no-cache", "-o", filepath.Join(t.TempDir(), "x.txt"))
	if r.code != 0 || strings.Count(r.stderr, "not bookmarked: a near-identical bookmark is kept already") != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if l := listBookmarks(t, env); l.Total != 3 {
		t.Errorf("duplicates were kept: %d", l.Total)
	}
	if l := listBookmarks(t, env, "--tag", "food", "--tag", "city", "--limit", "2"); len(l.Bookmarks) != 2 || l.Total != 3 {
		t.Errorf("tags and limit: %+v", l)
	}
	if r := invoke(t, env, "bookmarks", "search", "no such words"); r.code != 0 || r.stdout != "" || r.stderr != "madspark: no bookmarks match\n" {
		t.Errorf("search without a match: %+v", r)
	}
	r = invoke(t, env, "bookmarks", "search", "MARKETPLACE", "--output-format", "json")
	var found bookmarkList
	if err := json.Unmarshal([]byte(r.stdout), &found); err != nil || r.code != 0 {
		t.Fatalf("search: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, b := range found.Bookmarks {
		if !strings.Contains(strings.ToLower(b.IdeaText+b.ImprovedIdea), "marketplace") {
			t.Errorf("search found %q", b.IdeaText)
		}
	}
	id := l.Bookmarks[2].ID
	if r := invoke(t, env, "bookmarks", "show", id); r.code != 0 || !strings.Contains(r.stdout, l.Bookmarks[2].IdeaText) || !strings.Contains(r.stdout, "Tags: food, city") {
		t.Errorf("show: %d %s", r.code, r.stdout)
	}
	if r := invoke(t, env, "bookmarks", "show", id, "--output-format", "json"); r.code != 0 || !strings.Contains(r.stdout, `"id": "`+id+`"`) {
		t.Errorf("show json: %d %s", r.code, r.stdout)
	}
	// A table for people.
	if r := invoke(t, env, "bookmarks", "list"); r.code != 0 || !strings.HasPrefix(r.stdout, "ID ") || strings.Count(r.stdout, "\n") != 4 {
		t.Errorf("table: %s", r.stdout)
	}

	// Export, to a file and to standard output, and import into another
	// database.
	out := filepath.Join(t.TempDir(), "bookmarks.json")
	if r := invoke(t, env, "bookmarks", "export", "--output", out); r.code != 0 {
		t.Fatalf("export: %s", r.stderr)
	}
	data, _ := os.ReadFile(out)
	if stdout := invoke(t, env, "bookmarks", "export").stdout; stdout != string(data) {
		t.Errorf("export to stdout differs from the file")
	}
	var file map[string]map[string]any
	if err := json.Unmarshal(data, &file); err != nil || len(file) != 3 || file[id]["timestamp"] == "" {
		t.Fatalf("export file: %v %s", err, data)
	}
	other := mockEnv(t)
	if r := invoke(t, other, "bookmarks", "import", out, "--output-format", "json"); r.code != 0 || !strings.Contains(r.stdout, `"imported": 3`) {
		t.Fatalf("import: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := invoke(t, other, "bookmarks", "import", out); r.code != 0 || !strings.Contains(r.stderr, "imported 0 bookmark(s), skipped 3") {
		t.Errorf("import again: %d %s", r.code, r.stderr)
	}
	bad := writeTemp(t, "bad.json", `{"x": {"idea_text": "a", "score": 12}, "y": {"idea_text": "b"}}`)
	if r := invoke(t, other, "bookmarks", "import", bad); r.code != 2 || !strings.Contains(r.stderr, "x.score: score must be within 0..10") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("bad import: %d %q", r.code, r.stderr)
	}
	if l := listBookmarks(t, other); l.Total != 3 {
		t.Errorf("a bad import kept bookmarks: %d", l.Total)
	}
	// A file that is not a bookmarks file is named in the file's terms,
	// never in Go's.
	for content, want := range map[string]string{
		`{"x": {"idea_text": 5}}`:                   "x.idea_text: want a string, got number",
		`{"x": {"idea_text": "a", "tags": "food"}}`: "x.tags: want an array, got string",
		`[{"idea_text": "a"}]`:                      "want a JSON object of bookmarks by ID, got array",
		`{"x": {"idea_text": "a"}`:                  "want a JSON object of bookmarks by ID: not valid JSON: it ends too early",
		``:                                          "want a JSON object of bookmarks by ID, got an empty file",
	} {
		r := invoke(t, other, "bookmarks", "import", writeTemp(t, "bad.json", content))
		if r.code != 2 || !strings.HasSuffix(r.stderr, want+"\n") || strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "unmarshal") || strings.Contains(r.stderr, ": :") {
			t.Errorf("import %s: exit %d %q, want 2 and %q", content, r.code, r.stderr, want)
		}
	}

	// Remove: all named must exist, or none goes.
	if r := invoke(t, env, "bookmarks", "remove", id, "nope"); r.code != 2 || !strings.Contains(r.stderr, "no bookmark nope; nothing removed") {
		t.Errorf("remove with a missing one: %d %s", r.code, r.stderr)
	}
	if r := invoke(t, env, "bookmarks", "remove", id, "--output-format", "json"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("remove: %d %s", r.code, r.stderr)
	}
	if l := listBookmarks(t, env); l.Total != 2 {
		t.Errorf("after remove: %d", l.Total)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bookmarks", "show", "nope"}, "no bookmark nope"},
		{[]string{"bookmarks", "list", "--output-format", "yaml"}, `unknown output format "yaml"`},
		{[]string{"bookmarks", "list", "--limit", "0"}, "--limit must be 1..1000"},
		{[]string{"bookmarks", "list", "--tag", " "}, "--tag: tag 1: a tag must not be empty"},
		{[]string{"bookmarks", "search", " "}, "TEXT must not be empty"},
		{[]string{"bookmarks", "import", filepath.Join(t.TempDir(), "missing.json")}, "no file "},
		{[]string{"spark", "x", "--bookmark-tags", strings.Repeat("t", 51)}, "--bookmark-tags: tag 1: a tag is at most 50 characters"},
	} {
		r := invoke(t, env, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestSparkRemix: --remix runs spark on the bookmarked ideas, on the first
// bookmark's topic and context unless given.
func TestSparkRemix(t *testing.T) {
	env := mockEnv(t)
	if r := invoke(t, env, "spark", "urban farming", "cheap", "--bookmark-tags", "x", "-o", filepath.Join(t.TempDir(), "a")); r.code != 0 {
		t.Fatal(r.stderr)
	}
	l := listBookmarks(t, env)
	r := invoke(t, env, "spark", "--remix", l.Bookmarks[0].ID+","+l.Bookmarks[1].ID, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("remix: %d %s", r.code, r.stderr)
	}
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Topic != "urban farming" || rep.Context != "cheap" || !strings.Contains(r.stdout, "builds on the kept idea") {
		t.Fatalf("remix report: %s", r.stdout)
	}
	show := invoke(t, env, "runs", "show", rep.RunID, "--output-format", "record")
	if !strings.Contains(show.stdout, `"seed_ideas"`) || !strings.Contains(show.stdout, l.Bookmarks[1].ImprovedIdea) {
		t.Errorf("the run's parameters lack the seed ideas: %s", show.stdout)
	}
	// With a topic of its own; the bare form takes --remix too.
	r = invoke(t, env, "rural schools", "--remix", l.Bookmarks[0].ID, "--output-format", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Topic != "rural schools" || rep.Context != "cheap" {
		t.Errorf("remix with a topic: %d %s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"spark", "--remix", "nope"}, "--remix: no bookmark nope"},
		{[]string{"spark"}, "a topic is required"},
		{[]string{"spark", "--remix", strings.Repeat("a,", 10) + "a"}, "--remix builds on at most 10 bookmarks"},
	} {
		if r := invoke(t, env, tc.args...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d %q", tc.args, r.code, r.stderr)
		}
	}
}

// TestExportCommand: madspark export writes any run in every format,
// text to standard output, to --output atomically, and a PDF to its own
// name by default.
func TestExportCommand(t *testing.T) {
	env := mockEnv(t)
	r := invoke(t, env, "spark", "urban farming", "--enhanced-reasoning", "--output-format", "json")
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	js := invoke(t, env, "export", rep.RunID)
	var env1 struct {
		RunID  string          `json:"run_id"`
		Notice string          `json:"notice"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &env1); err != nil || env1.RunID != rep.RunID || !strings.HasPrefix(env1.Notice, "MOCK DATA") || len(env1.Result) == 0 {
		t.Fatalf("json: %v %s", err, js.stdout)
	}
	c := invoke(t, env, "export", rep.RunID, "--format", "csv")
	rows, err := csv.NewReader(strings.NewReader(c.stdout)).ReadAll()
	if err != nil || len(rows) != 4 || !slices.Contains(rows[0], "improved_weighted_score") || rows[1][1] != "mock" {
		t.Fatalf("csv: %v %q", err, c.stdout)
	}
	md := invoke(t, env, "export", rep.RunID, "--format", "markdown")
	if !strings.HasPrefix(md.stdout, "# Ideas: urban farming") || !strings.Contains(md.stdout, "MOCK DATA") {
		t.Errorf("markdown: %.300s", md.stdout)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "ideas.md")
	if r := invoke(t, env, "export", rep.RunID, "--format", "markdown", "--output", out); r.code != 0 || r.stdout != "" {
		t.Fatalf("--output: %d %s", r.code, r.stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != md.stdout {
		t.Errorf("the file differs from standard output")
	}
	// A PDF without --output goes to its own name in the outputs
	// directory.
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	r = invoke(t, env, "export", rep.RunID, "--format", "pdf")
	_ = os.Chdir(wd)
	name := filepath.Join("outputs", "madspark-spark-"+rep.RunID[len(rep.RunID)-8:]+".pdf")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "wrote "+name) {
		t.Fatalf("pdf: %d %s", r.code, r.stderr)
	}
	if text := pdftest.Text(t, filepath.Join(dir, name)); !strings.Contains(text, "Ideas: urban farming") || !strings.Contains(text, "MOCK DATA") {
		t.Errorf("pdf text: %.300s", text)
	}
	// Every other pipeline, from its stored run.
	if r := invoke(t, env, "debate", "Compare B-trees and LSM trees step by step", "--output-format", "json"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	list := invoke(t, env, "runs", "list", "--pipeline", "debate", "--output-format", "json")
	debateID := regexp.MustCompile(`"run_id": "([^"]+)"`).FindStringSubmatch(list.stdout)[1]
	if r := invoke(t, env, "export", debateID, "--format", "markdown"); r.code != 0 || !strings.Contains(r.stdout, "## 1 Answer") {
		t.Errorf("debate markdown: %d %.300s %s", r.code, r.stdout, r.stderr)
	}
	if r := invoke(t, env, "export", debateID, "--output-format", "markdown"); r.code != 0 || !strings.Contains(r.stdout, "## 1 Answer") {
		t.Errorf("--output-format markdown: %d %.300s %s", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "nope"}, "no run nope"},
		{[]string{"export", rep.RunID, "--format", "docx"}, `unknown output format "docx"`},
		{[]string{"export"}, "export needs RUN_ID"},
	} {
		if r := invoke(t, env, tc.args...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d %q", tc.args, r.code, r.stderr)
		}
	}
}

// TestServeRESTAPI: madspark serve mounts the REST API beside the OpenAI
// endpoints: a run started over HTTP is worked by the server's worker and
// exported; every pipeline with a one-line parameter is a model.
func TestServeRESTAPI(t *testing.T) {
	env := mockEnv(t)
	env["MADSPARK_RATE_LIMIT"] = "off"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
	}()
	addr := regexp.MustCompile(`serving http://([0-9.:]+)/v1 \(models ([^;]+);`)
	var base, models string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base, models = "http://"+m[1], m[2]
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", errb.String())
		}
	}
	if !strings.Contains(errb.String(), "madspark: web UI at "+base+"/ ") {
		t.Errorf("the start-up lines do not say where the web UI is: %s", errb.String())
	}
	if models != "madspark-debate, madspark-direct, madspark-assess, madspark-chaos, madspark-spark" {
		t.Errorf("models: %s", models)
	}
	res, err := http.Post(base+"/api/runs", "application/json", strings.NewReader(`{"pipeline":"spark","params":{"topic":"urban farming"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	_ = json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	if res.StatusCode != 202 || started.RunID == "" {
		t.Fatalf("POST /api/runs: %d", res.StatusCode)
	}
	// The stream ends when the run is done.
	res, err = http.Get(base + "/api/runs/" + started.RunID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "event: result") {
		t.Fatalf("events: %s", body)
	}
	res, err = http.Get(base + "/api/runs/" + started.RunID + "/export?format=markdown")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "# Ideas: urban farming") {
		t.Errorf("export: %d %.200s", res.StatusCode, body)
	}
	res, err = http.Get(base + "/health/detailed")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"status":"ok"`) || !strings.Contains(string(body), `"workers":1`) {
		t.Errorf("health: %d %s", res.StatusCode, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}
	for k, v := range map[string]string{"MADSPARK_RATE_LIMIT": "fast", "MADSPARK_RATE_BURST": "0", "MADSPARK_CORS_ORIGINS": "ui.example.org"} {
		bad := mockEnv(t)
		bad[k] = v
		if r := invoke(t, bad, "serve", "--addr", "127.0.0.1:0"); r.code != 2 || !strings.Contains(r.stderr, k[len("MADSPARK_"):]) && !strings.Contains(r.stderr, "origin") {
			t.Errorf("%s=%s: exit %d %s", k, v, r.code, r.stderr)
		}
	}
}
