package assess

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/document/mdconv"
	"github.com/madspark/madspark/pipeline"
)

func resultOf(run *madspark.Run) (*Result, error) { return pipeline.StoredResult[Result](run) }

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// verdict is a reviewer's verdict, or "" when the reviewer did not run.
func verdict(it Iteration) (review, factCheck, reason string) {
	if it.Feedback != nil {
		review, reason = it.Feedback.IterationRecommendation, it.Feedback.IterationReason
	}
	if it.FactCheck != nil {
		factCheck = it.FactCheck.Verdict
	}
	return review, factCheck, reason
}

// Document lays a succeeded assessment out for reading: the verdict with
// the judge's grades, the final analysis in its own sections, the review
// iterations, and the sources.
func Document(run *madspark.Run) (*document.Document, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	final := res.Final()
	d := &document.Document{
		Title:    res.Idea,
		Subtitle: "madspark assess: business idea assessment",
		TitleLines: []string{
			fmt.Sprintf("Run %s · %s/%s · %s", run.ID, run.Provider, run.Model, run.FinishedAt.UTC().Format("2 January 2006 15:04 MST")),
			fmt.Sprintf("%s · %s · %s", res.Mode, document.Count(len(res.Iterations), "iteration"), approval(res)),
		},
		Author:   "madspark",
		Subject:  "Assessment of " + res.Idea,
		Contents: true,
	}
	if run.Mode == "mock" || res.Mock {
		d.Notice, d.PageNotice = MockNote, "MOCK DATA"
	}
	summary := document.Section{Title: "Verdict", Blocks: document.KeyValues(
		[2]string{"Idea", res.Idea},
		[2]string{"Review", approval(res)},
		[2]string{"Stopped because", strings.ReplaceAll(res.StopReason, "_", " ")},
		[2]string{"Web research", webLine(res)},
	)}
	if ev := res.Evaluation; ev != nil {
		summary.Blocks = append(summary.Blocks, document.KeyValues(
			[2]string{"Weighted score", fmt.Sprintf("%s / 10 (grade %s)", num(ev.WeightedScore), ev.OverallGrade)},
			[2]string{"Recommendation", ev.Recommendation},
		)...)
		summary.Blocks = append(summary.Blocks, document.Text(ev.Summary))
		t := &document.Table{Header: []string{"Criterion", "Weight", "Grade", "Rationale"}, Widths: []float64{2.5, 1, 1, 6}}
		for _, c := range Criteria {
			g, _ := ev.Grades.ByKey(c.Key)
			t.Rows = append(t.Rows, []string{c.Title, num(c.Weight), g.Grade, g.Rationale})
		}
		summary.Sections = append(summary.Sections, document.Section{Title: "Grades", Blocks: []document.Block{
			document.Text("Every criterion reads higher is better: an A for capital requirements means little capital is needed."), t}})
	}
	d.Sections = append(d.Sections, summary)
	if final != nil {
		lead, secs := mdconv.Convert(strings.ReplaceAll(final.Analysis, "> "+MockNote, ""), res.Idea)
		analysis := document.Section{Title: "Analysis", Blocks: lead, Sections: secs}
		d.Sections = append(d.Sections, analysis)
	}
	its := document.Section{Title: "Review iterations"}
	t := &document.Table{Header: []string{"#", "Words", "Reviewer", "Fact check", "Reason"}, Widths: []float64{0.6, 1, 1.4, 1.4, 6}}
	for _, it := range res.Iterations {
		review, fc, reason := verdict(it)
		t.Rows = append(t.Rows, []string{strconv.Itoa(it.Number), strconv.Itoa(it.Words), dash(review), dash(fc), reason})
	}
	its.Blocks = append(its.Blocks, t)
	for _, it := range res.Iterations {
		fb := it.Feedback
		if fb == nil {
			continue
		}
		sub := document.Section{Title: fmt.Sprintf("Iteration %d: the reviewer", it.Number), Blocks: []document.Block{document.Text(fb.OverallAssessment)}}
		var issues []string
		for _, is := range fb.CriticalIssues {
			issues = append(issues, fmt.Sprintf("%s: %s (%s)", is.Section, is.Issue, is.Suggestion))
		}
		sub.Blocks = append(sub.Blocks, labelled("Critical issues", issues)...)
		var imps []string
		for _, im := range fb.Improvements {
			imps = append(imps, im.Section+": "+im.Suggestion)
		}
		sub.Blocks = append(sub.Blocks, labelled("Improvements", imps)...)
		if f := it.FactCheck; f != nil {
			var claims []string
			for _, c := range f.Claims {
				claims = append(claims, fmt.Sprintf("%s — %s", c.Claim, c.Status))
			}
			sub.Blocks = append(sub.Blocks, document.Para(document.Bold("Fact check: "), document.Plain(f.Summary)))
			sub.Blocks = append(sub.Blocks, labelled("Claims", claims)...)
		}
		its.Sections = append(its.Sections, sub)
	}
	d.Sections = append(d.Sections, its)
	if len(res.Sources) > 0 {
		l := &document.List{Ordered: true}
		for _, s := range res.Sources {
			l.Items = append(l.Items, *document.Para(document.Link(s.Title, s.URL)))
		}
		d.Sections = append(d.Sections, document.Section{Title: "Sources", Blocks: []document.Block{l}})
	}
	return d, nil
}

func approval(res *Result) string {
	switch {
	case len(res.Iterations) > 0 && res.Iterations[0].Feedback == nil:
		return "not reviewed"
	case res.Approved:
		return "approved"
	}
	return "not approved"
}

func webLine(res *Result) string {
	if res.WebTools {
		return fmt.Sprintf("%d searches, %d sources", len(res.Queries), len(res.Sources))
	}
	if res.WebNote != "" {
		return "none: " + res.WebNote
	}
	return "none"
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func labelled(label string, items []string) []document.Block {
	if len(items) == 0 {
		return nil
	}
	return []document.Block{document.Para(document.Bold(label + ":")), document.Bullets(items...)}
}

// Table flattens a succeeded assessment into rows: one per grade of the
// judge (criterion, weight, grade, points, rationale), then one per
// iteration (words, verdicts, reason).
func Table(run *madspark.Run) ([]string, [][]string, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, nil, err
	}
	header := []string{"kind", "idea", "criterion", "weight", "grade", "points", "iteration", "words", "reviewer", "fact_check", "text"}
	var rows [][]string
	if ev := res.Evaluation; ev != nil {
		for _, c := range Criteria {
			g, _ := ev.Grades.ByKey(c.Key)
			p, _ := Points(g.Grade)
			rows = append(rows, []string{"grade", res.Idea, c.Key, num(c.Weight), g.Grade, num(p), "", "", "", "", g.Rationale})
		}
		rows = append(rows, []string{"overall", res.Idea, "weighted_score", "1", ev.OverallGrade, num(ev.WeightedScore), "", "", "", "", ev.Recommendation + ": " + ev.Summary})
	}
	for _, it := range res.Iterations {
		review, fc, reason := verdict(it)
		rows = append(rows, []string{"iteration", res.Idea, "", "", "", "", strconv.Itoa(it.Number), strconv.Itoa(it.Words), review, fc, reason})
	}
	return header, rows, nil
}

// Ideas is the assessed idea, with the judge's weighted score when judged.
func Ideas(run *madspark.Run) ([]pipeline.Idea, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	it := pipeline.Idea{Text: res.Idea, Topic: res.Idea}
	if res.Evaluation != nil {
		it.Score = res.Evaluation.WeightedScore
	}
	return []pipeline.Idea{it}, nil
}
