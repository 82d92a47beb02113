package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/pipeline/assess"
)

// assessFlags are the flags of "madspark assess".
type assessFlags struct {
	p                     assess.Params
	withReview, withFacts bool
	judge, full           bool
	batch                 bool
	ideasFile             string
	maxConcurrent         int
	format                string
	timeout               time.Duration
	noCache               bool
}

func (c *cli) assessCmd() *cobra.Command {
	d := assess.DefaultParams()
	f := &assessFlags{p: d}
	cmd := &cobra.Command{
		Use:   "assess [IDEA]",
		Short: "Assess a business idea: market analysis, reviewer iterations, fact check, judge, synthesis",
		Long: `Turns a one-line business idea into a market analysis written by an analyst
and, with --with-review, revised until a reviewer approves it (at most
--max-iterations times). --with-review-and-fact-check adds a fact checker
beside the reviewer; both must approve. --judge grades the final analysis on
seven criteria; --full also ranks every judged analysis so far.

Files go under --output-dir (default assess/ under the outputs directory,
$MADSPARK_OUTPUT_DIR or ./outputs):
  analyses/{slug}/iterations/iteration_N.md, reviewer_feedback_iteration_N.json
  analyses/{slug}/analysis.md (the latest iteration), metadata.json, evaluation.json
  logs/runs/{timestamp}_{slug}/messages.jsonl, run_summary.json

With TAVILY_API_KEY or BRAVE_API_KEY set the analyst researches the web first
(at most --max-websearches searches) and may cite only the pages found.

--batch --ideas-file FILE assesses every idea in FILE (one per line, or a
markdown list), --max-concurrent at a time; one idea failing does not stop
the others.`,
		Example: `  madspark assess "A subscription service for refurbished lab equipment" --with-review
  madspark assess --batch --ideas-file ideas.md --max-concurrent 3 --judge
  madspark assess synthesize`,
		Args: func(cmd *cobra.Command, args []string) error {
			// "madspark assess synthesise" is a slip, not an idea.
			if len(args) > 0 {
				if err := cmdline.NotCommand(cmd, args[0], false); err != nil {
					return err
				}
			}
			return cmdline.Args(cobra.MaximumNArgs(1))(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.runAssess(cmd.Context(), f, args)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.withReview, "with-review", false, "revise the analysis until the reviewer approves it")
	fs.BoolVar(&f.withFacts, "with-review-and-fact-check", false, "review, and fact-check each iteration beside the reviewer; both must approve")
	fs.BoolVar(&f.judge, "judge", false, "review, then grade the final analysis on seven criteria (evaluation.json)")
	fs.BoolVar(&f.full, "full", false, "full evaluation: review, judge, then rank every judged analysis (reports/synthesis.md)")
	fs.IntVar(&f.p.MaxIterations, "max-iterations", d.MaxIterations, "most analyst ⇄ reviewer iterations (1-5)")
	fs.IntVar(&f.p.MinWords, "min-words", d.MinWords, "shortest acceptable analysis, in words")
	fs.StringVar(&f.p.Strictness, "strictness", d.Strictness, "reviewer strictness: lenient, normal or strict")
	fs.BoolVar(&f.p.NoWebTools, "no-web-tools", false, "no web research even when a search key is set")
	fs.IntVar(&f.p.MaxWebsearches, "max-websearches", d.MaxWebsearches, "most web searches the analyst may run (1-20)")
	fs.StringVar(&f.p.AnalystPrompt, "analyst-prompt", "", "analyst system prompt: a built-in name (concise.md, looked up under agents/analyst/ then experimental/analyst/) or a path (./my.md)")
	fs.StringVar(&f.p.ReviewerPrompt, "reviewer-prompt", "", "reviewer system prompt: a name under agents/reviewer/ or a path")
	fs.StringVar(&f.p.PromptsDir, "prompts-dir", "", "directory of prompt files that replace the built-in ones (same layout: agents/<agent>/..., shared/...)")
	fs.StringVar(&f.p.OutputDir, "output-dir", "", "where analyses/ and logs/ are written (default assess/ under $MADSPARK_OUTPUT_DIR, else outputs)")
	fs.BoolVar(&f.batch, "batch", false, "assess every idea of --ideas-file")
	fs.StringVar(&f.ideasFile, "ideas-file", "", "file of ideas for --batch: one per line, or a markdown list")
	fs.IntVar(&f.maxConcurrent, "max-concurrent", 3, "ideas assessed at once in a batch (1-16)")
	fs.StringVar(&f.format, "output-format", "text", "text (a summary), json (the whole result) or markdown (the final analysis)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "give up on an idea after this long")
	fs.BoolVar(&f.noCache, "no-cache", false, "do not use the response cache")
	cmd.AddCommand(c.synthesizeCmd())
	return cmd
}

// params turns the flags into validated parameters for idea.
func (f *assessFlags) params() (assess.Params, error) {
	p := f.p
	switch {
	case f.full:
		p.Mode = assess.FullEvaluation
	case f.judge:
		p.Mode = assess.AnalyzeReviewAndJudge
	case f.withReview || f.withFacts:
		p.Mode = assess.AnalyzeAndReview
	default:
		p.Mode = assess.Analyze
	}
	p.FactCheck = f.withFacts
	if err := cmdline.CheckFormat(f.format, "text", "json", "markdown"); err != nil {
		return p, err
	}
	if err := cmdline.CheckTimeout(f.timeout); err != nil {
		return p, err
	}
	if f.maxConcurrent < 1 || f.maxConcurrent > 16 {
		return p, usagef("--max-concurrent must be 1..16, got %d", f.maxConcurrent)
	}
	if err := p.ValidateSettings(); err != nil {
		return p, usageError{Err: flagNames(err)}
	}
	if err := assess.CheckPrompts(p); err != nil {
		return p, usageError{Err: err}
	}
	return p, nil
}

// flagNames says the parameter names of a validation error as the flags
// that set them.
func flagNames(err error) error {
	r := strings.NewReplacer("max_iterations", "--max-iterations", "min_words", "--min-words", "strictness", "--strictness",
		"max_websearches", "--max-websearches", "output_dir", "--output-dir", "top must", "--top must")
	return errors.New(r.Replace(err.Error()))
}

func (c *cli) runAssess(ctx context.Context, f *assessFlags, args []string) error {
	switch {
	case f.batch && len(args) > 0:
		return usagef("--batch takes its ideas from --ideas-file, not from the command line")
	case f.batch && f.ideasFile == "":
		return usagef("--batch needs --ideas-file FILE")
	case !f.batch && f.ideasFile != "":
		return usagef("--ideas-file needs --batch")
	case !f.batch && len(args) == 0:
		return usagef("an idea is required: madspark assess \"IDEA\" (or --batch --ideas-file FILE)")
	case f.batch && f.p.PromptsDir != "":
		return usagef("--prompts-dir applies to one idea; a batch's runs use the built-in prompts (choose them with --analyst-prompt and --reviewer-prompt)")
	}
	if f.p.OutputDir == "" {
		f.p.OutputDir = app.AssessDir(c.env)
	}
	p, err := f.params()
	if err != nil {
		return err
	}
	var ideas []assess.IdeaLine
	if f.batch {
		if ideas, err = app.ReadIdeas(f.ideasFile, c.stderr); err != nil {
			return err
		}
	} else {
		p.Idea = args[0]
		if err := p.Validate(); err != nil {
			return usageError{Err: err}
		}
	}
	if err := os.MkdirAll(p.OutputDir, 0o755); err != nil {
		return usagef("--output-dir: %v", err)
	}
	a, err := c.open(ctx, f.noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	if f.batch {
		return c.assessBatch(ctx, a, p, f, ideas)
	}
	out, err := a.Assess(ctx, p, f.timeout)
	if err != nil {
		return err
	}
	res, run := out.Result, out.Run
	switch f.format {
	case "json":
		env := a.Envelope(run, "assess", res, out.Elapsed)
		env["repairs"] = res.Repairs
		if out.Synthesis != nil {
			env["synthesis"] = out.Synthesis
		}
		err = writeJSON(c, env)
	case "markdown":
		_, err = io.WriteString(c.stdout, res.Markdown())
	default:
		fmt.Fprintf(c.stdout, "%s\nrun %s · %s/%s · %s\n", res.Report(), run.ID(), a.Info.Name, a.Info.Model, app.UsageLine(run, out.Elapsed)+app.RepairNote(len(res.Repairs)))
		if out.Synthesis != nil {
			fmt.Fprintf(c.stdout, "\n%s", out.Synthesis.Report())
		}
	}
	if err != nil {
		return err
	}
	return out.SynthesisErr
}

// assessBatch assesses ideas as a batch (see app.AssessBatch) and prints
// one line per idea and the totals; it fails (exit 1) when any idea did.
func (c *cli) assessBatch(ctx context.Context, a *app.App, p assess.Params, f *assessFlags, ideas []assess.IdeaLine) error {
	onItem := func(it madspark.BatchItem, done, total int) {
		if it.Status == madspark.RunSucceeded {
			fmt.Fprintf(c.stderr, "madspark: [%d/%d] done   %s\n", done, total, assess.Slug(it.Topic))
		} else {
			fmt.Fprintf(c.stderr, "madspark: [%d/%d] failed %q: %s\n", done, total, shorten(it.Topic, 60), batch.ItemStatus(it))
		}
	}
	show, clear := c.batchDisplay(onItem)
	out, err := a.AssessBatch(ctx, p, filepath.Base(f.ideasFile), ideas, f.maxConcurrent, f.timeout, show)
	clear()
	if err != nil {
		return err
	}
	if f.format == "json" {
		if err := writeJSON(c, out); err != nil {
			return err
		}
		return out.Err
	}
	if err := out.WriteSummary(c.stdout, p.OutputDir); err != nil {
		return err
	}
	return out.Err
}

func (c *cli) synthesizeCmd() *cobra.Command {
	var (
		in         = assess.SynthesisParams{Top: assess.DefaultTop}
		format     string
		timeout    time.Duration
		noCache    bool
		promptsDir string
	)
	cmd := &cobra.Command{
		Use:   "synthesize",
		Short: "Rank every judged analysis under --output-dir and explain the top ones",
		Long: `Reads analyses/*/evaluation.json under --output-dir (default assess/ under
the outputs directory, where assess writes), ranks the ideas by the
judges' weighted scores (computed, not asked of a model), and has the
synthesizer explain the top --top in one call. Writes reports/synthesis.md
and reports/synthesis.json.`,
		Args: cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.PromptsDir = promptsDir
			if in.OutputDir == "" {
				in.OutputDir = app.AssessDir(c.env)
			}
			if err := in.Validate(); err != nil {
				return usageError{Err: flagNames(err)}
			}
			if err := cmdline.CheckFormat(format, "text", "json", "markdown"); err != nil {
				return err
			}
			if err := cmdline.CheckTimeout(timeout); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.open(ctx, noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			s, err := a.Synthesize(ctx, in, timeout)
			if err != nil {
				return err
			}
			switch format {
			case "json":
				return writeJSON(c, s)
			case "markdown":
				_, err := io.WriteString(c.stdout, s.Markdown())
				return err
			}
			_, err = io.WriteString(c.stdout, s.Report())
			return err
		},
	}
	cmd.SetFlagErrorFunc(cmdline.FlagError)
	fs := cmd.Flags()
	fs.StringVar(&in.OutputDir, "output-dir", "", "the directory whose analyses/ are compared; the report goes to its reports/ (default assess/ under $MADSPARK_OUTPUT_DIR, else outputs)")
	fs.IntVar(&in.Top, "top", in.Top, "how many of the best ideas the report explains (1-10)")
	fs.StringVar(&promptsDir, "prompts-dir", "", "directory of prompt files that replace the built-in ones")
	fs.StringVar(&format, "output-format", "text", "text (the ranking), json or markdown (the report)")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	return cmd
}
