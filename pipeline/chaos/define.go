package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
)

// Definition describes the chaos pipeline to the registry; accepted ideas
// are remembered in ideas. Runs through the registry write no files as they
// go; Files renders a finished run's.
func Definition(ideas madspark.IdeaStore) (pipeline.Definition, error) {
	pipe, err := New(ideas)
	if err != nil {
		return pipeline.Definition{}, err
	}
	return pipeline.Definition{
		Name:        "chaos",
		Result:      reflect.TypeFor[Result](),
		Title:       "Chaos",
		Description: "A creativity workflow: chaos seeds, two creative tracks, refinement and a strict-JSON judge, with an idea memory.",
		NewParams:   pipeline.Defaults(DefaultParams),
		Run: pipeline.Runs(func(ctx context.Context, r *engine.Run, p *Params) (any, error) {
			return pipe.Run(ctx, r, *p, nil)
		}),
		Topic:      pipeline.Topics(func(p *Params) string { return p.Prompt }),
		Files:      Files,
		QueryParam: "prompt",
		Document:   Document,
		Table:      Table,
		Ideas:      Ideas,
		// A run's seed is fixed when the run is recorded, so that a
		// resumed run samples the same concepts.
		Prepare: func(p pipeline.Params, given func(string) bool) {
			if in, ok := p.(*Params); ok && !given("seed") {
				in.Seed = rand.Uint64()
			}
		},
	}, nil
}

// IterationFiles are the files of one iteration, under iteration_N/: the
// chaos, creative, refinement and judge outputs.
func IterationFiles(it Iteration) (map[string][]byte, error) {
	judge, err := json.MarshalIndent(it.Judgement, "", "  ")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"creative_a.txt": []byte(it.CreativeA), "refinement_a.txt": []byte(it.RefinementA), "judge.json": judge}
	if it.Chaos != "" {
		files["chaos.txt"] = []byte(it.Chaos)
	}
	if it.CreativeB != "" {
		files["creative_b.txt"], files["refinement_b.txt"] = []byte(it.CreativeB), []byte(it.RefinementB)
	}
	out := map[string][]byte{}
	for name, data := range files {
		out[path.Join(fmt.Sprintf("iteration_%d", it.Number), name)] = data
	}
	return out, nil
}

// Summary is the text a run prints and writes to final_output.txt: a header
// (with the mock notice in mock mode) and the report.
func Summary(res *Result, runID, mode, provider, model string, seed uint64, usage string) string {
	usage += pipeline.RepairsNote(res.Repairs)
	header := fmt.Sprintf("run %s · %s/%s · seed %d · %s\n", runID, provider, model, seed, usage)
	if res.FailedStep != "" {
		header += fmt.Sprintf("The %s step failed: the iterations below are kept, and madspark resume %s finishes the run.\n", res.FailedStep, runID)
	}
	if mode == "mock" {
		header = "MOCK DATA: generated offline by the mock provider, not by a language model.\n" + header
	}
	return header + "\n" + res.Report()
}

// Files renders a succeeded chaos run: final_output.txt, result.json and
// each iteration's files.
func Files(run *madspark.Run) (map[string][]byte, error) {
	res, err := pipeline.StoredResult[Result](run)
	if err != nil {
		return nil, err
	}
	var p Params
	_ = json.Unmarshal(run.Params, &p)
	elapsed := run.FinishedAt.Sub(run.CreatedAt)
	u := run.Usage
	usage := fmt.Sprintf("%s; %.1fs", u, elapsed.Seconds())
	envelope, err := json.MarshalIndent(map[string]any{
		"run_id": run.ID, "pipeline": "chaos", "mode": run.Mode, "provider": run.Provider, "model": run.Model,
		"seed": p.Seed, "result": res, "usage": run.Usage, "duration_ms": elapsed.Round(time.Millisecond).Milliseconds(),
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"final_output.txt": []byte(Summary(res, run.ID, run.Mode, run.Provider, run.Model, p.Seed, usage)),
		"result.json":      envelope,
	}
	for _, it := range res.Iterations {
		fs, err := IterationFiles(it)
		if err != nil {
			return nil, err
		}
		for name, data := range fs {
			files[name] = data
		}
	}
	return files, nil
}
