package proposal

import (
	"fmt"
	"strings"
	"time"

	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/pipeline"
)

// MockNotice is the notice every output of a mock run carries.
const MockNotice = "MOCK DATA: generated offline by the mock provider, not by a language model; the literature entries are placeholders, not real publications."

// Meta describes the run that produced a result, for the title page.
type Meta struct {
	RunID    string
	Mock     bool
	Provider string
	Model    string
	Date     time.Time
}

// Notice returns the warnings a proposal carries on every page: mock data,
// and not having passed quality control. "" when there are none.
func (res *Result) Notice(m Meta) string {
	var n []string
	if m.Mock {
		n = append(n, MockNotice)
	}
	switch {
	case res.FailedStep != "":
		n = append(n, fmt.Sprintf("INCOMPLETE: the step %s failed (%s); the stages before it are kept, and resuming the run finishes it.", res.FailedStep, res.Error))
	case !res.Passed:
		n = append(n, fmt.Sprintf("NOT PASSED: this proposal did not pass quality control after %s (%s).", document.Count(res.Refinements, "refinement"), res.QualityValidation.Reason))
	}
	return strings.Join(n, " ")
}

// Verdict is quality control's verdict on a finished proposal, for the
// run's page and listings; nil for one that stopped at a failed step.
func (res *Result) Verdict() *pipeline.Verdict {
	if res.FailedStep != "" {
		return nil
	}
	qv := res.QualityValidation
	if res.Passed {
		return &pipeline.Verdict{Check: "quality control", Passed: true,
			Note: fmt.Sprintf("coherence %.2f, feasibility %.2f", qv.CoherenceScore, qv.FeasibilityScore)}
	}
	note := "not passed after " + document.Count(res.Refinements, "refinement")
	if qv.Reason != "" {
		note += ": " + qv.Reason
	}
	return &pipeline.Verdict{Check: "quality control", Note: note}
}

// pageNotice is the notice's short form for every page.
func (res *Result) pageNotice(m Meta) string {
	var n []string
	if m.Mock {
		n = append(n, "MOCK DATA")
	}
	switch {
	case res.FailedStep != "":
		n = append(n, "INCOMPLETE")
	case !res.Passed:
		n = append(n, "NOT PASSED QUALITY CONTROL")
	}
	return strings.Join(n, " · ")
}

// Document lays the proposal out as a document: title page, contents,
// problem, literature, objectives, methodology, data collection, and the
// quality-control record and the researcher's profile as appendices.
func (res *Result) Document(m Meta) *document.Document {
	pr, pd := res.Profile, res.ProblemDefinition
	status := fmt.Sprintf("Passed quality control: coherence %.2f, feasibility %.2f", res.QualityValidation.CoherenceScore, res.QualityValidation.FeasibilityScore)
	if !res.Passed {
		status = "Did not pass quality control"
	}
	d := &document.Document{
		Title:    res.Title,
		Subtitle: "Research proposal",
		TitleLines: []string{
			fmt.Sprintf("%s · %s", pr.AcademicProgram, pr.FieldOfStudy),
			fmt.Sprintf("Research area: %s", pr.ResearchArea),
			fmt.Sprintf("%d hours a week for %s", pr.WeeklyHours, pr.TotalTimeline),
			"",
			status,
			fmt.Sprintf("%s · run %s · %s/%s", m.Date.Format("2 January 2006"), m.RunID, m.Provider, m.Model),
		},
		Notice:     res.Notice(m),
		PageNotice: res.pageNotice(m),
		Author:     "madspark",
		Subject:    "Research proposal: " + pr.ResearchArea,
		Keywords:   pd.KeyVariables,
		Contents:   true,
	}
	d.Sections = []document.Section{
		res.problemSection(),
		res.literatureSection(),
		res.objectivesSection(),
		res.methodologySection(),
		res.dataSection(),
	}
	d.Appendices = []document.Section{res.qcAppendix(), res.profileAppendix()}
	return d
}

func (res *Result) problemSection() document.Section {
	pd := res.ProblemDefinition
	qs := &document.List{Ordered: false}
	for _, q := range pd.Questions() {
		label := q.ID + " (secondary): "
		if q.ID == "RQ1" {
			label = q.ID + " (main): "
		}
		qs.Items = append(qs.Items, *document.Para(document.Bold(label), document.Plain(q.Text)))
	}
	return document.Section{Title: "Research problem", Sections: []document.Section{
		{Title: "Problem statement", Blocks: []document.Block{document.Text(pd.ProblemStatement)}},
		{Title: "Research gap", Blocks: []document.Block{document.Text(pd.ResearchGap)}},
		{Title: "Justification", Blocks: []document.Block{document.Text(pd.Justification)}},
		{Title: "Research questions", Blocks: []document.Block{qs}},
		{Title: "Key variables", Blocks: []document.Block{document.Bullets(pd.KeyVariables...)}},
	}}
}

func (res *Result) literatureSection() document.Section {
	pd, ls := res.ProblemDefinition, res.LiteratureSearch
	var strategy []document.Block
	if ls.Enabled {
		strategy = append(strategy,
			document.Textf("%d queries were sent to %s; they returned %d distinct works, %d of which are cited below.",
				len(ls.Queries), strings.Join(ls.Sources, ", "), ls.WorksFound, len(pd.PreliminaryLiterature)),
			document.Bullets(ls.Queries...))
		if ls.Rationale != "" {
			strategy = append(strategy, document.Text(ls.Rationale))
		}
	} else {
		strategy = append(strategy, document.Textf("No literature search was run: %s. The proposal cites no publication.", ls.Note))
	}
	if ls.Enabled && ls.Note != "" {
		strategy = append(strategy, document.Text("Note: "+ls.Note+"."))
	}
	var entries []document.Block
	if pd.SearchSummary != "" {
		entries = append(entries, document.Text(pd.SearchSummary))
	}
	list := &document.List{Ordered: true}
	for _, e := range pd.PreliminaryLiterature {
		list.Items = append(list.Items, *citationPara(e))
	}
	if len(list.Items) > 0 {
		entries = append(entries, list)
	} else {
		entries = append(entries, document.Text("No work is cited."))
	}
	return document.Section{Title: "Literature review", Sections: []document.Section{
		{Title: "Search strategy", Blocks: strategy},
		{Title: "Preliminary literature", Blocks: entries},
	}}
}

// citationPara renders an entry as "Authors (Year). Title [linked]. Venue.
// DOI. — relevance".
func citationPara(e LiteratureEntry) *document.Paragraph {
	var spans []document.Span
	if len(e.Authors) > 0 {
		spans = append(spans, document.Plain(authorList(e.Authors)+" "))
	}
	if e.Year > 0 {
		spans = append(spans, document.Plain(fmt.Sprintf("(%d). ", e.Year)))
	} else {
		spans = append(spans, document.Plain("(n.d.). "))
	}
	spans = append(spans, document.Link(e.Title, e.URL), document.Plain(". "))
	if e.Venue != "" {
		spans = append(spans, document.Italic(e.Venue), document.Plain(". "))
	}
	if e.DOI != "" && !strings.Contains(e.URL, e.DOI) {
		spans = append(spans, document.Link("doi:"+e.DOI, "https://doi.org/"+e.DOI), document.Plain(". "))
	}
	spans = append(spans, document.Plain("— "+e.RelevanceNote))
	return document.Para(spans...)
}

func (res *Result) objectivesSection() document.Section {
	o := res.ResearchObjectives
	rq := map[string]string{}
	for _, q := range res.ProblemDefinition.Questions() {
		rq[q.ID] = q.Text
	}
	t := &document.Table{Header: []string{"ID", "Objective", "Answers", "Indicator", "Due"}, Widths: []float64{0.7, 4, 1.1, 3, 0.9}}
	for _, so := range o.SpecificObjectives {
		t.Rows = append(t.Rows, []string{so.ID, so.Objective, so.ResearchQuestion, so.Indicator, fmt.Sprintf("week %d", so.DueWeek)})
	}
	var mapping []string
	for _, so := range o.SpecificObjectives {
		mapping = append(mapping, fmt.Sprintf("%s answers %s: %s", so.ID, so.ResearchQuestion, rq[so.ResearchQuestion]))
	}
	return document.Section{Title: "Objectives", Sections: []document.Section{
		{Title: "General objective", Blocks: []document.Block{document.Text(o.GeneralObjective)}},
		{Title: "Specific objectives", Blocks: []document.Block{
			document.Text("Each objective is specific, measurable by its indicator, achievable in the time available, relevant to a research question and due by a week of the project."),
			t, document.Bullets(mapping...)}},
		{Title: "Alignment and feasibility", Blocks: document.KeyValues(
			[2]string{"Alignment", strings.ReplaceAll(o.AlignmentCheck.Verdict, "_", " ") + ". " + o.AlignmentCheck.Explanation},
			[2]string{"Feasibility", o.FeasibilityNotes})},
	}}
}

func (res *Result) methodologySection() document.Section {
	m := res.Methodology
	phases := &document.Table{Header: []string{"Phase", "Weeks"}, Widths: []float64{4, 1}}
	total := 0
	for _, p := range m.TimelineFit.Phases {
		phases.Rows = append(phases.Rows, []string{p.Name, fmt.Sprint(p.Weeks)})
		total += p.Weeks
	}
	phases.Rows = append(phases.Rows, []string{fmt.Sprintf("Total (of %d weeks available)", res.Profile.TotalTimeline.Weeks()), fmt.Sprint(total)})
	var alts []document.Block
	for _, a := range m.AlternativeMethodologies {
		alts = append(alts, document.Para(document.Bold(a.Name), document.Plain(fmt.Sprintf(" (%s). Pros: %s. Cons: %s. Not chosen: %s",
			a.MethodologyType, strings.Join(a.Pros, "; "), strings.Join(a.Cons, "; "), a.WhyNotChosen))))
	}
	return document.Section{Title: "Methodology", Sections: []document.Section{
		{Title: "Recommended methodology", Blocks: []document.Block{
			document.Para(document.Bold("Type: "), document.Plain(string(m.MethodologyType))),
			document.Text(m.RecommendedMethodology)}},
		{Title: "Justification", Blocks: []document.Block{document.Text(m.Justification)}},
		{Title: "Required skills", Blocks: []document.Block{document.Bullets(m.RequiredSkills...)}},
		{Title: "Timeline fit", Blocks: []document.Block{
			document.Para(document.Bold("Verdict: "), document.Plain(strings.ReplaceAll(m.TimelineFit.Verdict, "_", " ")+". "+m.TimelineFit.Explanation)),
			phases}},
		{Title: "Alternatives considered", Blocks: alts},
	}}
}

func (res *Result) dataSection() document.Section {
	d := res.DataCollectionPlan
	tools := &document.Table{Header: []string{"Tool", "Purpose", "Access"}, Widths: []float64{2, 4, 1.4}}
	for _, t := range d.RecommendedTools {
		tools.Rows = append(tools.Rows, []string{t.Name, t.Purpose, t.Access})
	}
	sched := &document.Table{Header: []string{"Phase", "Weeks", "Activities"}, Widths: []float64{2, 1, 5}}
	for _, a := range d.TimelineBreakdown {
		sched.Rows = append(sched.Rows, []string{a.Phase, fmt.Sprintf("%d-%d", a.StartWeek, a.EndWeek), a.Description})
	}
	toolBlocks := []document.Block{tools}
	if len(d.RecommendedTools) == 0 {
		toolBlocks = []document.Block{document.Text("No particular tool is needed.")}
	}
	return document.Section{Title: "Data collection plan", Sections: []document.Section{
		{Title: "Techniques and sources", Blocks: append([]document.Block{document.Bullets(d.CollectionTechniques...)},
			document.KeyValues([2]string{"Data sources", strings.Join(d.DataSources, "; ")})...)},
		{Title: "Tools", Blocks: toolBlocks},
		{Title: "Sample", Blocks: document.KeyValues([2]string{"Estimated sample size", d.EstimatedSampleSize}, [2]string{"Sampling strategy", d.SamplingStrategy})},
		{Title: "Schedule", Blocks: []document.Block{sched}},
		{Title: "Resources and ethics", Blocks: document.KeyValues(
			[2]string{"Resources", strings.Join(d.ResourceRequirements, "; ")},
			[2]string{"Ethical considerations", strings.Join(d.EthicalConsiderations, "; ")})},
	}}
}

func (res *Result) qcAppendix() document.Section {
	qv := res.QualityValidation
	verdict := "passed"
	if !res.Passed {
		verdict = "did not pass: " + qv.Reason
	}
	summary := []document.Block{
		document.Para(document.Bold("Verdict: "), document.Plain(fmt.Sprintf("%s (round %d of at most %d refinements).", verdict, qv.Round, res.MaxRefinements))),
		&document.Table{Header: []string{"Measure", "Score", "Threshold"}, Rows: [][]string{
			{"Coherence", fmt.Sprintf("%.2f", qv.CoherenceScore), fmt.Sprintf("%.2f", MinCoherence)},
			{"Feasibility", fmt.Sprintf("%.2f", qv.FeasibilityScore), fmt.Sprintf("%.2f", MinFeasibility)},
			{"Overall quality", fmt.Sprintf("%d/100", qv.OverallQualityScore), ""},
		}},
		document.Text(qv.Summary),
	}
	issues := issueTable(qv.IssuesIdentified)
	recs := []document.Block{document.Text("None.")}
	if len(qv.Recommendations) > 0 {
		recs = []document.Block{document.Numbered(qv.Recommendations...)}
	}
	hist := &document.Table{Header: []string{"Round", "Stages run", "Coherence", "Feasibility", "Verdict", "Targets"}, Widths: []float64{1.3, 3, 1.5, 1.5, 1.2, 2.1}}
	for _, r := range res.Rounds {
		var st, tg []string
		for _, s := range r.Stages {
			st = append(st, string(s))
		}
		for _, s := range r.QualityValidation.RefinementTargets {
			tg = append(tg, string(s))
		}
		hist.Rows = append(hist.Rows, []string{fmt.Sprint(r.Round), strings.Join(st, ", "), fmt.Sprintf("%.2f", r.QualityValidation.CoherenceScore),
			fmt.Sprintf("%.2f", r.QualityValidation.FeasibilityScore), string(r.QualityValidation.Verdict), strings.Join(tg, ", ")})
	}
	return document.Section{Title: "Quality control", Sections: []document.Section{
		{Title: "Final assessment", Blocks: summary},
		{Title: "Issues", Blocks: issues},
		{Title: "Recommendations", Blocks: recs},
		{Title: "Refinement history", Blocks: []document.Block{
			document.Text("A proposal passes when coherence and feasibility both reach 0.70 and no issue is critical. A failed round re-runs the stages from the earliest one quality control names, with its recommendations as feedback."),
			hist}},
	}}
}

func issueTable(issues []Issue) []document.Block {
	if len(issues) == 0 {
		return []document.Block{document.Text("No issue was found.")}
	}
	t := &document.Table{Header: []string{"Severity", "Component", "Issue", "Impact"}, Widths: []float64{1.1, 1.8, 3.5, 2.6}}
	for _, i := range issues {
		t.Rows = append(t.Rows, []string{string(i.Severity), string(i.Component), i.Description, i.Impact})
	}
	return []document.Block{t}
}

func (res *Result) profileAppendix() document.Section {
	p := res.Profile
	return document.Section{Title: "Researcher profile", Blocks: document.KeyValues(
		[2]string{"Academic programme", p.AcademicProgram},
		[2]string{"Field of study", p.FieldOfStudy},
		[2]string{"Research area", p.ResearchArea},
		[2]string{"Time available", fmt.Sprintf("%d hours a week for %s (%d weeks, about %d hours)", p.WeeklyHours, p.TotalTimeline, p.TotalTimeline.Weeks(), p.HoursAvailable())},
		[2]string{"Existing skills", listOrNone(p.ExistingSkills)},
		[2]string{"Skills to develop", listOrNone(p.MissingSkills)},
		[2]string{"Constraints", listOrNone(p.Constraints)},
		[2]string{"Additional context", p.AdditionalContext},
	)}
}

// Summary is the short text report printed when a run finishes.
func (res *Result) Summary(m Meta) string {
	var b strings.Builder
	if n := res.Notice(m); n != "" {
		b.WriteString(n + "\n\n")
	}
	qv := res.QualityValidation
	fmt.Fprintf(&b, "%s\n", res.Title)
	verdict := "PASSED"
	if !res.Passed {
		verdict = "NOT PASSED (" + qv.Reason + ")"
	}
	fmt.Fprintf(&b, "Quality control: %s — coherence %.2f, feasibility %.2f, %d refinement(s)\n", verdict, qv.CoherenceScore, qv.FeasibilityScore, res.Refinements)
	fmt.Fprintf(&b, "Main question: %s\n", res.ProblemDefinition.MainResearchQuestion)
	fmt.Fprintf(&b, "Methodology: %s (%s)\n", res.Methodology.RecommendedMethodology, res.Methodology.MethodologyType)
	fmt.Fprintf(&b, "Literature: %d works cited of %d found\n", len(res.ProblemDefinition.PreliminaryLiterature), res.LiteratureSearch.WorksFound)
	if res.LiteratureSearch.Note != "" {
		fmt.Fprintf(&b, "Note: %s\n", res.LiteratureSearch.Note)
	}
	return b.String()
}
