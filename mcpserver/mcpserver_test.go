package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// args are arguments of each tool for a quick run.
var args = map[string]map[string]any{
	"spark":  {"topic": "urban farming", "num_candidates": 4},
	"chaos":  {"prompt": "a board game about rivers", "iterations": 1},
	"debate": {"query": "Is tea better than coffee?"},
	"assess": {"idea": "A bakery for dogs"},
	"proposal": {"profile": map[string]any{"academic_program": "MSc Computer Science", "field_of_study": "Computer science",
		"research_area": "Energy use of caches", "weekly_hours": 10, "total_timeline": map[string]any{"value": 6, "unit": "months"}}},
	"eval":  {"pipeline": "pitch", "topics": []map[string]any{{"topic": "solar bikes"}}},
	"pitch": {"topic": "solar bikes"},
}

// TestToolsArePipelines checks that every pipeline is a tool of its name,
// whose input schema is the pipeline's parameters' schema (with its
// descriptions) and whose output schema is its result's with the run's ID.
func TestToolsArePipelines(t *testing.T) {
	h := newHarness(t, 0)
	tools := h.tools()
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"assess", "chaos", "debate", "eval", "pitch", "proposal", "spark"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, d := range h.reg.List() {
		tool := tools[d.Name]
		want, err := h.reg.ParamsSchema(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		got, _ := json.Marshal(tool.InputSchema)
		_ = json.Unmarshal(got, &a)
		_ = json.Unmarshal(want, &b)
		if !jsonEqual(a, b) {
			t.Errorf("%s: the input schema is not the pipeline's parameters schema:\n%s\n%s", d.Name, got, want)
		}
		if d.Title != "" && tool.Title != d.Title || !strings.HasPrefix(tool.Description, d.Description) {
			t.Errorf("%s: title %q, description %q", d.Name, tool.Title, tool.Description)
		}
		var out struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		raw, _ := json.Marshal(tool.OutputSchema)
		_ = json.Unmarshal(raw, &out)
		if !slices.Contains(out.Required, "run_id") || out.Properties["run_id"] == nil {
			t.Errorf("%s: the output schema has no run_id: %s", d.Name, raw)
		}
		if d.Name != "pitch" && out.Properties["repairs"] == nil {
			t.Errorf("%s: the output schema is not the result's: %s", d.Name, raw)
		}
	}
	if !strings.Contains(string(mustJSON(t, tools["spark"].InputSchema)), `"description":"`) {
		t.Error("spark's input schema has no descriptions")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestCallSpark runs spark as a tool with a progress token: the result is
// structured content matching the output schema, with the run's ID; the
// report is Markdown; the run is recorded with its journal; each stage was
// a progress notification with a readable message, the values increasing;
// a second identical call is answered by the response cache.
func TestCallSpark(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	res, err := h.call(ctx, "spark", args["spark"], "spark-1")
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("error: %s", text(t, res))
	}
	checkOutput(t, h.tools()["spark"], res)
	sc := res.StructuredContent.(map[string]any)
	id, _ := sc["run_id"].(string)
	rec, err := h.db.Run(ctx, id)
	if err != nil {
		t.Fatalf("run_id %q: %v", id, err)
	}
	if rec.Status != madspark.RunSucceeded || rec.Pipeline != "spark" || rec.Usage.LLMCalls != 6 {
		t.Errorf("recorded run: %s %s, usage %+v", rec.Pipeline, rec.Status, rec.Usage)
	}
	if cands, _ := sc["candidates"].([]any); len(cands) != 3 {
		t.Errorf("%d candidates in the structured content", len(cands))
	}
	md := text(t, res)
	if !strings.HasPrefix(md, "# ") || !strings.Contains(md, "urban farming") || !strings.Contains(md, "run "+id) {
		t.Errorf("the text is not the run's report:\n%s", md)
	}
	steps, err := h.db.Steps(ctx, id)
	if err != nil || len(steps) != 6 || len(steps[0].Calls) != 1 {
		t.Errorf("journal: %d steps, %v", len(steps), err)
	}
	if n := h.model.count(); n != 6 {
		t.Errorf("the model was called %d times, want 6", n)
	}
	var links []string
	for _, c := range res.Content[1:] {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l.URI)
		}
	}
	if want := []string{"madspark://runs/" + id, "madspark://runs/" + id + "/export.md", "madspark://runs/" + id + "/export.pdf"}; !slices.Equal(links, want) {
		t.Errorf("resource links %v, want %v", links, want)
	}

	ps := h.notifications("spark-1")
	var msgs []string
	for i, p := range ps {
		msgs = append(msgs, p.Message)
		if i > 0 && p.Progress <= ps[i-1].Progress {
			t.Errorf("progress went from %v to %v", ps[i-1].Progress, p.Progress)
		}
		if p.Total != 100 || p.Progress > 100 {
			t.Errorf("progress %v of %v", p.Progress, p.Total)
		}
	}
	for _, want := range []string{"run " + id + " of spark started", "generate: generating 4 ideas", "evaluate: evaluating 4 ideas",
		"advocate: arguing for and against 3 ideas", "re_evaluate: re-evaluating 3 improved ideas", "done"} {
		if !slices.Contains(msgs, want) {
			t.Errorf("no progress %q among %q", want, msgs)
		}
	}

	again, err := h.call(ctx, "spark", args["spark"], "")
	if err != nil || again.IsError {
		t.Fatalf("second call: %v %+v", err, again)
	}
	id2 := again.StructuredContent.(map[string]any)["run_id"].(string)
	rec2, _ := h.db.Run(ctx, id2)
	if id2 == id || rec2.Usage.CachedCalls != 6 || h.model.count() != 6 {
		t.Errorf("second run %s: usage %+v, model calls %d; want a new run answered by the cache", id2, rec2.Usage, h.model.count())
	}
}

// TestEveryToolRuns calls every tool once in mock mode: each result
// matches its tool's output schema.
func TestEveryToolRuns(t *testing.T) {
	h := newHarness(t, 0)
	tools := h.tools()
	for name, tool := range tools {
		t.Run(name, func(t *testing.T) {
			res, err := h.call(context.Background(), name, args[name], "")
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("error: %s", text(t, res))
			}
			checkOutput(t, tool, res)
			if text(t, res) == "" {
				t.Error("no report")
			}
		})
	}
}

// TestBadArguments: a call whose arguments the pipeline refuses is the
// tool's error, in the command line's words, and calls no model and
// records no run.
func TestBadArguments(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"spark", map[string]any{"topic": "x", "num_candidates": 99}, "num_candidates must be 1..20, got 99"},
		{"chaos", map[string]any{"prompt": "x", "iterations": 0}, "iterations must be 1..10, got 0"},
		{"spark", map[string]any{"topic": "x", "colour": "red"}, "colour: unknown field"},
		{"spark", map[string]any{"topic": 3}, "topic: want string, got number"},
		{"debate", map[string]any{}, "query: is required"},
		{"pitch", map[string]any{"topic": ""}, "topic: minLength: got 0, want 1"},
	} {
		res, err := h.call(ctx, c.tool, c.args, "")
		if err != nil {
			t.Fatalf("%s %v: %v", c.tool, c.args, err)
		}
		if !res.IsError || text(t, res) != c.want {
			t.Errorf("%s %v: error %v %q, want %q", c.tool, c.args, res.IsError, text(t, res), c.want)
		}
	}
	if n := h.model.count(); n != 0 {
		t.Errorf("bad arguments called the model %d times", n)
	}
	if runs, _ := h.db.Runs(ctx, madspark.RunFilter{}); len(runs) != 0 {
		t.Errorf("bad arguments recorded %d runs", len(runs))
	}
}

// TestProviderFailure: a provider that fails makes the call's error say so
// in plain words, with the run to resume; the run is failed, resumable.
func TestProviderFailure(t *testing.T) {
	h := newHarness(t, 0)
	h.model.setGate(func(context.Context, *llm.Request) error {
		return &llm.Error{Provider: "mock", Status: 401, Message: "invalid API key"}
	})
	res, err := h.call(context.Background(), "spark", args["spark"], "")
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := h.db.Runs(context.Background(), madspark.RunFilter{})
	if len(runs) != 1 || runs[0].Status != madspark.RunFailed || !runs[0].Status.Resumable() {
		t.Fatalf("runs: %+v", runs)
	}
	id := runs[0].ID
	msg := text(t, res)
	if !res.IsError || !strings.Contains(msg, "run "+id+" (mock/mock-1) failed: the mock provider refused the API key (HTTP 401: invalid API key)") ||
		!strings.Contains(msg, "invalid API key") || !strings.Contains(msg, "madspark resume "+id+" finishes the run") || strings.Contains(msg, "\n") {
		t.Errorf("error %v: %q", res.IsError, msg)
	}
	if l, ok := res.Content[len(res.Content)-1].(*mcp.ResourceLink); !ok || l.URI != "madspark://runs/"+id {
		t.Errorf("no link to the failed run: %+v", res.Content)
	}
}

// TestHeartbeat: a stage that takes long is told again, with the time it
// has taken, so that the client never waits in silence.
func TestHeartbeat(t *testing.T) {
	h := newHarness(t, 20*time.Millisecond)
	release := make(chan struct{})
	h.model.setGate(func(ctx context.Context, req *llm.Request) error {
		if req.Agent == "spark.generate" {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	done := make(chan error, 1)
	go func() {
		res, err := h.call(context.Background(), "spark", args["spark"], "slow")
		if err == nil && res.IsError {
			err = errors.New(text(t, res))
		}
		done <- err
	}()
	still := func() int {
		n := 0
		for _, p := range h.notifications("slow") {
			if strings.HasPrefix(p.Message, "generate: generating 4 ideas (still working, ") {
				n++
			}
		}
		return n
	}
	h.waitFor("two heartbeats of the generate stage", func() bool { return still() >= 2 })
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ps := h.notifications("slow")
	for i := 1; i < len(ps); i++ {
		if ps[i].Progress <= ps[i-1].Progress {
			t.Fatalf("progress went from %v to %v", ps[i-1].Progress, ps[i].Progress)
		}
	}
}

// TestCancel: the client's cancel notification cancels the run, which is
// recorded cancelled with the steps it finished; resumed, it replays them
// and asks the model only for the rest.
func TestCancel(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	held := make(chan struct{}, 1)
	h.model.setGate(func(ctx context.Context, req *llm.Request) error {
		if strings.HasPrefix(req.Agent, "chaos.judge") {
			select {
			case held <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := h.call(cctx, "chaos", args["chaos"], "c")
		done <- err
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never reached its judge")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	runs, _ := h.db.Runs(ctx, madspark.RunFilter{})
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	id := runs[0].ID
	var rec *madspark.Run
	h.waitFor("the run to be recorded cancelled", func() bool {
		rec, _ = h.db.Run(ctx, id)
		return rec.Status.Final()
	})
	if rec.Status != madspark.RunCancelled || !rec.Status.Resumable() {
		t.Fatalf("run %s: %s (%s)", id, rec.Status, rec.Error)
	}
	steps, _ := h.db.Steps(ctx, id)
	var done0 []string
	for _, s := range steps {
		if s.Status == madspark.StepDone {
			done0 = append(done0, s.Key)
		}
	}
	if len(done0) < 3 || slices.Contains(done0, "i1/judge") {
		t.Fatalf("finished steps %v: want the chaos and creative steps, not the judge", done0)
	}

	// Resumed, the finished steps are replayed; only the judge is asked.
	h.model.setGate(nil)
	before := h.model.count()
	r, err := h.engine.Resume(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := h.reg.Get("chaos")
	params, err := h.reg.Decode("chaos", rec.Params)
	if err != nil {
		t.Fatal(err)
	}
	out, err := def.Run(ctx, r, params)
	if ferr := r.Finish(ctx, out, err); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	if n := h.model.count() - before; n != 1 {
		t.Errorf("the resumed run asked the model %d times, want once (the judge)", n)
	}
}

// TestResources reads runs as resources: listed newest first with their
// exports, the run as JSON (status, result, usage, repairs), its Markdown
// and PDF, and a missing run as the protocol's "not found".
func TestResources(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	var ids []string
	for _, tool := range []string{"spark", "pitch"} {
		res, err := h.call(ctx, tool, args[tool], "")
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		ids = append(ids, res.StructuredContent.(map[string]any)["run_id"].(string))
	}
	tpl, err := h.client.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var templates []string
	for _, rt := range tpl.ResourceTemplates {
		templates = append(templates, rt.URITemplate)
	}
	if want := []string{"madspark://runs/{id}", "madspark://runs/{id}/export.md", "madspark://runs/{id}/export.pdf"}; !slices.Equal(templates, want) {
		t.Errorf("templates %v, want %v", templates, want)
	}
	list, err := h.client.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	want := []string{"madspark://runs/" + ids[1], "madspark://runs/" + ids[1] + "/export.md", "madspark://runs/" + ids[1] + "/export.pdf",
		"madspark://runs/" + ids[0], "madspark://runs/" + ids[0] + "/export.md", "madspark://runs/" + ids[0] + "/export.pdf"}
	if !slices.Equal(uris, want) || list.NextCursor != "" {
		t.Errorf("resources %v (next %q), want %v", uris, list.NextCursor, want)
	}
	if !strings.Contains(list.Resources[3].Title, "spark: urban farming (succeeded)") {
		t.Errorf("title %q", list.Resources[3].Title)
	}

	read, err := h.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "madspark://runs/" + ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunID   string          `json:"run_id"`
		Status  string          `json:"status"`
		Result  json.RawMessage `json:"result"`
		Usage   llm.Usage       `json:"usage"`
		Repairs []llm.Repair    `json:"repairs"`
		Exports []string        `json:"exports"`
	}
	c := read.Contents[0]
	if err := json.Unmarshal([]byte(c.Text), &doc); err != nil || c.MIMEType != "application/json" {
		t.Fatalf("%s %v: %s", c.MIMEType, err, c.Text)
	}
	if doc.RunID != ids[0] || doc.Status != "succeeded" || len(doc.Result) == 0 || doc.Usage.LLMCalls != 6 || doc.Repairs == nil || len(doc.Exports) != 2 {
		t.Errorf("run as a resource: %s", c.Text)
	}
	md, err := h.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "madspark://runs/" + ids[0] + "/export.md"})
	if err != nil {
		t.Fatal(err)
	}
	if m := md.Contents[0]; m.MIMEType != "text/markdown" || !strings.Contains(m.Text, "urban farming") {
		t.Errorf("Markdown export: %s %.100q", m.MIMEType, m.Text)
	}
	pdf, err := h.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "madspark://runs/" + ids[1] + "/export.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	if p := pdf.Contents[0]; p.MIMEType != "application/pdf" || !bytes.HasPrefix(p.Blob, []byte("%PDF-")) {
		t.Errorf("PDF export: %s %.20q", p.MIMEType, p.Blob)
	}
	_, err = h.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: "madspark://runs/no-such-run"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(je.Data), "no-such-run") {
		t.Errorf("a missing run: %v", err)
	}
}

// TestResourcesPage lists more runs than a page holds: the cursor gives
// the next page.
func TestResourcesPage(t *testing.T) {
	h := newHarness(t, 0)
	ctx := context.Background()
	for i := range 21 {
		rec := &madspark.Run{ID: "run-" + string(rune('a'+i)), Pipeline: "debate", Status: madspark.RunFailed, Params: json.RawMessage(`{}`),
			CreatedAt: time.Date(2025, 1, 1, 0, i, 0, 0, time.UTC)}
		if err := h.db.CreateRun(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	first, err := h.client.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Resources) != 20 || first.NextCursor == "" || first.Resources[0].URI != "madspark://runs/run-u" {
		t.Fatalf("first page: %d resources, next %q", len(first.Resources), first.NextCursor)
	}
	second, err := h.client.ListResources(ctx, &mcp.ListResourcesParams{Cursor: first.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Resources) != 1 || second.NextCursor != "" || second.Resources[0].URI != "madspark://runs/run-a" {
		t.Fatalf("second page: %+v", second)
	}
}
