package chaos

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/madspark/madspark/document"
)

// Report renders the result as the seed's readable summary: accepted ideas
// with scores and details, rejected ideas with reasons, synthesis,
// recommendations, insights and open questions, per iteration; then the
// tournament ranking and the memory's size.
func (res *Result) Report() string {
	var b strings.Builder
	rule := strings.Repeat("=", 72)
	fmt.Fprintf(&b, "CREATIVE WORKFLOW RESULTS\nPrompt: %s\nAcceptance threshold: %.1f\n", res.Prompt, res.Threshold)
	for _, it := range res.Iterations {
		title := fmt.Sprintf("ITERATION %d", it.Number)
		if it.Evolved {
			title += " (evolved: recombined ideas)"
		}
		fmt.Fprintf(&b, "\n%s\n%s\n%s\n", rule, title, rule)
		if len(it.Seeds) > 0 {
			fmt.Fprintf(&b, "Chaos seeds: %s\n", strings.Join(it.Seeds, ", "))
		}
		j := it.Judgement
		fmt.Fprintf(&b, "\nACCEPTED IDEAS (%d)\n", len(j.AcceptedIdeas))
		for i, a := range j.AcceptedIdeas {
			fmt.Fprintf(&b, "\n%d. %s\n   quality %.1f · feasibility %.1f · impact %.1f · originality %.1f\n",
				i+1, a.IdeaName, a.QualityScore, a.FeasibilityScore, a.ImpactScore, a.OriginalityScore)
			list(&b, "Key points", a.KeyPoints)
			if a.ImplementationPath != "" {
				fmt.Fprintf(&b, "   Implementation path: %s\n", a.ImplementationPath)
			}
			list(&b, "Required resources", a.RequiredResources)
			list(&b, "Success metrics", a.SuccessMetrics)
			list(&b, "Next steps", a.NextSteps)
		}
		fmt.Fprintf(&b, "\nREJECTED IDEAS (%d)\n", len(j.RejectedIdeas))
		for _, r := range j.RejectedIdeas {
			fmt.Fprintf(&b, "- %s (quality %.1f): %s", r.IdeaName, r.QualityScore, r.RejectionReason)
			if r.FatalFlaw != "" {
				fmt.Fprintf(&b, "; fatal flaw: %s", r.FatalFlaw)
			}
			b.WriteByte('\n')
		}
		if j.Synthesis != "" {
			fmt.Fprintf(&b, "\nSYNTHESIS\n%s\n", j.Synthesis)
		}
		section(&b, "TOP RECOMMENDATIONS", j.TopRecommendations)
		section(&b, "STRATEGIC INSIGHTS", j.StrategicInsights)
		section(&b, "UNRESOLVED QUESTIONS", j.UnresolvedQuestions)
	}
	if t := res.Tournament; t != nil {
		fmt.Fprintf(&b, "\n%s\nTOURNAMENT RANKING (%d rounds, %d comparisons)\n%s\n", rule, t.Rounds, t.Comparisons, rule)
		for i, r := range t.Ratings {
			fmt.Fprintf(&b, "%2d. %-50s Elo %6.1f  (%d–%d)\n", i+1, r.IdeaName, r.Elo, r.Wins, r.Losses)
		}
	}
	held := fmt.Sprint(res.SharedState["total_accepted_ideas"])
	if n, err := strconv.Atoi(held); err == nil {
		held = document.Count(n, "idea")
	}
	fmt.Fprintf(&b, "\nThis run accepted %s; the memory %q now holds %s.\n", document.Count(len(res.Accepted), "new idea"), res.Memory, held)
	return b.String()
}

func list(b *strings.Builder, label string, items []string) {
	if len(items) > 0 {
		fmt.Fprintf(b, "   %s: %s\n", label, strings.Join(items, "; "))
	}
}

func section(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s\n", title)
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
}
