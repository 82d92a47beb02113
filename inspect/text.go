package inspect

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
)

// WriteRuns writes runs as a table for people, one line per run: its ID,
// pipeline, status, mode, creation time, calls (made and cached) and
// topic.
func WriteRuns(w io.Writer, runs []*madspark.Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tPIPELINE\tSTATUS\tMODE\tCREATED\tCALLS\tCACHED\tTOPIC")
	for _, r := range runs {
		t := r.Topic()
		if len([]rune(t)) > 48 {
			t = string([]rune(t)[:47]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.ID, input.Show(r.Pipeline), r.Status, r.Mode,
			r.CreatedAt.Local().Format(time.DateTime), r.Usage.LLMCalls, r.Usage.CachedCalls, input.Show(t))
	}
	return tw.Flush()
}

// WriteTable writes v as a table, one line per step in order, and a total.
func WriteTable(w io.Writer, v *View) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tAGENT\tMODEL\tSTATUS\tATTEMPTS\tCACHED\tIN\tOUT\tLATENCY\tCOST\tREPAIRS")
	for _, s := range v.Steps {
		cached := "no"
		if s.Cached {
			cached = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%d\n", input.Show(s.Key), input.Show(dash(s.Agent)), input.Show(dash(s.Model)), s.Status,
			s.Attempts, cached, s.InputTokens, s.OutputTokens, latency(s.LatencyMS), costText(s.CostUSD), len(s.Repairs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d steps; %s\n", len(v.Steps), v.Usage)
	return err
}

// WriteStep writes step s in full: each call's prompt, message by message,
// and its response.
func WriteStep(w io.Writer, s *Step) error {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s: %s", s.Key, s.Status)
	if s.Error != "" {
		fmt.Fprintf(&b, " (%s)", failure.Plain(s.Error))
	}
	fmt.Fprintf(&b, ", started %s, %s, %d input + %d output tokens, %s\n",
		s.StartedAt.Format(time.RFC3339Nano), latency(s.LatencyMS), s.InputTokens, s.OutputTokens, costText(s.CostUSD))
	if len(s.Calls) == 0 {
		b.WriteString("\nno LLM call\n")
	}
	for i, c := range s.Calls {
		fmt.Fprintf(&b, "\n=== call %d of %d: %s, %s/%s, attempt %d", i+1, len(s.Calls), dash(c.Agent), dash(c.Provider), dash(c.Model), c.Attempt)
		if c.Retries > 0 {
			fmt.Fprintf(&b, ", retry %d", c.Retries)
		}
		switch {
		case c.Cached:
			b.WriteString(", cached")
		case !c.Sent:
			b.WriteString(", not sent")
		}
		fmt.Fprintf(&b, ", %s, %d input + %d output tokens, %s ===\n", latency(c.LatencyMS), c.InputTokens, c.OutputTokens, costText(c.CostUSD))
		// What was sent, as sent; the agent's prompt when nothing was.
		msgs := c.Messages
		if len(msgs) == 0 {
			msgs = c.Prompt
		}
		for _, m := range msgs {
			role := m.Role
			if m.ToolCallID != "" {
				role += " " + m.ToolCallID
			}
			fmt.Fprintf(&b, "--- %s ---\n%s\n", role, strings.TrimRight(m.Content, "\n"))
			writeCalls(&b, m.ToolCalls)
		}
		if len(c.ResponseFormat) > 0 {
			fmt.Fprintf(&b, "--- response_format ---\n%s\n", c.ResponseFormat)
		}
		if len(c.Tools) > 0 {
			names := make([]string, len(c.Tools))
			for i, t := range c.Tools {
				names[i] = t.Name
			}
			fmt.Fprintf(&b, "--- tools ---\n%s", strings.Join(names, ", "))
			if c.ToolChoice != nil {
				fmt.Fprintf(&b, " (tool choice %s%s)", c.ToolChoice.Mode, strings.TrimSuffix(" "+c.ToolChoice.Name, " "))
			}
			b.WriteString("\n")
		}
		if c.Error != "" {
			fmt.Fprintf(&b, "--- error ---\n%s\n", failure.Plain(c.Error))
			continue
		}
		fmt.Fprintf(&b, "--- response ---\n%s\n", strings.TrimRight(c.Response, "\n"))
		writeCalls(&b, c.ToolCalls)
	}
	// Prompts and replies are shown, never acted on by a terminal.
	_, err := io.WriteString(w, input.ShowText(b.String()))
	return err
}

// writeCalls writes tool calls, one a line: "→ call_1 weather({...})".
func writeCalls(b *strings.Builder, calls []llm.ToolCall) {
	for _, c := range calls {
		fmt.Fprintf(b, "→ %s %s(%s)\n", c.ID, c.Name, c.Arguments)
	}
}

// costText is a cost for people: "$0.0123", or "unpriced" when it is not
// known.
func costText(c *float64) string {
	if c == nil {
		return "unpriced"
	}
	return fmt.Sprintf("$%.4f", *c)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func latency(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}
