package app

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/chaos"
)

// ChaosOutput is what a chaos run wrote to its directory.
type ChaosOutput struct {
	Dir string
	// Summary is final_output.txt; Result is result.json.
	Summary string
	Result  []byte
}

// Chaos runs the creativity workflow into dir, made beforehand
// (MakeOutputDir): each iteration's files as soon as it is judged, the
// idea memory as ideas.json, then final_output.txt and result.json. When
// a late step fails, the finished iterations are written as the result so
// far, and the run resumes at that step.
func (a *App) Chaos(ctx context.Context, p chaos.Params, dir string, timeout time.Duration) (*ChaosOutput, error) {
	p.MemoryFile = filepath.Join(dir, "ideas.json")
	pipe, err := chaos.New(a.Store)
	if err != nil {
		return nil, err
	}
	memory := p.MemoryName()
	written := func(it chaos.Iteration, remembered []madspark.RememberedIdea) error {
		files, err := chaos.IterationFiles(it)
		if err != nil {
			return err
		}
		if err := writeFiles(dir, files); err != nil {
			return err
		}
		export, err := chaos.ExportMemory(memory, remembered)
		if err != nil {
			return err
		}
		return atomicfile.Write(p.MemoryFile, export)
	}
	var res *chaos.Result
	started := time.Now()
	run, elapsed, err := a.Execute(ctx, Spec{Pipeline: "chaos", Params: p, Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, p, written)
		return res, err
	})
	if err != nil {
		if res != nil && res.FailedStep != "" && run != nil {
			if _, werr := a.writeChaosResult(dir, res, run, p, time.Since(started)); werr != nil {
				a.cfg.Logger.Warn("could not write the result so far", "dir", dir, "err", werr)
			} else {
				a.notice("the %s step failed; the %d finished iteration(s) are written to %s", res.FailedStep, len(res.Iterations), dir)
			}
		}
		return nil, fmt.Errorf("%w (outputs so far in %s)", resumeWith(err, "--output-dir", dir), dir)
	}
	return a.writeChaosResult(dir, res, run, p, elapsed)
}

// writeChaosResult writes final_output.txt and result.json for res, whole
// or so far.
func (a *App) writeChaosResult(dir string, res *chaos.Result, run *engine.Run, p chaos.Params, elapsed time.Duration) (*ChaosOutput, error) {
	summary := chaos.Summary(res, run.ID(), a.Info.Mode(), a.Info.Name, a.Info.Model, p.Seed, UsageLine(run, elapsed))
	envelope := a.Envelope(run, "chaos", res, elapsed)
	envelope["seed"], envelope["output_dir"] = p.Seed, dir
	result, err := json.MarshalIndent(envelope, "", "  ")
	if err != nil {
		return nil, err
	}
	out := &ChaosOutput{Dir: dir, Summary: summary, Result: result}
	return out, writeFiles(dir, map[string][]byte{"final_output.txt": []byte(summary), "result.json": result})
}
