package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/spark"
)

// sparkFlags are the spark pipeline's flags, shared by "madspark TOPIC" and
// "madspark spark TOPIC".
type sparkFlags struct {
	numCandidates    int
	numTop           int
	preset           string
	temperature      float64
	enhanced         bool
	logical          bool
	noveltyThreshold float64
	noNovelty        bool
	format           string
	output           string
	timeout          time.Duration
	noCache          bool
	allowFallbacks   bool
	changed          func(string) bool
}

func (f *sparkFlags) register(cmd *cobra.Command) {
	d := spark.DefaultParams()
	fs := cmd.Flags()
	fs.IntVar(&f.numCandidates, "num-candidates", d.NumCandidates, "number of ideas to generate (1-20)")
	fs.IntVar(&f.numTop, "num-top-candidates", d.NumTopCandidates, "number of best ideas to argue over and improve (1-5)")
	fs.StringVar(&f.preset, "temperature-preset", "", "role temperatures: "+strings.Join(spark.PresetNames(), "|"))
	fs.Float64Var(&f.temperature, "temperature", 0, "generation temperature (0-2); the other roles keep their ratio to it")
	fs.BoolVar(&f.enhanced, "enhanced-reasoning", false, "add a multi-dimensional evaluation on 7 dimensions")
	fs.BoolVar(&f.logical, "logical-inference", false, "add a logical analysis of each top idea")
	fs.Float64Var(&f.noveltyThreshold, "novelty-threshold", d.NoveltyThreshold, "similarity (0-1] at which an idea counts as a near-duplicate")
	fs.BoolVar(&f.noNovelty, "no-novelty-filter", false, "keep near-duplicate ideas")
	fs.StringVar(&f.format, "output-format", "detailed", "output format: "+strings.Join(spark.Formats, "|"))
	fs.StringVarP(&f.output, "output", "o", "", "write the result to FILE instead of standard output")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&f.noCache, "no-cache", false, "do not use the response cache")
	fs.BoolVar(&f.allowFallbacks, "allow-fallbacks", false, "on a failed stage use marked default values instead of failing")
	f.changed = fs.Changed
}

// params turns the flags and arguments into validated parameters.
func (f *sparkFlags) params(args []string) (spark.Params, error) {
	p := spark.DefaultParams()
	p.Topic = args[0]
	if len(args) > 1 {
		p.Context = args[1]
	}
	p.NumCandidates, p.NumTopCandidates = f.numCandidates, f.numTop
	p.EnhancedReasoning, p.LogicalInference = f.enhanced, f.logical
	p.NoveltyFilter, p.NoveltyThreshold = !f.noNovelty, f.noveltyThreshold
	p.AllowFallbacks = f.allowFallbacks
	if f.changed("temperature-preset") && f.changed("temperature") {
		return p, usagef("use either --temperature-preset or --temperature, not both")
	}
	if f.changed("temperature-preset") {
		t, err := spark.Preset(f.preset)
		if err != nil {
			return p, usageError{err}
		}
		p.Temperatures = t
	}
	if f.changed("temperature") {
		if f.temperature < 0 || f.temperature > 2 {
			return p, usagef("--temperature must be within 0..2, got %g", f.temperature)
		}
		p.Temperatures = spark.FromBase(f.temperature)
	}
	if !slices.Contains(spark.Formats, f.format) {
		return p, usagef("unknown output format %q (want %s)", f.format, strings.Join(spark.Formats, ", "))
	}
	if f.timeout <= 0 {
		return p, usagef("--timeout must be positive, got %s", f.timeout)
	}
	if err := p.Validate(); err != nil {
		return p, usageError{err}
	}
	return p, nil
}

func (c *cli) sparkCmd() *cobra.Command {
	f := &sparkFlags{}
	cmd := &cobra.Command{
		Use:   "spark TOPIC [CONTEXT]",
		Short: "Generate ideas, critique them, argue for and against, improve and re-score",
		Args:  argsError(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.runSpark(cmd.Context(), args, f)
		},
	}
	f.register(cmd)
	return cmd
}

func (c *cli) runSpark(ctx context.Context, args []string, f *sparkFlags) error {
	params, err := f.params(args)
	if err != nil {
		return err
	}
	pipe, err := spark.New()
	if err != nil {
		return err
	}
	a, err := c.openApp(ctx, !f.noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	var res *spark.Result
	run, elapsed, err := c.execute(ctx, a, "spark", params, f.timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, params)
		return res, err
	})
	if err != nil {
		return err
	}
	report := spark.NewReport(res, run.ID(), a.info.Mode(), a.info.Name, a.info.Model, run.Usage(), elapsed)
	return c.writeReport(report, f.format, f.output)
}

// writeReport writes the report to path atomically, or to standard output.
func (c *cli) writeReport(r *spark.Report, format, path string) error {
	var buf bytes.Buffer
	if err := r.Write(&buf, format); err != nil {
		return err
	}
	if path == "" {
		_, err := c.stdout.Write(buf.Bytes())
		return err
	}
	if err := writeFile(path, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "madspark: wrote %s (run %s)\n", path, r.RunID)
	return nil
}
