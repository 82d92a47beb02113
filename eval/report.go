package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
)

// Report is an eval's result: its JSON is the eval's output and the
// stored result of its run.
type Report struct {
	// RunID is the eval's run.
	RunID    string `json:"run_id"`
	Pipeline string `json:"pipeline"`
	Mode     string `json:"mode"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// JudgeProvider and JudgeModel are what judged; JudgeModel is empty
	// for another provider's default model.
	JudgeProvider string `json:"judge_provider"`
	JudgeModel    string `json:"judge_model"`
	// Topics is how many topics the eval had; N how many were judged.
	Topics int `json:"topics"`
	N      int `json:"n"`
	Wins   int `json:"wins"`
	Losses int `json:"losses"`
	Ties   int `json:"ties"`
	// Failures counts topics whose pipeline run, baseline or judgement
	// failed; they are not in N.
	Failures int `json:"failures"`
	// WinRate is (wins + ties/2) / n, and CI its 95% Wilson interval.
	WinRate float64    `json:"win_rate"`
	CI      [2]float64 `json:"ci"`
	// PositionConsistency is the share of judged topics whose two orders
	// agreed.
	PositionConsistency float64 `json:"position_consistency"`
	// PipelineRepairs counts the repairs made to the pipeline runs'
	// replies; Repairs lists those made to the baseline's and the judge's.
	PipelineRepairs int          `json:"pipeline_repairs"`
	Repairs         []llm.Repair `json:"repairs"`
	// ReusedRuns counts the topics whose pipeline run was an earlier
	// one, reused: its calls were paid by that run and are not counted
	// in Usage again.
	ReusedRuns int    `json:"reused_runs"`
	Usage      Usage  `json:"usage"`
	Items      []Item `json:"items"`
	// Notice says, for a mock eval, that it proves nothing.
	Notice string `json:"notice,omitempty"`
}

// Usage is what each side of an eval cost.
type Usage struct {
	Pipeline SideUsage `json:"pipeline"`
	Baseline SideUsage `json:"baseline"`
	Judge    SideUsage `json:"judge"`
	// Total is the three together.
	Total llm.Usage `json:"total"`
}

// SideUsage is the usage of one side, with its wall time: the sum over
// topics of the time its calls took.
type SideUsage struct {
	llm.Usage
	WallMS int64 `json:"wall_ms"`
}

// sideExtra are SideUsage's own fields.
type sideExtra struct {
	WallMS int64 `json:"wall_ms"`
}

// MarshalJSON encodes s as one object: its usage and wall_ms.
func (s SideUsage) MarshalJSON() ([]byte, error) {
	return llm.MarshalUsageWith(s.Usage, sideExtra{s.WallMS})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (s *SideUsage) UnmarshalJSON(b []byte) error {
	var e sideExtra
	if err := llm.UnmarshalUsageWith(b, &s.Usage, &e); err != nil {
		return err
	}
	s.WallMS = e.WallMS
	return nil
}

func (s *SideUsage) add(o SideUsage) {
	s.Usage.Add(o.Usage)
	s.WallMS += o.WallMS
}

// Item is one topic of an eval.
type Item struct {
	// Index is the topic's place in the eval, from 1.
	Index int    `json:"index"`
	Topic string `json:"topic"`
	// Winner is "pipeline", "baseline" or "tie"; empty when the topic
	// failed.
	Winner  string  `json:"winner"`
	Outcome Outcome `json:"outcome,omitempty"`
	// Consistent reports whether the judge's two orders agreed.
	Consistent bool `json:"consistent"`
	// Verdicts are the judge's two verdicts, the pipeline's answer shown
	// first, then the baseline's.
	Verdicts []OrderVerdict `json:"verdicts"`
	// RunID is the pipeline's run; Reused that it was an earlier run,
	// whose calls PipelineUsage does not count again.
	RunID   string `json:"run_id,omitempty"`
	Reused  bool   `json:"reused,omitempty"`
	Repairs int    `json:"repairs"`
	// Error says why the topic failed, and Failure what kind of failure
	// it was.
	Error         string           `json:"error,omitempty"`
	Failure       *failure.Failure `json:"failure,omitempty"`
	PipelineUsage SideUsage        `json:"pipeline_usage"`
	BaselineUsage SideUsage        `json:"baseline_usage"`
	JudgeUsage    SideUsage        `json:"judge_usage"`
}

// OrderVerdict is the judge's verdict in one order.
type OrderVerdict struct {
	// Order is "pipeline_first" or "baseline_first".
	Order string `json:"order"`
	// Winner is "pipeline", "baseline" or "tie".
	Winner  string `json:"winner"`
	Reasons string `json:"reasons"`
}

// Reasons is the judge's reasons in both orders, in one line.
func (it *Item) Reasons() string {
	var parts []string
	for _, v := range it.Verdicts {
		if v.Reasons != "" {
			parts = append(parts, v.Reasons)
		}
	}
	if len(parts) == 2 && parts[0] == parts[1] {
		parts = parts[:1]
	}
	return strings.Join(parts, " / ")
}

// Formats are the output formats of Report.Write.
var Formats = []string{"text", "json", "markdown"}

// Write writes the report as format: "text", "json" or "markdown".
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "markdown":
		_, err := w.Write(document.Markdown(r.Document()))
		return err
	case "text":
		return r.writeText(w)
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats, ", "))
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// Headline says the result in one line.
func (r *Report) Headline() string {
	return fmt.Sprintf("%s won %d, lost %d, tied %d of %d: win rate %s (95%% CI %s–%s)",
		r.Pipeline, r.Wins, r.Losses, r.Ties, r.N, pct(r.WinRate), pct(r.CI[0]), pct(r.CI[1]))
}

func (r *Report) judge() string {
	if r.JudgeModel == "" {
		return r.JudgeProvider + " (its default model)"
	}
	return r.JudgeProvider + "/" + r.JudgeModel
}

func (r *Report) writeText(w io.Writer) error {
	var b strings.Builder
	if r.Notice != "" {
		fmt.Fprintf(&b, "%s\n\n", r.Notice)
	}
	fmt.Fprintf(&b, "Eval %s: %s against a single call, %s/%s, judged by %s\n", r.RunID, r.Pipeline, r.Provider, r.Model, r.judge())
	fmt.Fprintf(&b, "%s\n", r.Headline())
	fmt.Fprintf(&b, "Judge position consistency: %s of topics got the same verdict in both orders\n", pct(r.PositionConsistency))
	fmt.Fprintf(&b, "%d topics, %d judged, %d failed; %d repairs in the pipeline runs, %d in the baseline and judge replies\n",
		r.Topics, r.N, r.Failures, r.PipelineRepairs, len(r.Repairs))
	if r.ReusedRuns > 0 {
		fmt.Fprintf(&b, "%d pipeline runs reused from earlier runs: their calls were paid then and are not counted here\n", r.ReusedRuns)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SIDE\tLLM CALLS\tCACHED\tINPUT TOKENS\tOUTPUT TOKENS\tCOST\tWALL TIME")
	for _, s := range r.sides() {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%.1fs\n", s.name, s.u.LLMCalls, s.u.CachedCalls, s.u.InputTokens, s.u.OutputTokens, s.u.Cost(), float64(s.u.WallMS)/1000)
	}
	tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tWINNER\tTOPIC\tREASONS")
	for _, it := range r.Items {
		winner, why := it.Winner, it.Reasons()
		if it.Error != "" {
			winner, why = "failed", it.Error
		} else if !it.Consistent {
			winner += " (orders disagree)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.Index, winner, input.Show(cut(it.Topic, 48)), input.Show(cut(why, 160)))
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

type side struct {
	name string
	u    SideUsage
}

func (r *Report) sides() []side {
	return []side{{"pipeline", r.Usage.Pipeline}, {"baseline", r.Usage.Baseline}, {"judge", r.Usage.Judge}}
}

func cut(s string, n int) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// Document lays the report out for the Markdown and PDF exports.
func (r *Report) Document() *document.Document {
	d := &document.Document{
		Title:      "Eval: " + r.Pipeline + " against a single call",
		Subtitle:   "madspark eval",
		TitleLines: []string{fmt.Sprintf("Run %s · %s/%s · judged by %s", r.RunID, r.Provider, r.Model, r.judge()), r.Usage.Total.String()},
		Author:     "madspark",
		Subject:    r.Headline(),
	}
	if r.Notice != "" {
		d.Notice, d.PageNotice = r.Notice, "MOCK DATA"
	}
	summary := document.Section{Title: "Result", Blocks: append([]document.Block{document.Text(r.Headline() + ".")}, document.KeyValues(
		[2]string{"Topics", strconv.Itoa(r.Topics)},
		[2]string{"Judged", strconv.Itoa(r.N)},
		[2]string{"Failed", strconv.Itoa(r.Failures)},
		[2]string{"Wins, losses, ties", fmt.Sprintf("%d, %d, %d", r.Wins, r.Losses, r.Ties)},
		[2]string{"Win rate (ties count half)", pct(r.WinRate)},
		[2]string{"95% Wilson interval", pct(r.CI[0]) + " – " + pct(r.CI[1])},
		[2]string{"Judge position consistency", pct(r.PositionConsistency)},
		[2]string{"Repairs in pipeline runs", strconv.Itoa(r.PipelineRepairs)},
		[2]string{"Repairs in baseline and judge replies", strconv.Itoa(len(r.Repairs))},
	)...)}
	cost := &document.Table{Header: []string{"Side", "LLM calls", "Cached", "Input tokens", "Output tokens", "Cost", "Wall time"}}
	for _, s := range r.sides() {
		cost.Rows = append(cost.Rows, []string{s.name, strconv.Itoa(s.u.LLMCalls), strconv.Itoa(s.u.CachedCalls), strconv.Itoa(s.u.InputTokens),
			strconv.Itoa(s.u.OutputTokens), s.u.Cost(), fmt.Sprintf("%.1f s", float64(s.u.WallMS)/1000)})
	}
	summary.Sections = append(summary.Sections, document.Section{Title: "Cost of each side", Blocks: []document.Block{cost}})
	h, rows := r.Table()
	topics := &document.Table{Header: []string{h[0], h[1], h[2], h[3], h[6]}, Widths: []float64{0.5, 4, 1.4, 1.2, 5}}
	for _, row := range rows {
		topics.Rows = append(topics.Rows, []string{row[0], row[1], row[2], row[3], row[6]})
	}
	d.Sections = append(d.Sections, summary, document.Section{Title: "Topics", Blocks: []document.Block{topics}})
	return d
}

// Table flattens the report into one row per topic.
func (r *Report) Table() ([]string, [][]string) {
	header := []string{"#", "Topic", "Winner", "Consistent", "Pipeline first", "Baseline first", "Reasons", "Run", "Error"}
	rows := make([][]string, 0, len(r.Items))
	for _, it := range r.Items {
		var first, second string
		if len(it.Verdicts) == 2 {
			first, second = it.Verdicts[0].Winner, it.Verdicts[1].Winner
		}
		winner := it.Winner
		if it.Error != "" {
			winner = "failed"
		}
		rows = append(rows, []string{strconv.Itoa(it.Index), it.Topic, winner, strconv.FormatBool(it.Consistent), first, second,
			it.Reasons(), it.RunID, it.Error})
	}
	return header, rows
}
