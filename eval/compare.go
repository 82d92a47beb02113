package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// Comparison sets two evals side by side: two configurations (pipelines,
// parameters, models, judges) measured against their single-call
// baselines.
type Comparison struct {
	A Summary `json:"a"`
	B Summary `json:"b"`
	// Difference is B's win rate minus A's.
	Difference float64 `json:"difference"`
	// Overlap reports whether the two 95% intervals overlap: if they do,
	// the evals do not show that one configuration does better.
	Overlap bool `json:"intervals_overlap"`
	// Items pairs the topics the two evals share, by topic text, in A's
	// order.
	Items []ComparedItem `json:"items"`
	// Notice says that a mock eval proves nothing.
	Notice string `json:"notice,omitempty"`
}

// Summary is one eval of a comparison.
type Summary struct {
	RunID         string     `json:"run_id"`
	Pipeline      string     `json:"pipeline"`
	Provider      string     `json:"provider"`
	Model         string     `json:"model"`
	JudgeProvider string     `json:"judge_provider"`
	JudgeModel    string     `json:"judge_model"`
	N             int        `json:"n"`
	Wins          int        `json:"wins"`
	Losses        int        `json:"losses"`
	Ties          int        `json:"ties"`
	WinRate       float64    `json:"win_rate"`
	CI            [2]float64 `json:"ci"`
	Usage         Usage      `json:"usage"`
}

// ComparedItem is a topic both evals judged.
type ComparedItem struct {
	Topic string `json:"topic"`
	// A and B are each eval's winner on the topic ("pipeline",
	// "baseline", "tie", or "" when it failed there).
	A string `json:"a"`
	B string `json:"b"`
}

func summary(r *Report) Summary {
	return Summary{RunID: r.RunID, Pipeline: r.Pipeline, Provider: r.Provider, Model: r.Model, JudgeProvider: r.JudgeProvider, JudgeModel: r.JudgeModel,
		N: r.N, Wins: r.Wins, Losses: r.Losses, Ties: r.Ties, WinRate: r.WinRate, CI: r.CI, Usage: r.Usage}
}

// Compare sets evals a and b side by side.
func Compare(a, b *Report) *Comparison {
	c := &Comparison{A: summary(a), B: summary(b), Difference: round4(b.WinRate - a.WinRate), Items: []ComparedItem{}}
	c.Overlap = a.CI[0] <= b.CI[1] && b.CI[0] <= a.CI[1]
	if a.Notice != "" || b.Notice != "" {
		c.Notice = MockNotice
	}
	byTopic := map[string]string{}
	for _, it := range b.Items {
		byTopic[it.Topic] = it.Winner
	}
	for _, it := range a.Items {
		if w, ok := byTopic[it.Topic]; ok {
			c.Items = append(c.Items, ComparedItem{Topic: it.Topic, A: it.Winner, B: w})
		}
	}
	return c
}

// Write writes the comparison as format: "text", "json" or "markdown".
func (c *Comparison) Write(w io.Writer, format string) error {
	if format == "json" {
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	md := format == "markdown"
	if md {
		b.WriteString("# Two evals compared\n\n")
	}
	if c.Notice != "" {
		fmt.Fprintf(&b, "%s\n\n", c.Notice)
	}
	verdict := "The intervals overlap: these evals do not show that either configuration does better."
	if !c.Overlap {
		better := "A"
		if c.Difference > 0 {
			better = "B"
		}
		verdict = fmt.Sprintf("The intervals do not overlap: %s does better against its baseline.", better)
	}
	row := func(name string, s Summary) []string {
		return []string{name, s.RunID, s.Pipeline, s.Provider + "/" + s.Model, s.JudgeProvider + "/" + s.JudgeModel, fmt.Sprint(s.N),
			fmt.Sprintf("%d/%d/%d", s.Wins, s.Losses, s.Ties), pct(s.WinRate), pct(s.CI[0]) + "–" + pct(s.CI[1]), s.Usage.Total.Cost()}
	}
	header := []string{"", "EVAL", "PIPELINE", "MODEL", "JUDGE", "N", "W/L/T", "WIN RATE", "95% CI", "COST"}
	rows := [][]string{row("A", c.A), row("B", c.B)}
	table(&b, md, header, rows)
	fmt.Fprintf(&b, "\nDifference in win rate (B − A): %+.1f points. %s\n", c.Difference*100, verdict)
	if len(c.Items) > 0 {
		b.WriteString("\n")
		var items [][]string
		for _, it := range c.Items {
			items = append(items, []string{cut(it.Topic, 60), orFailed(it.A), orFailed(it.B)})
		}
		table(&b, md, []string{"TOPIC", "A", "B"}, items)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orFailed(w string) string {
	if w == "" {
		return "failed"
	}
	return w
}

// table writes a table, aligned as text or as a Markdown table.
func table(b *strings.Builder, md bool, header []string, rows [][]string) {
	if md {
		esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
		line := func(cells []string) {
			for i := range cells {
				cells[i] = esc(cells[i])
			}
			fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
		}
		line(append([]string(nil), header...))
		fmt.Fprintf(b, "|%s\n", strings.Repeat(" --- |", len(header)))
		for _, r := range rows {
			line(r)
		}
		return
	}
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// RunComparison is two succeeded runs of one pipeline judged against each
// other in both orders, as an eval judges a pipeline against its
// baseline: a disagreement between the orders is a tie.
type RunComparison struct {
	Pipeline string `json:"pipeline"`
	// A and B are the runs' IDs.
	A string `json:"a"`
	B string `json:"b"`
	// Topic is what run A was asked.
	Topic string `json:"topic"`
	// Winner is "a", "b" or "tie".
	Winner     string `json:"winner"`
	Consistent bool   `json:"consistent"`
	// Verdicts are the judge's, run A's answer shown first, then run B's;
	// each names "a", "b" or "tie".
	Verdicts []OrderVerdict `json:"verdicts"`
	Usage    llm.Usage      `json:"usage"`
	Notice   string         `json:"notice,omitempty"`
}

// CompareRuns judges succeeded runs a and b of the same pipeline against
// each other, in both orders, through c (two calls), with the judge named
// by judgeProvider and judgeModel (empty: c's default).
func (e *Evaluator) CompareRuns(ctx context.Context, c llm.Client, a, b *madspark.Run, judgeProvider, judgeModel string) (*RunComparison, error) {
	for _, r := range []*madspark.Run{a, b} {
		if r.Status != madspark.RunSucceeded {
			return nil, fmt.Errorf("run %s has not succeeded (status %s)", r.ID, r.Status)
		}
		if r.Pipeline == Name {
			return nil, fmt.Errorf("run %s is an eval: compare two evals, or two runs of a pipeline", r.ID)
		}
	}
	if a.Pipeline != b.Pipeline {
		return nil, fmt.Errorf("run %s is a %s run and run %s a %s run: compare runs of one pipeline", a.ID, a.Pipeline, b.ID, b.Pipeline)
	}
	def, err := e.deps.Registry.Get(a.Pipeline)
	if err != nil {
		return nil, err
	}
	var answers [2]string
	for i, r := range []*madspark.Run{a, b} {
		text, err := answerOf(def, r)
		if err != nil {
			return nil, err
		}
		answers[i] = clip(text)
	}
	var params map[string]any
	_ = json.Unmarshal(a.Params, &params)
	k := kindOf(def.Name)
	request := requestText(def.Name, params)
	orders := [2]judgeInput{
		{Pipeline: def.Name, Rubric: k.rubric, Request: request, A: answers[0], B: answers[1]},
		{Pipeline: def.Name, Rubric: k.rubric, Request: request, A: answers[1], B: answers[0]},
	}
	var outs [2]judgeOut
	var g errgroup.Group
	for i := range orders {
		g.Go(func() error {
			var err error
			outs[i], err = e.judgeOnce(ctx, c, orders[i], judgeProvider, judgeModel)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(params)
	cmp := &RunComparison{Pipeline: def.Name, A: a.ID, B: b.ID, Topic: topicOf(e.deps.Registry, def, raw)}
	for _, o := range outs {
		cmp.Usage.Add(o.Usage)
	}
	name := map[Outcome]string{Win: "a", Loss: "b", Tie: "tie"}
	outcome, consistent := Combine(outs[0].Winner, outs[1].Winner)
	cmp.Winner, cmp.Consistent = name[outcome], consistent
	cmp.Verdicts = []OrderVerdict{
		{Order: "a_first", Winner: name[fromPipeline(outs[0].Winner, "A")], Reasons: outs[0].Reasons},
		{Order: "b_first", Winner: name[fromPipeline(outs[1].Winner, "B")], Reasons: outs[1].Reasons},
	}
	if a.Mode == "mock" || b.Mode == "mock" {
		cmp.Notice = MockNotice
	}
	return cmp, nil
}

// Write writes the comparison as format: "text", "json" or "markdown".
func (c *RunComparison) Write(w io.Writer, format string) error {
	if format == "json" {
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	if format == "markdown" {
		b.WriteString("# Two runs compared\n\n")
	}
	if c.Notice != "" {
		fmt.Fprintf(&b, "%s\n\n", c.Notice)
	}
	winner := map[string]string{"a": "A (" + c.A + ")", "b": "B (" + c.B + ")", "tie": "neither: a tie"}[c.Winner]
	fmt.Fprintf(&b, "%s runs on %q: the better answer is %s", c.Pipeline, cut(c.Topic, 80), winner)
	if !c.Consistent {
		b.WriteString(" (the two orders disagree)")
	}
	b.WriteString(".\n\n")
	rows := [][]string{}
	for _, v := range c.Verdicts {
		rows = append(rows, []string{strings.ReplaceAll(v.Order, "_", " "), v.Winner, cut(v.Reasons, 160)})
	}
	table(&b, format == "markdown", []string{"ORDER", "VERDICT", "REASONS"}, rows)
	fmt.Fprintf(&b, "\nJudge: %s\n", c.Usage)
	_, err := io.WriteString(w, b.String())
	return err
}
