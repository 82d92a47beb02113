package bookmark

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/input"
)

// WriteTable writes bookmarks as a table for people: ID, creation time,
// score, tags and the idea (the improved one when there is one), cut to
// one line.
func WriteTable(w io.Writer, bs []*madspark.Bookmark) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tSCORE\tTAGS\tIDEA")
	for _, b := range bs {
		idea := b.ImprovedIdea
		if idea == "" {
			idea = b.IdeaText
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", input.Show(b.ID), b.CreatedAt.Local().Format(time.DateTime), scores(b), input.Show(strings.Join(b.Tags, ",")), input.Show(cut(idea, 60)))
	}
	return tw.Flush()
}

// WriteText writes one bookmark for people; a terminal shows its text
// rather than acts on it (input.ShowText).
func WriteText(w io.Writer, b *madspark.Bookmark) error {
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n\n%s\n", b.ID, b.IdeaText)
	if b.ImprovedIdea != "" {
		fmt.Fprintf(&out, "\nImproved: %s\n", b.ImprovedIdea)
	}
	fmt.Fprintf(&out, "\nTopic: %s\n", b.Topic)
	if b.Context != "" {
		fmt.Fprintf(&out, "Context: %s\n", b.Context)
	}
	fmt.Fprintf(&out, "Score: %s\nTags: %s\n", scores(b), strings.Join(b.Tags, ", "))
	if b.Notes != "" {
		fmt.Fprintf(&out, "Notes: %s\n", b.Notes)
	}
	if b.RunID != "" {
		fmt.Fprintf(&out, "Run: %s (candidate %d)\n", b.RunID, b.CandidateIndex+1)
	}
	fmt.Fprintf(&out, "Created: %s · model %s\n", b.CreatedAt.Local().Format(time.DateTime), b.Metadata.ModelUsed)
	_, err := io.WriteString(w, input.ShowText(out.String()))
	return err
}

// scores is a bookmark's score, and its improved score when it has one.
func scores(b *madspark.Bookmark) string {
	if b.ImprovedScore > 0 {
		return fmt.Sprintf("%.1f→%.1f", b.Score, b.ImprovedScore)
	}
	return fmt.Sprintf("%.1f", b.Score)
}

// cut cuts s, on one line, to n characters.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
