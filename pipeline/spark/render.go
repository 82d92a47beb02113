package spark

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/llm"
)

// Formats lists the output formats Report.Write accepts.
var Formats = []string{"brief", "detailed", "json", "markdown"}

// Report is a finished run as users and other tools see it. Its JSON form is
// a stable contract.
type Report struct {
	RunID      string      `json:"run_id"`
	Pipeline   string      `json:"pipeline"`
	Mode       string      `json:"mode"`
	Provider   string      `json:"provider"`
	Model      string      `json:"model"`
	Topic      string      `json:"topic"`
	Context    string      `json:"context"`
	Generated  int         `json:"generated"`
	Filtered   int         `json:"filtered"`
	Candidates []Candidate `json:"candidates"`
	// Ideas are all the ideas generated (see Result.Ideas); empty, not nil,
	// for a result stored before they were kept.
	Ideas []GeneratedIdea `json:"ideas"`
	// Repairs are the repairs made to the models' replies (see
	// Result.Repairs); empty, not nil, when there were none.
	Repairs    []llm.Repair `json:"repairs"`
	Usage      llm.Usage    `json:"usage"`
	DurationMS int64        `json:"duration_ms"`
}

// NewReport describes res, produced by run runID with the given provider
// and model in mode ("mock" or "live"), costing usage and taking d.
func NewReport(res *Result, runID, mode, provider, model string, usage llm.Usage, d time.Duration) *Report {
	rep := &Report{
		RunID: runID, Pipeline: "spark", Mode: mode, Provider: provider, Model: model,
		Topic: res.Topic, Context: res.Context, Generated: res.Generated, Filtered: res.Filtered,
		Candidates: res.Candidates, Ideas: res.Ideas, Repairs: res.Repairs, Usage: usage, DurationMS: d.Milliseconds(),
	}
	if rep.Repairs == nil {
		// A result stored before repairs were recorded.
		rep.Repairs = []llm.Repair{}
	}
	if rep.Ideas == nil {
		rep.Ideas = []GeneratedIdea{}
	}
	return rep
}

// Write renders the report in format: brief, detailed, json or markdown.
func (r *Report) Write(w io.Writer, format string) error {
	var err error
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(r)
	case "brief":
		_, err = io.WriteString(w, r.brief())
	case "detailed", "":
		_, err = io.WriteString(w, r.detailed())
	case "markdown":
		_, err = io.WriteString(w, r.markdown())
	default:
		return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats, ", "))
	}
	return err
}

func (r *Report) mockNote() string {
	if r.Mode == "mock" {
		return "MOCK DATA: generated offline by the mock provider, not by a language model.\n"
	}
	return ""
}

func (r *Report) usageLine() string {
	u := r.Usage
	return fmt.Sprintf("%s; %.1fs%s", u, float64(r.DurationMS)/1000, repairNote(len(r.Repairs)))
}

// repairNote is "; N repairs" for n > 0, and "" otherwise.
func repairNote(n int) string {
	if n == 0 {
		return ""
	}
	return "; " + llm.RepairCount(n)
}

func (r *Report) brief() string {
	var b strings.Builder
	b.WriteString(r.mockNote())
	fmt.Fprintf(&b, "%s\n", r.Topic)
	for i, c := range r.Candidates {
		fmt.Fprintf(&b, "%d. %s\n   score %.1f → %.1f (%+.1f)%s\n", i+1, c.ImprovedIdea, c.InitialScore, c.ImprovedScore, c.ScoreDelta, fallbackNote(c))
	}
	fmt.Fprintf(&b, "run %s · %s\n", r.RunID, r.usageLine())
	return b.String()
}

// inferenceTypeName names li's kind of analysis; a result stored before
// the kinds were recorded had a full one.
func inferenceTypeName(li *Inference) string {
	if li.Type == "" {
		return FullReasoning
	}
	return li.Type
}

func metWord(met bool) string {
	if met {
		return "met"
	}
	return "unmet"
}

// otherIdeas are the generated ideas that are not candidates.
func (r *Report) otherIdeas() []GeneratedIdea {
	var out []GeneratedIdea
	for _, g := range r.Ideas {
		if g.Candidate == 0 {
			out = append(out, g)
		}
	}
	return out
}

// otherNote says briefly what became of an idea that is not a candidate.
func otherNote(g GeneratedIdea) string {
	switch {
	case g.DuplicateOf != "":
		return fmt.Sprintf(" (near-duplicate of %q)", g.DuplicateOf)
	case g.Score != nil:
		return fmt.Sprintf(" (score %.1f)", *g.Score)
	}
	return " (not scored)"
}

func fallbackNote(c Candidate) string {
	if !c.Fallback {
		return ""
	}
	var stages []string
	for _, f := range c.Fallbacks {
		stages = append(stages, f.Stage)
	}
	return " [fallback: " + strings.Join(stages, ", ") + "]"
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

func (r *Report) detailed() string {
	var b strings.Builder
	b.WriteString(r.mockNote())
	fmt.Fprintf(&b, "Topic:   %s\n", r.Topic)
	if r.Context != "" {
		fmt.Fprintf(&b, "Context: %s\n", r.Context)
	}
	fmt.Fprintf(&b, "%d ideas generated", r.Generated)
	if r.Filtered > 0 {
		fmt.Fprintf(&b, ", %d near-duplicates dropped", r.Filtered)
	}
	fmt.Fprintf(&b, "; top %d below.\n", len(r.Candidates))
	rule := strings.Repeat("─", 72)
	for i, c := range r.Candidates {
		fmt.Fprintf(&b, "\n%s\n#%d  %s\n%s\n", rule, i+1, c.Idea, rule)
		fmt.Fprintf(&b, "Initial score: %.1f/10\n%s\n", c.InitialScore, indent(c.InitialCritique, "  "))
		if m := c.MultiDimensionalEvaluation; m != nil {
			b.WriteString(dimensionsText(m))
		}
		fmt.Fprintf(&b, "\nAdvocacy:\n%s\n", indent(c.Advocacy, "  "))
		fmt.Fprintf(&b, "\nSkepticism:\n%s\n", indent(c.Skepticism, "  "))
		if li := c.LogicalInference; li != nil {
			fmt.Fprintf(&b, "\nLogical inference (%s, confidence %.2f):\n", inferenceTypeName(li), li.Confidence)
			for _, step := range li.InferenceChain {
				fmt.Fprintf(&b, "  → %s\n", step)
			}
			for _, l := range li.CausalLinks {
				fmt.Fprintf(&b, "  cause: %s ⇒ effect: %s\n", l.Cause, l.Effect)
			}
			for _, c := range li.Constraints {
				fmt.Fprintf(&b, "  [%s] %s: %s\n", metWord(c.Met), c.Constraint, c.Explanation)
			}
			for _, x := range li.Contradictions {
				fmt.Fprintf(&b, "  contradiction: %s\n", x)
			}
			for _, x := range li.Implications {
				fmt.Fprintf(&b, "  implication: %s\n", x)
			}
			fmt.Fprintf(&b, "  ∴ %s\n", li.Conclusion)
		}
		fmt.Fprintf(&b, "\nImproved idea:\n%s\n", indent(c.ImprovedIdea, "  "))
		fmt.Fprintf(&b, "Improved score: %.1f/10 (%+.1f)\n%s\n", c.ImprovedScore, c.ScoreDelta, indent(c.ImprovedCritique, "  "))
		if m := c.ImprovedMultiDimensionalEvaluation; m != nil {
			b.WriteString(dimensionsText(m))
		}
		for _, f := range c.Fallbacks {
			fmt.Fprintf(&b, "FALLBACK in %s: %s\n", f.Stage, f.Reason)
		}
	}
	if others := r.otherIdeas(); len(others) > 0 {
		fmt.Fprintf(&b, "\n%s\nOther ideas generated (%d):\n", rule, len(others))
		for _, g := range others {
			fmt.Fprintf(&b, "  - %s%s\n", oneLine(g.String()), otherNote(g))
		}
	}
	if len(r.Repairs) > 0 {
		b.WriteString("\nRepairs made to the replies:\n")
		for _, rp := range r.Repairs {
			fmt.Fprintf(&b, "  %s\n", oneLine(rp.String()))
		}
	}
	fmt.Fprintf(&b, "\nrun %s · %s/%s · %s\n", r.RunID, r.Provider, r.Model, r.usageLine())
	return b.String()
}

func dimensionsText(m *MultiDimensional) string {
	d := m.Dimensions
	return fmt.Sprintf("  dimensions: innovation %.1f · feasibility %.1f · impact %.1f · scalability %.1f · sustainability %.1f · cost-effectiveness %.1f · risk %.1f\n  mean %.2f · weighted %.2f\n",
		d.Innovation, d.Feasibility, d.Impact, d.Scalability, d.Sustainability, d.CostEffectiveness, d.RiskAssessment, m.Mean, m.WeightedScore)
}

func (r *Report) markdown() string {
	var b strings.Builder
	// The topic, context and ideas are one-line texts: escaped, so that
	// none of them can start a heading, a table or HTML.
	fmt.Fprintf(&b, "# %s\n\n", document.Escape(r.Topic))
	if r.Mode == "mock" {
		b.WriteString("> **Mock data**: generated offline by the mock provider, not by a language model.\n\n")
	}
	if r.Context != "" {
		fmt.Fprintf(&b, "**Context:** %s\n\n", document.Escape(r.Context))
	}
	for i, c := range r.Candidates {
		fmt.Fprintf(&b, "## %d. %s\n\n", i+1, document.Escape(c.Idea))
		fmt.Fprintf(&b, "**Initial score:** %.1f/10 — %s\n\n", c.InitialScore, c.InitialCritique)
		if m := c.MultiDimensionalEvaluation; m != nil {
			b.WriteString(dimensionsTable(m))
		}
		fmt.Fprintf(&b, "### Advocacy\n\n%s\n\n", mdBullets(c.Advocacy))
		fmt.Fprintf(&b, "### Skepticism\n\n%s\n\n", mdBullets(c.Skepticism))
		if li := c.LogicalInference; li != nil {
			fmt.Fprintf(&b, "### Logical inference (%s)\n\n", inferenceTypeName(li))
			for n, step := range li.InferenceChain {
				fmt.Fprintf(&b, "%d. %s\n", n+1, step)
			}
			for _, l := range li.CausalLinks {
				fmt.Fprintf(&b, "- **Cause:** %s → **effect:** %s\n", l.Cause, l.Effect)
			}
			for _, c := range li.Constraints {
				fmt.Fprintf(&b, "- **%s** %s: %s\n", metWord(c.Met), c.Constraint, c.Explanation)
			}
			for _, x := range li.Contradictions {
				fmt.Fprintf(&b, "- **Contradiction:** %s\n", x)
			}
			for _, x := range li.Implications {
				fmt.Fprintf(&b, "- **Implication:** %s\n", x)
			}
			fmt.Fprintf(&b, "\n**Conclusion** (confidence %.2f): %s\n\n", li.Confidence, li.Conclusion)
		}
		fmt.Fprintf(&b, "### Improved idea\n\n%s\n\n", c.ImprovedIdea)
		fmt.Fprintf(&b, "**Improved score:** %.1f/10 (%+.1f) — %s\n\n", c.ImprovedScore, c.ScoreDelta, c.ImprovedCritique)
		if m := c.ImprovedMultiDimensionalEvaluation; m != nil {
			b.WriteString(dimensionsTable(m))
		}
		for _, f := range c.Fallbacks {
			fmt.Fprintf(&b, "> **Fallback** in %s: %s\n\n", f.Stage, f.Reason)
		}
	}
	if others := r.otherIdeas(); len(others) > 0 {
		b.WriteString("## Other ideas generated\n\n")
		for _, g := range others {
			fmt.Fprintf(&b, "- %s%s\n", document.Escape(oneLine(g.String())), document.Escape(otherNote(g)))
		}
		b.WriteString("\n")
	}
	if len(r.Repairs) > 0 {
		b.WriteString("## Repairs\n\n")
		for _, rp := range r.Repairs {
			fmt.Fprintf(&b, "- %s\n", document.Escape(oneLine(rp.String())))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "---\n\nRun `%s` · %s/%s · %s\n", r.RunID, r.Provider, r.Model, r.usageLine())
	return b.String()
}

func dimensionsTable(m *MultiDimensional) string {
	d := m.Dimensions
	return fmt.Sprintf("| innovation | feasibility | impact | scalability | sustainability | cost-effectiveness | risk | mean | weighted |\n|---|---|---|---|---|---|---|---|---|\n| %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n\n",
		d.Innovation, d.Feasibility, d.Impact, d.Scalability, d.Sustainability, d.CostEffectiveness, d.RiskAssessment, m.Mean, m.WeightedScore)
}

// mdBullets turns the "HEADING:\n• item" text of advocacy and skepticism
// into markdown.
func mdBullets(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "• "):
			out = append(out, "- "+strings.TrimPrefix(l, "• "))
		case strings.HasSuffix(l, ":"):
			out = append(out, "\n**"+strings.TrimSuffix(l, ":")+"**\n")
		case l != "":
			out = append(out, l)
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
