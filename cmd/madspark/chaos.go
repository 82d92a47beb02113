package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
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

Files go to --output-dir (default run_YYYYMMDD_HHMMSS under the outputs
directory, $MADSPARK_OUTPUT_DIR or ./outputs): final_output.txt,
ideas.json (the memory with its statistics), result.json, and each iteration's
chaos, creative, refinement and judge outputs.`,
		Args: cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.Prompt = args[0]
			if !cmd.Flags().Changed("seed") {
				p.Seed = rand.Uint64()
			}
			if err := cmdline.CheckFormat(format, "text", "json"); err != nil {
				return err
			}
			if err := cmdline.CheckTimeout(timeout); err != nil {
				return err
			}
			if err := p.Validate(); err != nil {
				return usageError{Err: err}
			}
			return c.runChaos(cmd.Context(), p, outDir, format, timeout, noCache)
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
	fs.StringVar(&outDir, "output-dir", "", "directory for the run's files (default run_YYYYMMDD_HHMMSS under $MADSPARK_OUTPUT_DIR, else outputs)")
	fs.StringVar(&format, "output-format", "text", "what to print: text (the final summary) or json")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	return cmd
}

func (c *cli) runChaos(ctx context.Context, p chaos.Params, outDir, format string, timeout time.Duration, noCache bool) error {
	dir, err := app.MakeOutputDir(c.env, outDir)
	if err != nil {
		return usageError{Err: err} // before any call, as for every other bad flag
	}
	a, err := c.open(ctx, noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	out, err := a.Chaos(ctx, p, dir, timeout)
	if err != nil {
		return err
	}
	if format == "json" {
		_, err = fmt.Fprintf(c.stdout, "%s\n", out.Result)
		return err
	}
	fmt.Fprint(c.stdout, out.Summary)
	fmt.Fprintf(c.stderr, "madspark: outputs in %s\n", dir)
	return nil
}
