package assess

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/madspark/madspark/document"
)

// MockNote heads every rendering of mock data.
const MockNote = "MOCK DATA: generated offline by the mock provider, not by a language model."

// Report renders the result as a readable summary: the loop iteration by
// iteration, the verdicts, the grades and where the files are.
func (res *Result) Report() string {
	var b strings.Builder
	if res.Mock {
		b.WriteString(MockNote + "\n")
	}
	fmt.Fprintf(&b, "IDEA ASSESSMENT\nIdea: %s\nSlug: %s\nMode: %s", res.Idea, res.Slug, res.Mode)
	if res.FactCheck {
		b.WriteString(" + fact check")
	}
	if res.Mode.Reviews() {
		fmt.Fprintf(&b, " (reviewer %s)", res.Strictness)
	}
	b.WriteString("\n")
	if res.WebTools {
		fmt.Fprintf(&b, "Web research: %d searches, %d sources\n", len(res.Queries), len(res.Sources))
	}
	if res.WebNote != "" {
		fmt.Fprintf(&b, "Web research: %s\n", res.WebNote)
	}
	b.WriteString("\nITERATIONS\n")
	at := func(rel string) string { return filepath.Join(res.OutputDir, filepath.FromSlash(rel)) }
	for _, it := range res.Iterations {
		fmt.Fprintf(&b, "%d. %d words", it.Number, it.Words)
		if it.Short {
			b.WriteString(" (below the word target)")
		}
		fmt.Fprintf(&b, " → %s", at(it.File))
		if it.Feedback != nil {
			fmt.Fprintf(&b, "\n   reviewer: %s — %s", it.Feedback.IterationRecommendation, oneLine(it.Feedback.IterationReason))
			for _, c := range it.Feedback.CriticalIssues {
				fmt.Fprintf(&b, "\n     • [%s] %s", c.Section, oneLine(c.Issue))
			}
		}
		if it.FactCheck != nil {
			fmt.Fprintf(&b, "\n   fact check: %s — %d claims checked, %d to fix", it.FactCheck.Verdict, len(it.FactCheck.Claims), len(it.FactCheck.Problems()))
			for _, c := range it.FactCheck.Problems() {
				fmt.Fprintf(&b, "\n     • [%s] %s (%s)", c.Section, short(c.Claim, 100), c.Status)
			}
		}
		b.WriteString("\n")
	}
	switch res.StopReason {
	case StopApproved:
		fmt.Fprintf(&b, "\nApproved after %d iteration(s).\n", len(res.Iterations))
	case StopMaxIterations:
		fmt.Fprintf(&b, "\nNot approved after %d iteration(s), the limit (--max-iterations).\n", len(res.Iterations))
	}
	if ev := res.Evaluation; ev != nil {
		fmt.Fprintf(&b, "\nEVALUATION: %.1f/10, grade %s, recommendation %s\n", ev.WeightedScore, ev.OverallGrade, ev.Recommendation)
		for _, c := range Criteria {
			g, _ := ev.Grades.ByKey(c.Key)
			fmt.Fprintf(&b, "  %-22s %s  (weight %.2f) %s\n", c.Title, g.Grade, c.Weight, short(g.Rationale, 110))
		}
		fmt.Fprintf(&b, "  %s\n", oneLine(ev.Summary))
	}
	f := res.Files
	fmt.Fprintf(&b, "\nFILES\n  analysis:   %s\n  metadata:   %s\n", at(f.Analysis), at(f.Metadata))
	if f.Evaluation != "" {
		fmt.Fprintf(&b, "  evaluation: %s\n", at(f.Evaluation))
	}
	fmt.Fprintf(&b, "  log:        %s\n", at(f.LogDir))
	return b.String()
}

// Markdown returns the final analysis, headed by the mock note for mock
// data.
func (res *Result) Markdown() string {
	final := res.Final()
	if final == nil {
		return ""
	}
	if res.Mock && !strings.Contains(final.Analysis, MockNote) {
		return "> " + MockNote + "\n\n" + final.Analysis + "\n"
	}
	return final.Analysis + "\n"
}

// Markdown renders the synthesis report: the top ideas and why, the whole
// ranking, the patterns and the recommendation.
func (s *Synthesis) Markdown() string {
	var b strings.Builder
	if s.Mock {
		fmt.Fprintf(&b, "> %s\n\n", MockNote)
	}
	fmt.Fprintf(&b, "# Synthesis of %d judged ideas\n\n_Generated %s. The ranking is computed from the judges' weighted scores (weights below); the text explains it._\n\n",
		len(s.Ranking), s.GeneratedAt.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "## Overview\n\n%s\n\n## Top %d\n\n", s.Narrative.Overview, s.Top)
	why := map[string]string{}
	for _, t := range s.Narrative.Top {
		why[t.Slug] = t.Why
	}
	for _, r := range s.Ranking[:s.Top] {
		fmt.Fprintf(&b, "### %d. %s\n\nScore %.1f/10 · grade %s · %s · [analysis](../analyses/%s/analysis.md)\n\n%s\n\n",
			r.Rank, document.Escape(r.Idea), r.WeightedScore, r.OverallGrade, r.Recommendation, r.Slug, why[r.Slug])
	}
	b.WriteString("## Ranking\n\n| # | Idea | Score | Grade |")
	for _, c := range Criteria {
		fmt.Fprintf(&b, " %s |", c.Title)
	}
	b.WriteString(" Recommendation |\n|---|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(Criteria)))
	b.WriteString("---|\n")
	for _, r := range s.Ranking {
		fmt.Fprintf(&b, "| %d | %s | %.1f | %s |", r.Rank, document.Escape(r.Idea), r.WeightedScore, r.OverallGrade)
		for _, c := range Criteria {
			g, _ := r.Grades.ByKey(c.Key)
			fmt.Fprintf(&b, " %s |", g.Grade)
		}
		fmt.Fprintf(&b, " %s |\n", r.Recommendation)
	}
	if len(s.Narrative.Patterns) > 0 {
		b.WriteString("\n## Patterns\n\n")
		for _, p := range s.Narrative.Patterns {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	fmt.Fprintf(&b, "\n## Recommendation\n\n%s\n\n## Weights\n\n", s.Narrative.Recommendation)
	for _, c := range Criteria {
		fmt.Fprintf(&b, "- %s: %.2f\n", c.Title, c.Weight)
	}
	b.WriteString("\nGrades count A 4, B 3, C 2, D 1, F 0; the weighted sum is scaled to 0-10.\n")
	if len(s.Skipped) > 0 {
		b.WriteString("\n## Skipped\n\n")
		for _, sk := range s.Skipped {
			fmt.Fprintf(&b, "- %s: %s\n", sk.File, sk.Reason)
		}
	}
	return b.String()
}

// Report renders the synthesis as a short text summary.
func (s *Synthesis) Report() string {
	var b strings.Builder
	if s.Mock {
		b.WriteString(MockNote + "\n")
	}
	fmt.Fprintf(&b, "SYNTHESIS of %d judged ideas\n\n", len(s.Ranking))
	why := map[string]string{}
	for _, t := range s.Narrative.Top {
		why[t.Slug] = t.Why
	}
	for _, r := range s.Ranking {
		fmt.Fprintf(&b, "%2d. %-50s %4.1f  %s  %s\n", r.Rank, short(r.Idea, 50), r.WeightedScore, r.OverallGrade, r.Recommendation)
		if w := why[r.Slug]; w != "" {
			fmt.Fprintf(&b, "    %s\n", short(w, 200))
		}
	}
	fmt.Fprintf(&b, "\n%s\n\nReport: %s\n", oneLine(s.Narrative.Recommendation), filepath.Join(s.OutputDir, filepath.FromSlash(s.Files.Report)))
	if n := len(s.Repairs); n > 0 {
		fmt.Fprintf(&b, "Repairs: %d to the synthesizer's reply (listed in %s)\n", n, filepath.Join(s.OutputDir, filepath.FromSlash(s.Files.JSON)))
	}
	return b.String()
}
