package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
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
			fmt.Sprintf("%d/%d/%d", s.Wins, s.Losses, s.Ties), pct(s.WinRate), pct(s.CI[0]) + "–" + pct(s.CI[1]), fmt.Sprintf("$%.4f", s.Usage.Total.CostUSD)}
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
