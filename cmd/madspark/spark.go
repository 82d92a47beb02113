package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/bookmark"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/pipeline/spark"
)

// sparkFlags are the spark pipeline's flags, shared by "madspark TOPIC" and
// "madspark spark TOPIC".
type sparkFlags struct {
	p                   spark.Params
	preset              string
	temperature         float64
	noNovelty           bool
	format, output      string
	timeout             time.Duration
	noCache             bool
	remix, bookmarkTags []string
	changed             func(string) bool
}

func (f *sparkFlags) register(cmd *cobra.Command) {
	f.p = spark.DefaultParams()
	fs := cmd.Flags()
	fs.IntVar(&f.p.NumCandidates, "num-candidates", f.p.NumCandidates, "number of ideas to generate (1-20)")
	fs.IntVar(&f.p.NumTopCandidates, "num-top-candidates", f.p.NumTopCandidates, "number of best ideas to argue over and improve (1-5)")
	fs.StringVar(&f.preset, "temperature-preset", "", "role temperatures: "+strings.Join(spark.PresetNames(), "|"))
	fs.Float64Var(&f.temperature, "temperature", 0, "generation temperature (0-2); the other roles keep their ratio to it")
	fs.BoolVar(&f.p.EnhancedReasoning, "enhanced-reasoning", false, "add a multi-dimensional evaluation on 7 dimensions")
	fs.BoolVar(&f.p.LogicalInference, "logical-inference", false, "add a logical analysis of each top idea")
	fs.StringVar(&f.p.InferenceType, "inference-type", spark.FullReasoning, "kind of logical analysis (turns --logical-inference on): "+strings.Join(spark.InferenceTypes, ", "))
	fs.Float64Var(&f.p.NoveltyThreshold, "novelty-threshold", f.p.NoveltyThreshold, "similarity (0-1] at which an idea counts as a near-duplicate")
	fs.BoolVar(&f.noNovelty, "no-novelty-filter", false, "keep near-duplicate ideas")
	fs.StringVar(&f.format, "output-format", "detailed", "output format: "+strings.Join(spark.Formats, "|"))
	fs.StringVarP(&f.output, "output", "o", "", "write the result to FILE instead of standard output")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&f.noCache, "no-cache", false, "do not use the response cache")
	fs.BoolVar(&f.p.AllowFallbacks, "allow-fallbacks", false, "on a failed stage use marked default values instead of failing")
	fs.StringSliceVar(&f.remix, "remix", nil, "build on these bookmarks (IDs, repeated or comma-separated); TOPIC and CONTEXT default to the first one's")
	fs.StringSliceVar(&f.bookmarkTags, "bookmark-tags", nil, "bookmark the run's candidates with these tags (near-duplicates of kept bookmarks are reported, not saved)")
	f.changed = fs.Changed
}

// params turns the flags and arguments into validated parameters; seeds
// are the ideas of a remix. Without a topic (args empty), everything else
// is checked.
func (f *sparkFlags) params(args []string, seeds []string) (spark.Params, error) {
	p := f.p
	validate := p.Validate
	if len(args) == 0 {
		validate = p.ValidateSettings
	}
	args = append(args, "", "")
	p.Topic, p.Context, p.SeedIdeas, p.NoveltyFilter = args[0], args[1], seeds, !f.noNovelty
	var err error
	switch {
	case f.changed("temperature-preset") && f.changed("temperature"):
		err = errors.New("use either --temperature-preset or --temperature, not both")
	case f.changed("temperature-preset"):
		p.Temperatures, err = spark.Preset(f.preset)
	case f.changed("temperature") && !(f.temperature >= 0 && f.temperature <= 2): // NaN too
		err = fmt.Errorf("--temperature must be within 0..2, got %g", f.temperature)
	case f.changed("temperature"):
		p.Temperatures = spark.FromBase(f.temperature)
	}
	// Asking for a kind of logical analysis asks for the analysis.
	if err == nil && f.changed("inference-type") {
		if f.changed("logical-inference") && !p.LogicalInference {
			err = errors.New("--inference-type asks for a logical analysis, which --logical-inference=false turns off; drop one of them")
		}
		p.LogicalInference = true
	}
	if err != nil {
		return p, usageError{Err: err}
	}
	if err := cmdline.CheckFormat(f.format, spark.Formats...); err != nil {
		return p, err
	}
	if err := cmdline.CheckOutput(f.output); err != nil {
		return p, err
	}
	if err := cmdline.CheckTimeout(f.timeout); err != nil {
		return p, err
	}
	if err := validate(); err != nil {
		return p, usageError{Err: err}
	}
	return p, nil
}

func (c *cli) sparkCmd() *cobra.Command {
	f := &sparkFlags{}
	cmd := &cobra.Command{
		Use:   "spark TOPIC [CONTEXT]",
		Short: "Generate ideas, critique them, argue for and against, improve and re-score",
		Long: `Generates ideas for TOPIC within CONTEXT, critiques them, argues for and
against the best, improves them and scores the improvements.

--remix ID... builds on bookmarked ideas (madspark bookmarks list): they
become the run's seed ideas, and TOPIC and CONTEXT default to the first
bookmark's. --bookmark-tags T... bookmarks the run's candidates with those
tags; one near-identical to a kept bookmark is reported and not saved.`,
		Args: topicArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.runSpark(cmd.Context(), args, f)
		},
	}
	f.register(cmd)
	return cmd
}

func (c *cli) runSpark(ctx context.Context, args []string, f *sparkFlags) error {
	if len(args) == 0 && len(f.remix) == 0 {
		return usagef("a topic is required: madspark spark TOPIC [CONTEXT], or --remix BOOKMARK_ID…")
	}
	if len(f.remix) > bookmark.MaxRemix {
		return usagef("--remix builds on at most %d bookmarks, got %d", bookmark.MaxRemix, len(f.remix))
	}
	tags, err := checkTags("--bookmark-tags", f.bookmarkTags)
	if err != nil {
		return err
	}
	// Everything but the topic is checked before the database is opened.
	if _, err := f.params(nil, nil); err != nil {
		return err
	}
	a, err := c.open(ctx, f.noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	bs, err := a.Remix(ctx, f.remix)
	if err != nil {
		return err
	}
	if len(bs) > 0 { // TOPIC and CONTEXT default to the first bookmark's
		args = append(args, []string{bs[0].Topic, bs[0].Context}[min(len(args), 2):]...)
	}
	params, err := f.params(args, bookmark.SeedIdeas(bs))
	if err != nil {
		return err
	}
	report, run, err := a.Spark(ctx, params, f.timeout)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, f.format); err != nil {
		return err
	}
	if err := c.emit(buf.Bytes(), f.output, " (run "+run.ID()+")"); err != nil {
		return fmt.Errorf("%w (run %s succeeded and is kept: madspark runs show %s --output-format %s)", err, run.ID(), run.ID(), f.format)
	}
	if f.changed("bookmark-tags") {
		rec := run.Record()
		return a.BookmarkCandidates(ctx, &rec, tags)
	}
	return nil
}
