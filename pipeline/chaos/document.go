package chaos

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/pipeline"
)

const mockNotice = "MOCK DATA: generated offline by the mock provider, not by a language model."

func resultOf(run *madspark.Run) (*Result, Params, error) {
	res, err := pipeline.StoredResult[Result](run)
	if err != nil {
		return nil, Params{}, err
	}
	var p Params
	_ = json.Unmarshal(run.Params, &p)
	return res, p, nil
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// Document lays a succeeded chaos run out for reading: per iteration its
// seeds, the accepted ideas with their scores and plans, the rejected ones
// with why, and the judge's synthesis; then the tournament's ratings.
func Document(run *madspark.Run) (*document.Document, error) {
	res, p, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	d := &document.Document{
		Title:    res.Prompt,
		Subtitle: "madspark chaos: a creativity workflow",
		TitleLines: []string{
			fmt.Sprintf("Run %s · %s/%s · seed %d · %s", run.ID, run.Provider, run.Model, p.Seed, run.FinishedAt.UTC().Format("2 January 2006 15:04 MST")),
			fmt.Sprintf("%s · acceptance threshold %s · %s accepted%s", document.Count(len(res.Iterations), "iteration"), num(res.Threshold), document.Count(len(res.Accepted), "idea"), pipeline.RepairsNote(res.Repairs)),
		},
		Author:   "madspark",
		Subject:  "Ideas for " + res.Prompt,
		Contents: true,
	}
	if run.Mode == "mock" {
		d.Notice, d.PageNotice = mockNotice, "MOCK DATA"
	}
	if run.Status == madspark.RunCancelled {
		note := fmt.Sprintf("Cancelled: the %s it had finished, of %d, are kept.", document.Count(len(res.Iterations), "iteration"), p.Iterations)
		d.Notice = strings.TrimSpace(d.Notice + " " + note)
	}
	for _, it := range res.Iterations {
		title := fmt.Sprintf("Iteration %d", it.Number)
		if it.Evolved {
			title += ": evolved ideas"
		}
		s := document.Section{Title: title}
		if len(it.Seeds) > 0 {
			s.Blocks = append(s.Blocks, document.Para(document.Bold("Chaos seeds: "), document.Plain(strings.Join(it.Seeds, ", "))))
		}
		j := it.Judgement
		if len(j.AcceptedIdeas) > 0 {
			t := &document.Table{Header: []string{"Accepted idea", "Quality", "Feasibility", "Impact", "Originality"}, Widths: []float64{5, 1.3, 1.5, 1.2, 1.5}}
			for _, a := range j.AcceptedIdeas {
				t.Rows = append(t.Rows, []string{a.IdeaName, num(a.QualityScore), num(a.FeasibilityScore), num(a.ImpactScore), num(a.OriginalityScore)})
			}
			s.Blocks = append(s.Blocks, t)
		}
		for _, a := range j.AcceptedIdeas {
			sub := document.Section{Title: a.IdeaName, Blocks: []document.Block{
				document.Para(document.Bold("Scores: "), document.Plain(fmt.Sprintf("quality %s, feasibility %s, impact %s, originality %s",
					num(a.QualityScore), num(a.FeasibilityScore), num(a.ImpactScore), num(a.OriginalityScore)))),
			}}
			sub.Blocks = append(sub.Blocks, labelled("Key points", a.KeyPoints)...)
			sub.Blocks = append(sub.Blocks, document.KeyValues([2]string{"Implementation path", a.ImplementationPath})...)
			sub.Blocks = append(sub.Blocks, labelled("Required resources", a.RequiredResources)...)
			sub.Blocks = append(sub.Blocks, labelled("Success metrics", a.SuccessMetrics)...)
			sub.Blocks = append(sub.Blocks, labelled("Next steps", a.NextSteps)...)
			s.Sections = append(s.Sections, sub)
		}
		if len(j.RejectedIdeas) > 0 {
			t := &document.Table{Header: []string{"Rejected idea", "Quality", "Reason", "Fatal flaw"}, Widths: []float64{3, 1.2, 4, 3}}
			for _, r := range j.RejectedIdeas {
				t.Rows = append(t.Rows, []string{r.IdeaName, num(r.QualityScore), r.RejectionReason, r.FatalFlaw})
			}
			s.Sections = append(s.Sections, document.Section{Title: "Rejected ideas", Blocks: []document.Block{t}})
		}
		syn := document.Section{Title: "Synthesis"}
		if j.Synthesis != "" {
			syn.Blocks = append(syn.Blocks, document.Text(j.Synthesis))
		}
		syn.Blocks = append(syn.Blocks, labelled("Top recommendations", j.TopRecommendations)...)
		syn.Blocks = append(syn.Blocks, labelled("Strategic insights", j.StrategicInsights)...)
		syn.Blocks = append(syn.Blocks, labelled("Unresolved questions", j.UnresolvedQuestions)...)
		if len(syn.Blocks) > 0 {
			s.Sections = append(s.Sections, syn)
		}
		d.Sections = append(d.Sections, s)
	}
	if tr := res.Tournament; tr != nil && len(tr.Ratings) > 0 {
		t := &document.Table{Header: []string{"#", "Idea", "Elo", "Wins", "Losses"}, Widths: []float64{0.6, 5, 1.2, 1, 1}}
		for i, r := range tr.Ratings {
			t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), r.IdeaName, strconv.FormatFloat(r.Elo, 'f', 0, 64), strconv.Itoa(r.Wins), strconv.Itoa(r.Losses)})
		}
		d.Sections = append(d.Sections, document.Section{Title: "Tournament", Blocks: []document.Block{
			document.Textf("%d rounds, %d pairwise comparisons.", tr.Rounds, tr.Comparisons), t}})
	}
	if a, ok := pipeline.RepairsAppendix(res.Repairs); ok {
		d.Appendices = append(d.Appendices, a)
	}
	return d, nil
}

func labelled(label string, items []string) []document.Block {
	if len(items) == 0 {
		return nil
	}
	return []document.Block{document.Para(document.Bold(label + ":")), document.Bullets(items...)}
}

// Table flattens a succeeded run into one row per judged idea, accepted
// and rejected, iteration by iteration.
func Table(run *madspark.Run) ([]string, [][]string, error) {
	res, _, err := resultOf(run)
	if err != nil {
		return nil, nil, err
	}
	header := []string{"prompt", "iteration", "status", "idea_name", "quality_score", "feasibility_score", "impact_score", "originality_score",
		"key_points", "implementation_path", "required_resources", "success_metrics", "next_steps", "rejection_reason", "fatal_flaw", "elo"}
	elo := map[string]string{}
	if res.Tournament != nil {
		for _, r := range res.Tournament.Ratings {
			elo[r.IdeaName] = strconv.FormatFloat(r.Elo, 'f', 0, 64)
		}
	}
	join := func(l []string) string { return strings.Join(l, "; ") }
	var rows [][]string
	for _, it := range res.Iterations {
		n := strconv.Itoa(it.Number)
		for _, a := range it.Judgement.AcceptedIdeas {
			rows = append(rows, []string{res.Prompt, n, "accepted", a.IdeaName, num(a.QualityScore), num(a.FeasibilityScore), num(a.ImpactScore), num(a.OriginalityScore),
				join(a.KeyPoints), a.ImplementationPath, join(a.RequiredResources), join(a.SuccessMetrics), join(a.NextSteps), "", "", elo[a.IdeaName]})
		}
		for _, r := range it.Judgement.RejectedIdeas {
			rows = append(rows, []string{res.Prompt, n, "rejected", r.IdeaName, num(r.QualityScore), "", "", "", "", "", "", "", "", r.RejectionReason, r.FatalFlaw, ""})
		}
	}
	return header, rows, nil
}

// Ideas are the ideas a succeeded run accepted, in order, as bookmarks keep
// them: the name and key points, the quality score.
func Ideas(run *madspark.Run) ([]pipeline.Idea, error) {
	res, p, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	var out []pipeline.Idea
	for _, it := range res.Iterations {
		for _, a := range it.Judgement.AcceptedIdeas {
			text := a.IdeaName
			if len(a.KeyPoints) > 0 {
				text += ": " + strings.Join(a.KeyPoints, "; ")
			}
			out = append(out, pipeline.Idea{Text: text, Score: a.QualityScore, Topic: res.Prompt, Temperature: p.TempA})
		}
	}
	return out, nil
}
