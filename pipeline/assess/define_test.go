package assess

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/provider/mock"
)

// TestDefinitionRunsFromJSON starts an assessment the way the queue and the
// API do and renders its files, in the seed's layout, from the stored run.
func TestDefinitionRunsFromJSON(t *testing.T) {
	def, err := Definition(Config{Mock: true, NoSearchNote: "web tools off in mock mode"})
	if err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	if err := reg.Register(def); err != nil {
		t.Fatal(err)
	}
	// What names the worker's file system is not a parameter.
	for body, field := range map[string]string{
		`{"idea":"x","output_dir":"/tmp"}`:                    "output_dir",
		`{"idea":"x","prompts_dir":"/etc"}`:                   "prompts_dir",
		`{"idea":"x","analyst_prompt":"/etc/passwd"}`:         "analyst_prompt",
		`{"idea":"x","reviewer_prompt":"../../etc/passwd"}`:   "reviewer_prompt",
		`{"idea":"x","analyst_prompt":"missing.md"}`:          "analyst_prompt",
		`{"idea":"x","mode":"analyze","fact_check":true}`:     "fact_check",
		`{"idea":"x","mode":"full_evaluation","min_words":5}`: "min_words",
	} {
		var pe *pipeline.ParamsError
		if _, err := reg.Decode("assess", json.RawMessage(body)); !errors.As(err, &pe) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", body, err, field)
		}
	}
	p, err := reg.Decode("assess", json.RawMessage(`{"idea":"`+idea+`","mode":"analyze_review_and_judge","fact_check":true,"analyst_prompt":"experimental/analyst/concise.md"}`))
	if err != nil {
		t.Fatal(err)
	}
	if def.Topic(p) != idea {
		t.Errorf("topic %q", def.Topic(p))
	}

	db := newDB(t)
	e := &engine.Engine{Store: db, Client: mock.New(MockResponders())}
	ctx := context.Background()
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "assess", Mode: "mock", Provider: mock.Name, Model: mock.Model, Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := def.Run(ctx, r, p)
	if err := r.Finish(ctx, out, err); err != nil {
		t.Fatal(err)
	}
	res := out.(*Result)
	if res.OutputDir != "" || res.Evaluation == nil || len(res.Iterations) != 2 {
		t.Fatalf("output dir %q, evaluation %v, %d iterations", res.OutputDir, res.Evaluation != nil, len(res.Iterations))
	}
	rec, err := db.Run(ctx, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	files, err := def.Files(rec)
	if err != nil {
		t.Fatal(err)
	}
	dir := path.Join("analyses", res.Slug)
	for _, name := range []string{
		"report.md", "result.json", path.Join(dir, "analysis.md"), path.Join(dir, "evaluation.json"),
		path.Join(dir, "iterations", "iteration_1.md"), path.Join(dir, "iterations", "iteration_2.md"),
		path.Join(dir, "iterations", "reviewer_feedback_iteration_1.json"), path.Join(dir, "iterations", "fact_check_iteration_2.json"),
	} {
		if len(files[name]) == 0 {
			t.Errorf("no %s among %d files", name, len(files))
		}
	}
	if got, want := string(files[path.Join(dir, "analysis.md")]), res.Iterations[1].Analysis+"\n"; got != want {
		t.Error("analysis.md is not the final iteration")
	}
	var ev Evaluation
	if err := json.Unmarshal(files[path.Join(dir, "evaluation.json")], &ev); err != nil || ev.WeightedScore != res.Evaluation.WeightedScore {
		t.Errorf("evaluation.json: %v", err)
	}
	if !strings.Contains(string(files["report.md"]), "MOCK DATA") {
		t.Error("report.md lacks the mock notice")
	}
}
