package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/search"
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

Files go under --output-dir (default the current directory):
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
		Args: argsError(cobra.MaximumNArgs(1)),
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
	fs.StringVar(&f.p.OutputDir, "output-dir", d.OutputDir, "where analyses/ and logs/ are written")
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
	if err := checkFormat(f.format, "text", "json", "markdown"); err != nil {
		return p, err
	}
	if f.timeout <= 0 {
		return p, usagef("--timeout must be positive, got %s", f.timeout)
	}
	if f.maxConcurrent < 1 || f.maxConcurrent > 16 {
		return p, usagef("--max-concurrent must be 1..16, got %d", f.maxConcurrent)
	}
	if err := p.ValidateSettings(); err != nil {
		return p, usageError{flagNames(err)}
	}
	if err := assess.CheckPrompts(p); err != nil {
		return p, usageError{err}
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
	p, err := f.params()
	if err != nil {
		return err
	}
	var ideas []assess.IdeaLine
	if f.batch {
		file, err := os.Open(f.ideasFile)
		if err != nil {
			return usagef("--ideas-file: %v", err)
		}
		var dups []assess.IdeaLine
		ideas, dups, err = assess.ParseIdeas(file)
		file.Close()
		if err != nil {
			return usagef("--ideas-file %s: %v", f.ideasFile, err)
		}
		if len(ideas) == 0 {
			return usagef("--ideas-file %s holds no ideas", f.ideasFile)
		}
		for _, d := range dups {
			fmt.Fprintf(c.stderr, "madspark: %s line %d repeats an idea; it is assessed once\n", f.ideasFile, d.Line)
		}
	} else {
		p.Idea = args[0]
		if err := p.Validate(); err != nil {
			return usageError{err}
		}
	}
	if err := os.MkdirAll(p.OutputDir, 0o755); err != nil {
		return usagef("--output-dir: %v", err)
	}

	a, err := c.openApp(ctx, !f.noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	// Web tools: a search provider from the environment, never in mock
	// mode (which makes no network call). Said once, not per idea.
	cfg := c.assessConfig(a)
	if cfg.Searcher == nil && !p.NoWebTools {
		fmt.Fprintf(c.stderr, "madspark: %s\n", cfg.NoSearchNote)
	}
	pipe, err := assess.New(cfg)
	if err != nil {
		return err
	}
	if f.batch {
		return c.assessBatch(ctx, a, pipe, p, f, ideas)
	}

	var res *assess.Result
	run, elapsed, err := c.execute(ctx, a, "assess", p.Job(), f.timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, p)
		return res, err
	})
	if err != nil {
		return resumeInto(err, p.OutputDir)
	}
	// A synthesis that fails leaves the judged analysis written and shown;
	// "madspark assess synthesize" runs it again.
	var synth *assess.Synthesis
	var synthErr error
	if p.Mode == assess.FullEvaluation {
		synth, synthErr = c.synthesize(ctx, c, a, pipe, assess.SynthesisParams{OutputDir: p.OutputDir, Top: assess.DefaultTop, PromptsDir: p.PromptsDir}, f.timeout)
	}
	if err := c.assessOutput(f.format, run, a, res, synth, elapsed); err != nil {
		return err
	}
	if synthErr != nil {
		return fmt.Errorf("synthesis: %w (the analysis is kept; madspark assess synthesize --output-dir %s ranks it)", synthErr, shellQuote(p.OutputDir))
	}
	return nil
}

// assessOutput prints one assessment in format.
func (c *cli) assessOutput(format string, run *engine.Run, a *app, res *assess.Result, synth *assess.Synthesis, elapsed time.Duration) error {
	switch format {
	case "json":
		env := map[string]any{
			"run_id": run.ID(), "pipeline": "assess", "mode": a.info.Mode(), "provider": a.info.Name, "model": a.info.Model,
			"result": res, "repairs": res.Repairs, "usage": run.Usage(), "duration_ms": elapsed.Milliseconds(),
		}
		if synth != nil {
			env["synthesis"] = synth
		}
		return writeJSON(c, env)
	case "markdown":
		_, err := io.WriteString(c.stdout, res.Markdown())
		return err
	}
	fmt.Fprintf(c.stdout, "%s\nrun %s · %s/%s · %s\n", res.Report(), run.ID(), a.info.Name, a.info.Model, withRepairs(usageLine(run, elapsed), len(res.Repairs)))
	if synth != nil {
		fmt.Fprintf(c.stdout, "\n%s", synth.Report())
	}
	return nil
}

// assessBatch assesses ideas as a batch of assess runs on the job queue,
// worked in this process at most f.maxConcurrent at a time. Each
// succeeded idea's files go under p.OutputDir in the seed's layout; a
// failed idea is reported and the others go on; the batch fails (exit 1)
// when any idea did.
func (c *cli) assessBatch(ctx context.Context, a *app, pipe *assess.Pipeline, p assess.Params, f *assessFlags, ideas []assess.IdeaLine) error {
	reg, err := c.registry(a)
	if err != nil {
		return err
	}
	base, err := json.Marshal(p.Job())
	if err != nil {
		return err
	}
	in := &batch.Input{}
	for _, idea := range ideas {
		var obj map[string]any
		if err := json.Unmarshal(base, &obj); err != nil {
			return err
		}
		obj["idea"] = idea.Idea
		in.Rows = append(in.Rows, batch.Item(reg, "assess", idea.Line, obj))
	}
	o := batchOptions{concurrency: f.maxConcurrent, timeout: f.timeout, quiet: true,
		onItem: func(it madspark.BatchItem, done, total int) {
			if it.Status == madspark.RunSucceeded {
				fmt.Fprintf(c.stderr, "madspark: [%d/%d] done   %s\n", done, total, assess.Slug(it.Topic))
			} else {
				fmt.Fprintf(c.stderr, "madspark: [%d/%d] failed %q: %s\n", done, total, short(it.Topic, 60), batch.ItemStatus(it))
			}
		}}
	start := time.Now()
	svc, b, waitErr, err := c.runBatch(ctx, a, reg, "assess", filepath.Base(f.ideasFile), in, o)
	if err != nil {
		return err
	}
	// The analyses in the seed's layout; the run's own report and result
	// stay with the run.
	put := func(name string, data []byte) error {
		_, rest, _ := strings.Cut(name, "/")
		if !strings.HasPrefix(rest, "analyses/") {
			return nil
		}
		return writeFile(filepath.Join(p.OutputDir, filepath.FromSlash(rest)), data)
	}
	res, err := svc.Files(context.WithoutCancel(ctx), b, put)
	if err != nil {
		return err
	}
	var usage llm.Usage
	for _, it := range b.Items {
		if rec, err := a.db.Run(context.WithoutCancel(ctx), it.RunID); err == nil && it.RunID != "" {
			usage.Add(rec.Usage)
		}
	}
	var synth *assess.Synthesis
	var synthErr error
	if p.Mode == assess.FullEvaluation && res.Succeeded > 0 && waitErr == nil {
		quiet := *c
		quiet.stderr, quiet.progress = io.Discard, false
		synth, synthErr = c.synthesize(ctx, &quiet, a, pipe, assess.SynthesisParams{OutputDir: p.OutputDir, Top: assess.DefaultTop, PromptsDir: p.PromptsDir}, f.timeout)
	}
	elapsed := time.Since(start)
	if f.format == "json" {
		out := struct {
			*batch.Results
			Usage      llm.Usage         `json:"usage"`
			DurationMS int64             `json:"duration_ms"`
			Synthesis  *assess.Synthesis `json:"synthesis,omitempty"`
		}{res, usage, elapsed.Milliseconds(), synth}
		if err := writeJSON(c, out); err != nil {
			return err
		}
	} else {
		if err := c.batchSummary(res, p.OutputDir, usage, elapsed); err != nil {
			return err
		}
		if synth != nil {
			fmt.Fprintf(c.stdout, "\n%s", synth.Report())
		}
	}
	switch {
	case waitErr != nil:
		return waitErr
	case synthErr != nil:
		return fmt.Errorf("synthesis: %w", synthErr)
	case res.Failed > 0:
		return fmt.Errorf("%d of %d ideas failed (see the summary above)", res.Failed, res.Total)
	}
	return nil
}

// batchSummary prints one line per idea and the totals.
func (c *cli) batchSummary(res *batch.Results, dir string, usage llm.Usage, elapsed time.Duration) error {
	w := c.stdout
	if res.Mode == "mock" {
		fmt.Fprintln(w, assess.MockNote)
	}
	fmt.Fprintf(w, "BATCH: %d ideas, %d succeeded, %d failed (%s)\n\n", res.Total, res.Succeeded, res.Failed, elapsed.Round(100*time.Millisecond))
	for _, it := range res.Items {
		if it.Status != string(madspark.RunSucceeded) {
			fmt.Fprintf(w, "  ✗ line %d %q: %s\n", it.Line, short(it.Topic, 60), oneLine(it.Error))
			continue
		}
		var r assess.Result
		if err := json.Unmarshal(it.Result, &r); err != nil {
			return fmt.Errorf("line %d: result: %w", it.Line, err)
		}
		line := fmt.Sprintf("  ✓ %-50s %d iteration(s)", r.Slug, len(r.Iterations))
		if r.Mode.Reviews() {
			line += map[bool]string{true: ", approved", false: ", not approved"}[r.Approved]
		}
		if ev := r.Evaluation; ev != nil {
			line += fmt.Sprintf(", %.1f/10 %s", ev.WeightedScore, ev.OverallGrade)
		}
		fmt.Fprintf(w, "%s  → %s\n", line, filepath.Join(dir, "analyses", r.Slug, "analysis.md"))
	}
	fmt.Fprintf(w, "\n%s\n", usage)
	return nil
}

func short(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (c *cli) synthesizeCmd() *cobra.Command {
	var (
		in         = assess.SynthesisParams{OutputDir: ".", Top: assess.DefaultTop}
		format     string
		timeout    time.Duration
		noCache    bool
		promptsDir string
	)
	cmd := &cobra.Command{
		Use:   "synthesize",
		Short: "Rank every judged analysis under --output-dir and explain the top ones",
		Long: `Reads analyses/*/evaluation.json under --output-dir, ranks the ideas by the
judges' weighted scores (computed, not asked of a model), and has the
synthesizer explain the top --top in one call. Writes reports/synthesis.md
and reports/synthesis.json.`,
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.PromptsDir = promptsDir
			if err := in.Validate(); err != nil {
				return usageError{flagNames(err)}
			}
			if err := checkFormat(format, "text", "json", "markdown"); err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			ranked, _, err := assess.LoadEvaluations(in.OutputDir)
			if err != nil {
				return err
			}
			if len(ranked) == 0 {
				return usagef("no judged analyses under %s/analyses: run madspark assess --judge first", in.OutputDir)
			}
			if err := assess.CheckSynthesisPrompts(in.PromptsDir); err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			a, err := c.openApp(ctx, !noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			pipe, err := assess.New(assess.Config{Mock: a.info.Mock, Logger: c.logger})
			if err != nil {
				return err
			}
			s, err := c.synthesize(ctx, c, a, pipe, in, timeout)
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
	cmd.SetFlagErrorFunc(flagError)
	fs := cmd.Flags()
	fs.StringVar(&in.OutputDir, "output-dir", in.OutputDir, "the directory whose analyses/ are compared; the report goes to its reports/")
	fs.IntVar(&in.Top, "top", in.Top, "how many of the best ideas the report explains (1-10)")
	fs.StringVar(&promptsDir, "prompts-dir", "", "directory of prompt files that replace the built-in ones")
	fs.StringVar(&format, "output-format", "text", "text (the ranking), json or markdown (the report)")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	return cmd
}

// synthesize runs a synthesis as its own recorded run, through runner (c,
// or a quiet copy in a batch).
func (c *cli) synthesize(ctx context.Context, runner *cli, a *app, pipe *assess.Pipeline, in assess.SynthesisParams, timeout time.Duration) (*assess.Synthesis, error) {
	var s *assess.Synthesis
	_, _, err := runner.execute(ctx, a, "assess-synthesis", in, timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		s, err = pipe.Synthesize(ctx, r, in)
		return s, err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// assessConfig is the assess pipeline's configuration: web search when a
// search provider is configured and the run is live.
func (c *cli) assessConfig(a *app) assess.Config {
	cfg := assess.Config{Mock: a.info.Mock, Logger: c.logger}
	switch s := search.FromEnv(c.env); {
	case a.info.Mock:
		cfg.NoSearchNote = "web tools off in mock mode"
	case s == nil:
		cfg.NoSearchNote = assess.NoSearchNote
	default:
		cfg.Searcher = search.Cached(s, a.cache, 24*time.Hour)
	}
	return cfg
}
