package spark

import (
	"fmt"
	"strings"
)

// summarizeEvaluation is the Critic's verdict as the Advocate and Skeptic
// read it.
func summarizeEvaluation(e Evaluation) string {
	s := fmt.Sprintf("score %.1f/10. %s", e.Score, e.Critique)
	if len(e.Weaknesses) > 0 {
		s += " Weaknesses: " + strings.Join(e.Weaknesses, "; ") + "."
	}
	return s
}

func formatAdvocacy(a Advocacy) string {
	return bulletSections(
		"STRENGTHS", a.Strengths,
		"OPPORTUNITIES", a.Opportunities,
		"ADDRESSING CONCERNS", a.AddressingConcerns)
}

func formatSkepticism(s Skepticism) string {
	return bulletSections(
		"CRITICAL FLAWS", s.CriticalFlaws,
		"RISKS & CHALLENGES", s.RisksAndChallenges,
		"QUESTIONABLE ASSUMPTIONS", s.QuestionableAssumptions,
		"MISSING CONSIDERATIONS", s.MissingConsiderations)
}

// bulletSections renders (heading, items) pairs as headed bullet lists,
// skipping empty sections.
func bulletSections(pairs ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		items := pairs[i+1].([]string)
		if len(items) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(pairs[i].(string) + ":\n")
		for _, it := range items {
			b.WriteString("• " + it + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
