package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/document/pdf"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
)

// literatureTTL is how long literature searches are kept in the cache.
const literatureTTL = 7 * 24 * time.Hour

func (c *cli) proposalCmd() *cobra.Command {
	d := proposal.DefaultParams()
	p := d
	var (
		profilePath, outDir, format string
		timeout                     time.Duration
		noCache                     bool
	)
	cmd := &cobra.Command{
		Use:   "proposal",
		Short: "Write a research proposal: interview → problem with real literature → objectives → methodology → data plan → quality control → PDF",
		Long: `Asks about you and your research one question at a time (or reads the answers
from --profile, a YAML or JSON file), then writes a research proposal: a problem
definition grounded in a literature search of OpenAlex, arXiv and Semantic
Scholar (and the web with TAVILY_API_KEY or BRAVE_API_KEY), SMART objectives,
a methodology, a data collection plan, and a quality-control review that sends
the proposal back for refinement until it passes or --max-refinements is spent.

Writes proposal.pdf, proposal.md and proposal.json to --output-dir (default
outputs/run_YYYYMMDD_HHMMSS).`,
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("--timeout must be positive, got %s", timeout)
			}
			if p.MaxRefinements < 0 || p.MaxRefinements > proposal.MaxRefinements {
				return usagef("--max-refinements must be 0..%d, got %d", proposal.MaxRefinements, p.MaxRefinements)
			}
			prof, source, err := c.proposalProfile(cmd.Context(), profilePath, format)
			if err != nil {
				return err
			}
			p.Profile, p.ProfileSource = prof, source
			if err := p.Validate(); err != nil {
				return usageError{err}
			}
			return c.runProposal(cmd.Context(), p, outDir, format, timeout, !noCache)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&profilePath, "profile", "", "read the interview's answers from this YAML or JSON file instead of asking")
	fs.StringVar(&outDir, "output-dir", "", "directory for proposal.pdf, proposal.md and proposal.json (default outputs/run_YYYYMMDD_HHMMSS)")
	fs.IntVar(&p.MaxRefinements, "max-refinements", d.MaxRefinements, "refinement rounds allowed when quality control fails the proposal (0-10)")
	fs.BoolVar(&p.NoSearch, "no-search", false, "write the proposal without a literature search")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	fs.StringVar(&format, "output-format", "text", "what to print: text (a summary) or json (the whole result)")
	return cmd
}

// proposalProfile reads the profile from path, or interviews the user on
// the terminal (on stderr when stdout carries JSON). It returns the
// profile and where it came from.
func (c *cli) proposalProfile(ctx context.Context, path, format string) (proposal.UserProfile, string, error) {
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return proposal.UserProfile{}, "", usagef("profile %s: %v", path, errors.Unwrap(err))
		}
		defer f.Close()
		prof, err := proposal.ParseProfile(filepath.Base(path), f)
		if err != nil {
			return prof, "", usageError{err}
		}
		return prof, filepath.Base(path), nil
	}
	var out io.Writer = c.stdout
	if format == "json" {
		out = c.stderr
	}
	prof, err := proposal.Interview(ctx, c.stdin, out)
	if errors.Is(err, context.Canceled) {
		return prof, "", err
	}
	if err != nil {
		return prof, "", usageError{err}
	}
	return prof, "interview", nil
}

// proposalSources are the literature sources of a run: the offline source
// in mock mode, else the scholarly sources and the web search configured
// in the environment, each behind the cache.
func (c *cli) proposalSources(a *app) []search.Provider {
	if a.info.Mock {
		return []search.Provider{scholar.NewOffline()}
	}
	sources := scholar.FromEnv(c.env)
	if web := search.FromEnv(c.env); web != nil {
		sources = append(sources, web)
	}
	for i, s := range sources {
		sources[i] = search.Cached(s, a.cache, literatureTTL)
	}
	return sources
}

func (c *cli) runProposal(ctx context.Context, p proposal.Params, outDir, format string, timeout time.Duration, useCache bool) error {
	font, err := c.pdfFont()
	if err != nil {
		return err
	}
	// An explicit directory is made first, so that a bad one fails before
	// any call; the default one only once there is a proposal to put in it.
	if outDir != "" {
		if _, err := makeOutputDir(outDir); err != nil {
			return usageError{err}
		}
	}
	a, err := c.openApp(ctx, useCache)
	if err != nil {
		return err
	}
	defer a.Close()
	pipe, err := proposal.New(c.proposalSources(a), c.logger)
	if err != nil {
		return err
	}
	var res *proposal.Result
	run, elapsed, err := c.execute(ctx, a, "proposal", p, timeout, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, p)
		return res, err
	})
	if err != nil {
		// A step that failed after others finished leaves their output
		// written, marked incomplete; resuming the run finishes it.
		if res != nil && res.FailedStep != "" && run != nil {
			if dir, _, werr := c.writeProposal(run, a, res, outDir, font, elapsed); werr == nil {
				fmt.Fprintf(c.stderr, "madspark: the step %s failed; the stages before it are in %s\n", res.FailedStep, dir)
				outDir = dir
			}
		}
		return resumeInto(err, cmp.Or(outDir, "DIR"))
	}
	dir, files, err := c.writeProposal(run, a, res, outDir, font, elapsed)
	if err != nil {
		return err
	}
	if format == "json" {
		_, err := c.stdout.Write(files["proposal.json"])
		return err
	}
	fmt.Fprintf(c.stdout, "\n%s\nrun %s · %s/%s · %s\nFiles: %s, %s, %s\n", res.Summary(proposalMeta(run, a)), run.ID(), a.info.Name, a.info.Model,
		withRepairs(usageLine(run, elapsed), len(res.Repairs)), filepath.Join(dir, "proposal.pdf"), filepath.Join(dir, "proposal.md"), filepath.Join(dir, "proposal.json"))
	return nil
}

func proposalMeta(run *engine.Run, a *app) proposal.Meta {
	return proposal.Meta{RunID: run.ID(), Mock: a.info.Mock, Provider: a.info.Name, Model: a.info.Model, Date: time.Now()}
}

// writeProposal writes res's files to outDir (made now when it is the
// default) and returns the directory and the files.
func (c *cli) writeProposal(run *engine.Run, a *app, res *proposal.Result, outDir string, font []byte, elapsed time.Duration) (string, map[string][]byte, error) {
	dir, err := makeOutputDir(outDir)
	if err != nil {
		return "", nil, fmt.Errorf("run %s: %w", run.ID(), err)
	}
	paths := map[string]string{
		"pdf": filepath.Join(dir, "proposal.pdf"), "markdown": filepath.Join(dir, "proposal.md"), "json": filepath.Join(dir, "proposal.json"),
	}
	files, err := res.Files(proposalMeta(run, a), font, map[string]any{
		"run_id": run.ID(), "pipeline": "proposal", "mode": a.info.Mode(), "provider": a.info.Name, "model": a.info.Model,
		"output_dir": dir, "files": paths, "usage": run.Usage(), "duration_ms": elapsed.Milliseconds(),
	})
	if err != nil {
		return "", nil, err
	}
	for name, data := range files {
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			return "", nil, fmt.Errorf("run %s: %w", run.ID(), err)
		}
	}
	return dir, files, nil
}

// withRepairs adds the number of repaired replies to a usage line.
func withRepairs(line string, n int) string { return line + repairNote(n) }

// pdfFont reads the fallback TrueType font that MADSPARK_PDF_FONT names, for
// characters the bundled fonts lack (CJK); nil when it is not set.
func (c *cli) pdfFont() ([]byte, error) {
	path := c.env("MADSPARK_PDF_FONT")
	if path == "" {
		return nil, nil
	}
	font, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("MADSPARK_PDF_FONT: %v", err)
	}
	if err := pdf.CheckFont(font); err != nil {
		return nil, usagef("MADSPARK_PDF_FONT %s: %v", path, err)
	}
	return font, nil
}
