package mdconv

import (
	"strings"
	"testing"

	"github.com/madspark/madspark/document"
)

const analysis = `# Solar co-ops

An intro with **bold**, *italic* and a [link](https://example.org/x).

## What We Do

We sell shares.

- first point
  - a nested point
- second point

## Market Size

| Segment | Size |
|---|---|
| Homes | 10M |
| Farms |

### Method

1. count
2. check

` + "```\ncode stays text\n```\n" + `
> quoted
`

func TestConvert(t *testing.T) {
	lead, secs := Convert(analysis, "Solar co-ops")
	if len(lead) != 1 {
		t.Fatalf("lead = %d blocks, want the intro", len(lead))
	}
	p := lead[0].(*document.Paragraph)
	var bold, italic, link bool
	for _, s := range p.Spans {
		bold = bold || (s.Bold && s.Text == "bold")
		italic = italic || (s.Italic && s.Text == "italic")
		link = link || (s.URL == "https://example.org/x" && s.Text == "link")
	}
	if !bold || !italic || !link {
		t.Errorf("intro spans: %+v", p.Spans)
	}
	if len(secs) != 2 || secs[0].Title != "What We Do" || secs[1].Title != "Market Size" {
		t.Fatalf("sections: %+v", secs)
	}
	l := secs[0].Blocks[1].(*document.List)
	if len(l.Items) != 3 || !strings.HasPrefix(spans(l.Items[1].Spans), "– a nested point") {
		t.Errorf("list: %+v", l.Items)
	}
	tbl := secs[1].Blocks[0].(*document.Table)
	if strings.Join(tbl.Header, "|") != "Segment|Size" || len(tbl.Rows) != 2 || len(tbl.Rows[1]) != 2 || tbl.Rows[0][1] != "10M" {
		t.Errorf("table: %+v", tbl)
	}
	if len(secs[1].Sections) != 1 || secs[1].Sections[0].Title != "Method" {
		t.Fatalf("sub-sections: %+v", secs[1].Sections)
	}
	sub := secs[1].Sections[0].Blocks
	if ol := sub[0].(*document.List); !ol.Ordered || len(ol.Items) != 2 {
		t.Errorf("ordered list: %+v", sub[0])
	}
	if spans(sub[1].(*document.Paragraph).Spans) != "code stays text" || !sub[2].(*document.Paragraph).Spans[0].Italic {
		t.Errorf("code and quote: %+v %+v", sub[1], sub[2])
	}
	// Rendered back, the document holds the same words.
	md := string(document.Markdown(&document.Document{Title: "t", Sections: secs}))
	for _, s := range []string{"What We Do", "a nested point", "| Homes | 10M |", "Method"} {
		if !strings.Contains(md, s) {
			t.Errorf("rendered Markdown lacks %q:\n%s", s, md)
		}
	}
	// The title kept when it is not the document's.
	if _, secs := Convert(analysis, "Other"); len(secs) != 1 || secs[0].Title != "Solar co-ops" || len(secs[0].Sections) != 2 {
		t.Errorf("with another title: %+v", secs)
	}
}

func spans(ss []document.Span) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.Text)
	}
	return b.String()
}

func TestBlocks(t *testing.T) {
	bs := Blocks("## Heading\n\ntext")
	if len(bs) != 2 || !bs[0].(*document.Paragraph).Spans[0].Bold {
		t.Errorf("Blocks = %+v", bs)
	}
}

func TestConvertKeepsOnlySafeLinks(t *testing.T) {
	src := "[a](javascript:alert(1)) [b](data:text/html,x) <javascript:alert(2)> <ada@example.org> [c](https://example.org/c) " +
		"[d](JAVASCRIPT:x) [e](  javascript:x) [f](java&#115;cript:x) [g](<javascript:x>) [h](file:///etc/passwd) [i](/relative) " +
		"![j](javascript:x) [k][ref] <mailto:bob@example.org> <script>alert(3)</script>\n\n<iframe src=x></iframe>\n\n[ref]: vbscript:x\n"
	bs := Blocks(src)
	if len(bs) != 1 {
		t.Fatalf("Blocks = %d blocks, want the paragraph alone: %+v", len(bs), bs)
	}
	links := map[string]string{}
	for _, s := range bs[0].(*document.Paragraph).Spans {
		if s.URL != "" {
			links[strings.TrimSpace(s.Text)] = s.URL
		}
		if strings.Contains(s.Text, "<") || strings.Contains(s.Text, "iframe") {
			t.Errorf("raw HTML kept as text: %q", s.Text)
		}
	}
	want := map[string]string{"ada@example.org": "mailto:ada@example.org", "c": "https://example.org/c", "mailto:bob@example.org": "mailto:bob@example.org"}
	if len(links) != len(want) {
		t.Errorf("links %q, want %q", links, want)
	}
	for k, v := range want {
		if links[k] != v {
			t.Errorf("link %q = %q, want %q (all: %q)", k, links[k], v, links)
		}
	}
	for _, text := range []string{"a", "b", "javascript:alert(2)", "d", "e", "f", "g", "h", "i", "j", "k", "alert(3)"} {
		if !strings.Contains(" "+spans(bs[0].(*document.Paragraph).Spans)+" ", " "+text+" ") {
			t.Errorf("text %q lost: %q", text, spans(bs[0].(*document.Paragraph).Spans))
		}
	}
}

func TestConvertReadsEscapesAndReferences(t *testing.T) {
	bs := Blocks("a \\| b \\*c\\* AT&amp;T &#x3C;b&#x3E; &copy; &nosuch; \\q `co\\*de &amp;` [x&amp;y](https://example.org/?a=1&amp;b=2)\n")
	p := bs[0].(*document.Paragraph)
	if got, want := spans(p.Spans), "a | b *c* AT&T <b> © &nosuch; \\q co\\*de &amp; x&y"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if u := p.Spans[len(p.Spans)-1].URL; u != "https://example.org/?a=1&b=2" {
		t.Errorf("URL %q", u)
	}
}
