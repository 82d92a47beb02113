package debate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/document/mdconv"
	"github.com/madspark/madspark/pipeline"
)

const mockNotice = "MOCK DATA: generated offline by the mock provider, not by a language model."

func resultOf(run *madspark.Run) (*Result, error) { return pipeline.StoredResult[Result](run) }

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// percent is a 0-1 confidence for people: a whole percentage.
func percent(x float64) string { return strconv.Itoa(int(math.Round(x*100))) + "%" }

// confidence is a handoff's confidence for people, "not given" when its
// reply gave none.
func confidence(x *float64) string {
	if x == nil {
		return "not given"
	}
	return percent(*x)
}

// optNum is num of x, empty when x is nil.
func optNum(x *float64) string {
	if x == nil {
		return ""
	}
	return num(*x)
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}

// Document lays a succeeded debate out for reading: the answer, how the
// query was routed, the proposers' handoffs, the peer ranking, the sources
// and, as an appendix, the state machine's transitions.
func Document(run *madspark.Run) (*document.Document, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, err
	}
	d := &document.Document{
		Title:    shorten(res.Query, 140),
		Subtitle: "madspark debate",
		TitleLines: []string{
			fmt.Sprintf("Run %s · %s/%s · %s", run.ID, run.Provider, run.Model, run.FinishedAt.UTC().Format("2 January 2006 15:04 MST")),
			fmt.Sprintf("%s path, %d round(s) · %s%s", res.Path, res.Rounds, run.Usage, pipeline.RepairsNote(res.Repairs)),
		},
		Author:  "madspark",
		Subject: shorten(res.Query, 200),
	}
	if run.Mode == "mock" {
		d.Notice, d.PageNotice = mockNotice, "MOCK DATA"
	}
	lead, subs := mdconv.Convert(res.Answer, "")
	answer := document.Section{Title: "Answer", Blocks: lead, Sections: subs}
	if utf8.RuneCountInString(res.Query) > 140 {
		answer.Blocks = append([]document.Block{document.Para(document.Bold("Query: "), document.Plain(res.Query))}, answer.Blocks...)
	}
	if len(res.ToolCalls) > 0 {
		// The answer is the asker's tools to call, not text yet.
		var calls []string
		for _, c := range res.ToolCalls {
			calls = append(calls, fmt.Sprintf("%s(%s) — call %s", c.Name, c.Arguments, c.ID))
		}
		answer.Blocks = append(answer.Blocks, document.Para(document.Bold("Tool calls:")), document.Bullets(calls...))
	}
	d.Sections = append(d.Sections, answer)

	f := res.Route.Features
	route := document.Section{Title: "Route", Blocks: document.KeyValues(
		[2]string{"Complexity", fmt.Sprintf("%s (confidence %s)", res.Route.Level, percent(res.Route.Confidence))},
		[2]string{"Path taken", string(res.Path)},
		[2]string{"Tokens in the query", strconv.Itoa(f.TokenCount)},
		[2]string{"Code block", strconv.FormatBool(f.HasCodeBlock)},
		[2]string{"Reasoning keywords", strings.Join(f.Keywords, ", ")},
		[2]string{"Multi-step indicators", strconv.FormatBool(f.HasMultiStepIndicators)},
	)}
	d.Sections = append(d.Sections, route)

	if len(res.Handoffs) > 0 {
		hs := document.Section{Title: "Handoffs", Blocks: []document.Block{document.Text("What each proposer posted to the blackboard for the aggregator.")}}
		for _, h := range res.Handoffs {
			sub := document.Section{Title: fmt.Sprintf("%s, round %d", h.FromRole, h.Round), Blocks: []document.Block{
				document.Para(document.Bold("Confidence: "), document.Plain(confidence(h.ConfidenceScore))),
				document.Text(h.ContextSummary),
			}}
			if len(h.KeyPoints) > 0 {
				sub.Blocks = append(sub.Blocks, document.Bullets(h.KeyPoints...))
			}
			hs.Sections = append(hs.Sections, sub)
		}
		d.Sections = append(d.Sections, hs)
	}
	if len(res.Ranking) > 0 {
		t := &document.Table{Header: []string{"#", "Proposer", "Borda points"}}
		for i, r := range res.Ranking {
			t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), string(r.Role), strconv.Itoa(r.Points)})
		}
		d.Sections = append(d.Sections, document.Section{Title: "Peer ranking", Blocks: []document.Block{t}})
	}
	src := document.Section{Title: "Sources"}
	if res.SearchNote != "" {
		src.Blocks = append(src.Blocks, document.Text(res.SearchNote))
	}
	if len(res.Sources) > 0 {
		l := &document.List{Ordered: true}
		for _, s := range res.Sources {
			l.Items = append(l.Items, *document.Para(document.Link(s.Title, s.URL), document.Plain(" — "+shorten(s.Snippet, 200))))
		}
		src.Blocks = append(src.Blocks, l)
	}
	if len(src.Blocks) > 0 {
		d.Sections = append(d.Sections, src)
	}
	if len(res.Transitions) > 0 {
		t := &document.Table{Header: []string{"From", "Event", "To", "Round", "Detail"}}
		for _, tr := range res.Transitions {
			round := ""
			if tr.Round > 0 {
				round = strconv.Itoa(tr.Round)
			}
			t.Rows = append(t.Rows, []string{string(tr.From), string(tr.Event), string(tr.To), round, tr.Detail})
		}
		d.Appendices = append(d.Appendices, document.Section{Title: "State machine", Blocks: []document.Block{t}})
	}
	if a, ok := pipeline.RepairsAppendix(res.Repairs); ok {
		d.Appendices = append(d.Appendices, a)
	}
	return d, nil
}

// Table flattens a succeeded debate into rows: the answer, each handoff,
// each peer ranking and each source.
func Table(run *madspark.Run) ([]string, [][]string, error) {
	res, err := resultOf(run)
	if err != nil {
		return nil, nil, err
	}
	header := []string{"kind", "role", "round", "confidence", "text", "key_points", "title", "url"}
	rows := [][]string{{"answer", "aggregator", strconv.Itoa(res.Rounds), num(res.Route.Confidence), res.Answer, "", res.Query, ""}}
	if res.Path == Simple {
		rows[0][1] = string(Direct)
	}
	for _, h := range res.Handoffs {
		rows = append(rows, []string{"handoff", string(h.FromRole), strconv.Itoa(h.Round), optNum(h.ConfidenceScore), h.ContextSummary, strings.Join(h.KeyPoints, "; "), "", ""})
	}
	for _, r := range res.Ranking {
		rows = append(rows, []string{"ranking", string(r.Role), "", strconv.Itoa(r.Points), "", "", "", ""})
	}
	for _, s := range res.Sources {
		rows = append(rows, []string{"source", "", "", num(s.Score), s.Snippet, "", s.Title, s.URL})
	}
	return header, rows, nil
}
