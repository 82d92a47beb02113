package proposal

import (
	"fmt"
	"strings"

	"github.com/madspark/madspark/scholar"
)

// The Brief methods render a stage's output as plain text for the prompts
// of the stages after it.

// Brief renders the profile.
func (p UserProfile) Brief() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- Academic programme: %s\n- Field of study: %s\n- Research area: %s\n", p.AcademicProgram, p.FieldOfStudy, p.ResearchArea)
	fmt.Fprintf(&b, "- Time available: %d hours a week for %s (%d weeks, about %d hours in all)\n", p.WeeklyHours, p.TotalTimeline, p.TotalTimeline.Weeks(), p.HoursAvailable())
	fmt.Fprintf(&b, "- Existing skills: %s\n- Skills to develop: %s\n- Constraints: %s\n", listOrNone(p.ExistingSkills), listOrNone(p.MissingSkills), listOrNone(p.Constraints))
	if p.AdditionalContext != "" {
		fmt.Fprintf(&b, "- Additional context: %s\n", p.AdditionalContext)
	}
	return strings.TrimRight(b.String(), "\n")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none given"
	}
	return strings.Join(l, "; ")
}

// Brief renders the problem definition, with its questions labelled.
func (d ProblemDefinition) Brief() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Working title: %s\nProblem statement: %s\nResearch gap: %s\nJustification: %s\nResearch questions:\n", d.WorkingTitle, d.ProblemStatement, d.ResearchGap, d.Justification)
	for _, q := range d.Questions() {
		fmt.Fprintf(&b, "- %s: %s\n", q.ID, q.Text)
	}
	fmt.Fprintf(&b, "Key variables: %s\n", listOrNone(d.KeyVariables))
	if len(d.PreliminaryLiterature) > 0 {
		b.WriteString("Preliminary literature:\n")
		for _, e := range d.PreliminaryLiterature {
			fmt.Fprintf(&b, "- [%d] %s%s: %s\n", e.Ref, e.Title, yearSuffix(e.Year), e.RelevanceNote)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func yearSuffix(y int) string {
	if y == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d)", y)
}

// Brief renders the objectives.
func (o ResearchObjectives) Brief() string {
	var b strings.Builder
	fmt.Fprintf(&b, "General objective: %s\nSpecific objectives:\n", o.GeneralObjective)
	for _, so := range o.SpecificObjectives {
		fmt.Fprintf(&b, "- %s (answers %s, due week %d): %s Indicator: %s\n", so.ID, so.ResearchQuestion, so.DueWeek, so.Objective, so.Indicator)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Brief renders the methodology.
func (m MethodologyRecommendation) Brief() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Recommended methodology (%s): %s\nJustification: %s\nRequired skills: %s\nTimeline fit (%s): %s\nPhases:\n",
		m.MethodologyType, m.RecommendedMethodology, m.Justification, listOrNone(m.RequiredSkills), m.TimelineFit.Verdict, m.TimelineFit.Explanation)
	for _, ph := range m.TimelineFit.Phases {
		fmt.Fprintf(&b, "- %s: %d weeks\n", ph.Name, ph.Weeks)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Brief renders the data collection plan.
func (d DataCollectionPlan) Brief() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Techniques: %s\nData sources: %s\nEstimated sample size: %s\nSampling strategy: %s\nTools: ",
		listOrNone(d.CollectionTechniques), listOrNone(d.DataSources), d.EstimatedSampleSize, d.SamplingStrategy)
	var tools []string
	for _, t := range d.RecommendedTools {
		tools = append(tools, fmt.Sprintf("%s (%s, %s)", t.Name, t.Purpose, t.Access))
	}
	fmt.Fprintf(&b, "%s\nTimeline:\n", listOrNone(tools))
	for _, a := range d.TimelineBreakdown {
		fmt.Fprintf(&b, "- weeks %d-%d, %s: %s\n", a.StartWeek, a.EndWeek, a.Phase, a.Description)
	}
	fmt.Fprintf(&b, "Resources: %s\nEthical considerations: %s", listOrNone(d.ResourceRequirements), listOrNone(d.EthicalConsiderations))
	return b.String()
}

// candidates renders search results for the problem-formulation prompt,
// numbered by their IDs.
func candidates(works []scholar.Work) string {
	var b strings.Builder
	for _, w := range works {
		fmt.Fprintf(&b, "[%d] %s%s", w.ID, w.Title, yearSuffix(w.Year))
		if len(w.Authors) > 0 {
			fmt.Fprintf(&b, ". %s", authorList(w.Authors))
		}
		if w.Venue != "" {
			fmt.Fprintf(&b, ". %s", w.Venue)
		}
		b.WriteString("\n")
		if w.Snippet != "" {
			fmt.Fprintf(&b, "    %s\n", w.Snippet)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// authorList renders authors as "A, B and C", or "A et al." for more than
// three.
func authorList(a []string) string {
	switch len(a) {
	case 0:
		return ""
	case 1:
		return a[0]
	case 2, 3:
		return strings.Join(a[:len(a)-1], ", ") + " and " + a[len(a)-1]
	}
	return a[0] + " et al."
}
