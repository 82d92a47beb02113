package spark

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/pipeline"
)

// mockNotice marks every output of a mock run.
const mockNotice = "MOCK DATA: generated offline by the mock provider, not by a language model."

func resultOf(run *madspark.Run) (*Result, error) { return pipeline.StoredResult[Result](run) }

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// signed is x with its sign, such as +1.3.
func signed(x float64) string {
	if x >= 0 {
		return "+" + num(x)
	}
	return num(x)
}

// Document lays a succeeded spark run out for reading: an overview with
// every candidate's initial and improved scores, then each candidate's
// initial idea and critique, the case for and against it, its logical
// analysis, its improved version, and its multi-dimensional scores before
// and after.
func Document(run *madspark.Run) (*document.Document, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	var p Params
	_ = json.Unmarshal(run.Params, &p)
	d := &document.Document{
		Title:    "Ideas: " + res.Topic,
		Subtitle: "madspark spark",
		TitleLines: []string{
			fmt.Sprintf("Run %s · %s/%s · %s", run.ID, run.Provider, run.Model, run.FinishedAt.UTC().Format("2 January 2006 15:04 MST")),
			run.Usage.String() + repairNote(len(res.Repairs)),
		},
		Author:   "madspark",
		Subject:  "Ideas for " + res.Topic,
		Contents: len(res.Candidates) > 1,
	}
	if run.Mode == "mock" {
		d.Notice, d.PageNotice = mockNotice, "MOCK DATA"
	}
	overview := document.Section{Title: "Overview", Blocks: document.KeyValues(
		[2]string{"Topic", res.Topic},
		[2]string{"Context", res.Context},
		[2]string{"Ideas generated", strconv.Itoa(res.Generated)},
		[2]string{"Near-duplicates dropped", strconv.Itoa(res.Filtered)},
		[2]string{"Candidates improved", strconv.Itoa(len(res.Candidates))},
		[2]string{"Multi-dimensional evaluation", onOff(p.EnhancedReasoning)},
		[2]string{"Logical inference", onOff(p.LogicalInference)},
	)}
	scores := &document.Table{Header: []string{"#", "Improved idea", "Initial", "Improved", "Change"}, Widths: []float64{0.6, 6, 1.3, 1.5, 1.3}}
	for i, c := range res.Candidates {
		scores.Rows = append(scores.Rows, []string{strconv.Itoa(i + 1), c.ImprovedIdea, num(c.InitialScore), num(c.ImprovedScore), signed(c.ScoreDelta)})
	}
	overview.Blocks = append(overview.Blocks, document.Text("Scores out of 10, initial and after improvement:"), scores)
	d.Sections = append(d.Sections, overview)
	for i, c := range res.Candidates {
		d.Sections = append(d.Sections, candidateSection(i, c))
	}
	return d, nil
}

func onOff(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func candidateSection(i int, c Candidate) document.Section {
	title, _ := splitIdea(c.ImprovedIdea)
	s := document.Section{Title: fmt.Sprintf("Candidate %d: %s", i+1, title)}
	if c.Fallback {
		var stages []string
		for _, f := range c.Fallbacks {
			stages = append(stages, f.Stage+" ("+f.Reason+")")
		}
		s.Blocks = append(s.Blocks, document.Para(document.Bold("Fallback values used: "), document.Plain(fmt.Sprint(stages))))
	}
	ev := c.Details.Initial
	initial := document.Section{Title: "Initial idea", Blocks: []document.Block{
		document.Text(c.Idea),
		document.Para(document.Bold("Score: "), document.Plain(num(c.InitialScore)+" / 10")),
		document.Text(c.InitialCritique),
	}}
	initial.Blocks = append(initial.Blocks, labelled("Strengths", ev.Strengths)...)
	initial.Blocks = append(initial.Blocks, labelled("Weaknesses", ev.Weaknesses)...)
	initial.Blocks = append(initial.Blocks, labelled("Suggestions", ev.Suggestions)...)
	s.Sections = append(s.Sections, initial)

	if a := c.Details.Advocacy; a != nil {
		sec := document.Section{Title: "Advocacy"}
		sec.Blocks = append(sec.Blocks, labelled("Strengths", a.Strengths)...)
		sec.Blocks = append(sec.Blocks, labelled("Opportunities", a.Opportunities)...)
		sec.Blocks = append(sec.Blocks, labelled("Addressing concerns", a.AddressingConcerns)...)
		s.Sections = append(s.Sections, sec)
	}
	if k := c.Details.Skepticism; k != nil {
		sec := document.Section{Title: "Skepticism"}
		sec.Blocks = append(sec.Blocks, labelled("Critical flaws", k.CriticalFlaws)...)
		sec.Blocks = append(sec.Blocks, labelled("Risks and challenges", k.RisksAndChallenges)...)
		sec.Blocks = append(sec.Blocks, labelled("Questionable assumptions", k.QuestionableAssumptions)...)
		sec.Blocks = append(sec.Blocks, labelled("Missing considerations", k.MissingConsiderations)...)
		s.Sections = append(s.Sections, sec)
	}
	if li := c.LogicalInference; li != nil {
		sec := document.Section{Title: "Logical inference", Blocks: []document.Block{document.Numbered(li.InferenceChain...),
			document.Para(document.Bold("Conclusion: "), document.Plain(li.Conclusion)),
			document.Para(document.Bold("Confidence: "), document.Plain(strconv.Itoa(int(math.Round(li.Confidence*100)))+"%"))}}
		sec.Blocks = append(sec.Blocks, labelled("Contradictions", li.Contradictions)...)
		sec.Blocks = append(sec.Blocks, labelled("Improvements", li.Improvements)...)
		s.Sections = append(s.Sections, sec)
	}
	improved := document.Section{Title: "Improved idea", Blocks: []document.Block{
		document.Text(c.ImprovedIdea),
		document.Para(document.Bold("Score: "), document.Plain(fmt.Sprintf("%s / 10 (%s)", num(c.ImprovedScore), signed(c.ScoreDelta)))),
		document.Text(c.ImprovedCritique),
	}}
	if im := c.Details.Improvement; im != nil {
		improved.Blocks = append(improved.Blocks, labelled("Key improvements", im.KeyImprovements)...)
	}
	s.Sections = append(s.Sections, improved)

	if c.MultiDimensionalEvaluation != nil || c.ImprovedMultiDimensionalEvaluation != nil {
		t := &document.Table{Header: []string{"Dimension", "Initial", "Improved"}, Widths: []float64{3, 1, 1}}
		for _, dim := range dimensionNames {
			t.Rows = append(t.Rows, []string{dim.title, dimCell(c.MultiDimensionalEvaluation, dim.key), dimCell(c.ImprovedMultiDimensionalEvaluation, dim.key)})
		}
		t.Rows = append(t.Rows,
			[]string{"Mean", mdCell(c.MultiDimensionalEvaluation, func(m *MultiDimensional) float64 { return m.Mean }), mdCell(c.ImprovedMultiDimensionalEvaluation, func(m *MultiDimensional) float64 { return m.Mean })},
			[]string{"Weighted score", mdCell(c.MultiDimensionalEvaluation, func(m *MultiDimensional) float64 { return m.WeightedScore }), mdCell(c.ImprovedMultiDimensionalEvaluation, func(m *MultiDimensional) float64 { return m.WeightedScore })})
		s.Sections = append(s.Sections, document.Section{Title: "Multi-dimensional evaluation", Blocks: []document.Block{
			document.Text("Each dimension 0-10, higher is better (for risk, 10 is the lowest risk)."), t}})
	}
	return s
}

// labelled is a bold label and a bulleted list, or nothing for no items.
func labelled(label string, items []string) []document.Block {
	if len(items) == 0 {
		return nil
	}
	return []document.Block{document.Para(document.Bold(label + ":")), document.Bullets(items...)}
}

// dimensionNames are the seven dimensions, in order, with their JSON keys.
var dimensionNames = []struct{ key, title string }{
	{"innovation", "Innovation"}, {"feasibility", "Feasibility"}, {"impact", "Impact"},
	{"scalability", "Scalability"}, {"sustainability", "Sustainability"},
	{"cost_effectiveness", "Cost-effectiveness"}, {"risk_assessment", "Risk assessment"},
}

func (d Dimensions) byKey(key string) float64 {
	switch key {
	case "feasibility":
		return d.Feasibility
	case "innovation":
		return d.Innovation
	case "impact":
		return d.Impact
	case "cost_effectiveness":
		return d.CostEffectiveness
	case "scalability":
		return d.Scalability
	case "risk_assessment":
		return d.RiskAssessment
	case "sustainability":
		return d.Sustainability
	}
	return 0
}

func dimCell(m *MultiDimensional, key string) string {
	if m == nil {
		return ""
	}
	return num(m.Dimensions.byKey(key))
}

func mdCell(m *MultiDimensional, f func(*MultiDimensional) float64) string {
	if m == nil {
		return ""
	}
	return num(f(m))
}

// splitIdea splits "Title: description".
func splitIdea(s string) (title, desc string) {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == ':' && s[i+1] == ' ' {
			return s[:i], s[i+2:]
		}
	}
	return s, ""
}

// Table flattens a succeeded run into one row per candidate, best first:
// the initial and improved idea, scores and critiques, the advocacy and
// skepticism, each of the seven dimensions before and after with their
// mean and weighted score, the logical conclusion, and whether fallback
// values were used.
func Table(run *madspark.Run) ([]string, [][]string, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, nil, err
	}
	header := []string{"rank", "topic", "idea", "initial_score", "initial_critique", "advocacy", "skepticism",
		"improved_idea", "improved_score", "improved_critique", "score_delta"}
	for _, prefix := range []string{"", "improved_"} {
		for _, d := range dimensionNames {
			header = append(header, prefix+d.key)
		}
		header = append(header, prefix+"mean", prefix+"weighted_score")
	}
	header = append(header, "inference_conclusion", "inference_confidence", "fallback")
	var rows [][]string
	for i, c := range res.Candidates {
		row := []string{strconv.Itoa(i + 1), res.Topic, c.Idea, num(c.InitialScore), c.InitialCritique, c.Advocacy, c.Skepticism,
			c.ImprovedIdea, num(c.ImprovedScore), c.ImprovedCritique, num(c.ScoreDelta)}
		for _, m := range []*MultiDimensional{c.MultiDimensionalEvaluation, c.ImprovedMultiDimensionalEvaluation} {
			for _, d := range dimensionNames {
				row = append(row, dimCell(m, d.key))
			}
			row = append(row, mdCell(m, func(m *MultiDimensional) float64 { return m.Mean }), mdCell(m, func(m *MultiDimensional) float64 { return m.WeightedScore }))
		}
		conclusion, confidence := "", ""
		if li := c.LogicalInference; li != nil {
			conclusion, confidence = li.Conclusion, num(li.Confidence)
		}
		row = append(row, conclusion, confidence, strconv.FormatBool(c.Fallback))
		rows = append(rows, row)
	}
	return header, rows, nil
}
