package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/pipeline/proposal"
)

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
run_YYYYMMDD_HHMMSS under the outputs directory, $MADSPARK_OUTPUT_DIR or
./outputs).`,
		Args: cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(format, "text", "json"); err != nil {
				return err
			}
			if err := cmdline.CheckTimeout(timeout); err != nil {
				return err
			}
			if p.MaxRefinements < 0 || p.MaxRefinements > proposal.MaxRefinements {
				return usagef("--max-refinements must be 0..%d, got %d", proposal.MaxRefinements, p.MaxRefinements)
			}
			var questions io.Writer = c.stdout
			if format == "json" {
				questions = c.stderr // stdout carries the JSON
			}
			prof, source, err := app.ProposalProfile(cmd.Context(), profilePath, c.stdin, questions)
			if err != nil {
				return err
			}
			p.Profile, p.ProfileSource = prof, source
			if err := p.Validate(); err != nil {
				return usageError{Err: err}
			}
			return c.runProposal(cmd.Context(), p, outDir, format, timeout, noCache)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&profilePath, "profile", "", "read the interview's answers from this YAML or JSON file instead of asking")
	fs.StringVar(&outDir, "output-dir", "", "directory for proposal.pdf, proposal.md and proposal.json (default run_YYYYMMDD_HHMMSS under $MADSPARK_OUTPUT_DIR, else outputs)")
	fs.IntVar(&p.MaxRefinements, "max-refinements", d.MaxRefinements, "refinement rounds allowed when quality control fails the proposal (0-10)")
	fs.BoolVar(&p.NoSearch, "no-search", false, "write the proposal without a literature search")
	fs.DurationVar(&timeout, "timeout", 30*time.Minute, "give up on the whole run after this long")
	fs.BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	fs.StringVar(&format, "output-format", "text", "what to print: text (a summary) or json (the whole result)")
	return cmd
}

func (c *cli) runProposal(ctx context.Context, p proposal.Params, outDir, format string, timeout time.Duration, noCache bool) error {
	a, err := c.open(ctx, noCache)
	if err != nil {
		return err
	}
	defer a.Close()
	out, err := a.Proposal(ctx, p, outDir, timeout)
	if err != nil {
		return err
	}
	if format == "json" {
		_, err := c.stdout.Write(out.Files["proposal.json"])
		return err
	}
	fmt.Fprintf(c.stdout, "\n%s\nrun %s · %s/%s · %s\nFiles: %s, %s, %s\n", out.Result.Summary(out.Meta), out.Run.ID(), a.Info.Name, a.Info.Model,
		app.UsageLine(out.Run, out.Elapsed)+app.RepairNote(len(out.Result.Repairs)), filepath.Join(out.Dir, "proposal.pdf"), filepath.Join(out.Dir, "proposal.md"), filepath.Join(out.Dir, "proposal.json"))
	return nil
}
