package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/chaos"
)

func (c *cli) chaosCmd() *cobra.Command {
	d := chaos.DefaultParams()
	p := d
	var (
		outDir, format string
		timeout        time.Duration
		noCache        bool
	)
	cmd := &cobra.Command{
		Use:   "chaos PROMPT",
		Short: "Creativity workflow: chaos seeds → two creative tracks → refinement → judge, with an idea memory",
		Long: `Runs the creativity workflow for PROMPT: random seed concepts inspire a chaos
generator, two creative tracks (bold and grounded) write ideas, they are
refined, and a judge accepts or rejects each. Accepted ideas are remembered
across iterations and runs and fed back to the creative tracks.

Files go to --output-dir (default outputs/run_YYYYMMDD_HHMMSS): final_output.txt,
ideas.json (the memory with its statistics), result.json, and each iteration's
chaos, creative, refinement and judge outputs.`,
		Args: argsError(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.Prompt = args[0]
			if !cmd.Flags().Changed("seed") {
				p.Seed = rand.Uint64()
			}
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			if err := p.Validate(); err != nil {
				return usageError{err}
			}
			return c.runChaos(cmd.Context(), p, outDir, format, timeout, !noCache)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&p.Iterations, "iterations", d.Iterations, "iterations, each building on the ideas accepted before (1-10)")
	fs.IntVar(&p.ChaosSeeds, "chaos-seeds", d.ChaosSeeds, "random seed concepts for the chaos generator (1-50)")
	fs.Uint64Var(&p.Seed, "seed", 0, "seed for sampling the concepts, for reproducible runs (default random, printed)")
	fs.IntVar(&p.IdeasPerTrack, "ideas-per-track", d.IdeasPerTrack, "ideas each creative track generates (5-20)")
	fs.StringVar(&p.ModelA, "model-a", "", "model for creative track A (default the provider's)")
	fs.StringVar(&p.ModelB, "model-b", "", "model for creative track B (default the provider's)")
	fs.Float64Var(&p.TempA, "temp-a", d.TempA, "temperature of creative track A")
	fs.Float64Var(&p.TempB, "temp-b", d.TempB, "temperature of creative track B")
	fs.Float64Var(&p.AcceptThreshold, "accept-threshold", d.AcceptThreshold, "lowest quality score (0-10) of an accepted idea")
	fs.StringVar(&p.Memory, "memory", "", "name of the idea memory to read and extend (default one per prompt)")
	fs.BoolVar(&p.Tournament, "tournament", false, "rank the accepted ideas by pairwise comparison into Elo ratings")
	fs.BoolVar(&p.Evolve, "evolve", false, "recombine the best ideas into new candidates, refined and judged like the others")
	fs.StringVar(&outDir, "output-dir", "", "directory for the run's files (default outputs/run_YYYYMMDD_HHMMSS)")
	fs.StringVar(&format, "output-format", "text", "what to print: text (the final summary) or json")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	return cmd
}

func (c *cli) runChaos(ctx context.Context, p chaos.Params, outDir, format string, timeout time.Duration, useCache bool) error {
	dir, err := makeOutputDir(outDir)
	if err != nil {
		// Before any call, as for every other bad flag.
		return usageError{err}
	}
	p.MemoryFile = filepath.Join(dir, "ideas.json")
	a, err := c.openApp(ctx, useCache)
	if err != nil {
		return err
	}
	defer a.Close()
	pipe, err := chaos.New(a.db)
	if err != nil {
		return err
	}
	memory := p.MemoryName()
	// Each iteration's outputs are written as soon as it is judged.
	written := func(it chaos.Iteration, remembered []madspark.RememberedIdea) error {
		files, err := chaos.IterationFiles(it)
		if err != nil {
			return err
		}
		for name, data := range files {
			if err := writeFile(filepath.Join(dir, filepath.FromSlash(name)), data); err != nil {
				return err
			}
		}
		export, err := chaos.ExportMemory(memory, remembered)
		if err != nil {
			return err
		}
		return writeFile(p.MemoryFile, export)
	}
	var res *chaos.Result
	started := time.Now()
	run, elapsed, err := c.execute(ctx, a, "chaos", p, timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, p, written)
		return res, err
	})
	if err != nil {
		if res != nil && res.FailedStep != "" && run != nil {
			// A late step failed: the finished iterations are written
			// as the result so far, and the run resumes at that step.
			if _, werr := writeChaosResult(dir, res, run, a, p, time.Since(started)); werr != nil {
				c.logger.Warn("could not write the result so far", "dir", dir, "err", werr)
			} else {
				fmt.Fprintf(c.stderr, "madspark: the %s step failed; the %d finished iteration(s) are written to %s\n", res.FailedStep, len(res.Iterations), dir)
			}
		}
		return fmt.Errorf("%w (outputs so far in %s)", resumeInto(err, dir), dir)
	}
	summary, err := writeChaosResult(dir, res, run, a, p, elapsed)
	if err != nil {
		return err
	}
	if format == "json" {
		result, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", result)
		return err
	}
	fmt.Fprint(c.stdout, summary)
	fmt.Fprintf(c.stderr, "madspark: outputs in %s\n", dir)
	return nil
}

// writeChaosResult writes final_output.txt and result.json for res, whole
// or so far, and returns the summary.
func writeChaosResult(dir string, res *chaos.Result, run *engine.Run, a *app, p chaos.Params, elapsed time.Duration) (string, error) {
	summary := chaos.Summary(res, run.ID(), a.info.Mode(), a.info.Name, a.info.Model, p.Seed, usageLine(run, elapsed))
	envelope := map[string]any{
		"run_id": run.ID(), "pipeline": "chaos", "mode": a.info.Mode(), "provider": a.info.Name, "model": a.info.Model,
		"seed": p.Seed, "output_dir": dir, "result": res, "usage": run.Usage(), "duration_ms": elapsed.Milliseconds(),
	}
	result, err := json.MarshalIndent(envelope, "", "  ")
	if err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(dir, "final_output.txt"), []byte(summary)); err != nil {
		return "", err
	}
	return summary, writeFile(filepath.Join(dir, "result.json"), result)
}

// makeOutputDir creates dir, or outputs/run_YYYYMMDD_HHMMSS (with a suffix
// if a run in the same second took that name).
func makeOutputDir(dir string) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("output directory: %w", err)
		}
		return dir, nil
	}
	base := filepath.Join("outputs", "run_"+time.Now().Format("20060102_150405"))
	if err := os.MkdirAll("outputs", 0o755); err != nil {
		return "", fmt.Errorf("output directory: %w", err)
	}
	for i := 1; ; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s_%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("output directory: %w", err)
		}
	}
}

// writeFile writes data to path atomically, creating its directory.
func writeFile(path string, data []byte) error { return atomicfile.Write(path, data) }
