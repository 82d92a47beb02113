// Package document is a small, format-neutral model of a structured
// document: a title page, numbered sections and sub-sections holding
// paragraphs, lists and tables, and lettered appendices. Pipelines build a
// Document from their results and renderers turn it into files — Markdown
// here (Markdown), PDF in package document/pdf — so that every format
// shows the same content.
//
// Text is plain UTF-8; renderers escape what their format needs and
// collapse white space inside paragraphs and cells.
package document

import (
	"fmt"
	"strings"
)

// Document is a whole document.
type Document struct {
	Title    string
	Subtitle string
	// TitleLines are shown on the title page under the subtitle, one per
	// line: the author, a programme, a date.
	TitleLines []string
	// Notice is a warning shown prominently on the title page and at the
	// top of the Markdown, such as "MOCK DATA: ..."; empty for none.
	Notice string
	// PageNotice is a short form of the notice shown on every page of a
	// paged format; empty means the notice itself, cut to fit.
	PageNotice string
	// Author, Subject and Keywords describe the document in its metadata.
	Author   string
	Subject  string
	Keywords []string
	// Contents asks for a table of contents after the title page.
	Contents bool
	// Sections are numbered 1, 2, ...; their sub-sections 1.1, 1.2, ...
	Sections []Section
	// Appendices follow the sections, lettered A, B, ...; their
	// sub-sections A.1, A.2, ...
	Appendices []Section
}

// MaxDepth is the deepest level of sub-sections: 1.1.1.
const MaxDepth = 3

// Section is a numbered part of a document.
type Section struct {
	Title  string
	Blocks []Block
	// Sections are the sub-sections, after the blocks.
	Sections []Section
}

// Block is a paragraph, list or table: *Paragraph, *List or *Table.
type Block interface{ block() }

// Span is a run of text in one style. A span with a URL is a hyperlink.
type Span struct {
	Text   string
	Bold   bool
	Italic bool
	URL    string
}

// Paragraph is a run of spans.
type Paragraph struct {
	Spans []Span
}

// List is a bulleted or numbered list of paragraphs.
type List struct {
	Ordered bool
	Items   []Paragraph
}

// Table is a grid of plain-text cells with a header row.
type Table struct {
	Header []string
	Rows   [][]string
	// Widths are the columns' relative widths; nil means equal widths.
	Widths []float64
}

func (*Paragraph) block() {}
func (*List) block()      {}
func (*Table) block()     {}

// Count says how many of a thing there are, in the singular for exactly
// one: Count(1, "iteration") is "1 iteration", Count(3, "iteration") "3
// iterations".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Text returns a paragraph of plain text.
func Text(s string) *Paragraph { return &Paragraph{Spans: []Span{{Text: s}}} }

// Textf returns a paragraph of formatted plain text.
func Textf(format string, a ...any) *Paragraph { return Text(fmt.Sprintf(format, a...)) }

// Para returns a paragraph of spans.
func Para(spans ...Span) *Paragraph { return &Paragraph{Spans: spans} }

// Plain makes a span of plain text.
func Plain(s string) Span { return Span{Text: s} }

// Bold makes a span of bold text.
func Bold(s string) Span { return Span{Text: s, Bold: true} }

// Italic makes a span of italic text.
func Italic(s string) Span { return Span{Text: s, Italic: true} }

// Link makes a hyperlink to url showing s.
func Link(s, url string) Span { return Span{Text: s, URL: url} }

// Bullets returns a bulleted list of plain-text items.
func Bullets(items ...string) *List {
	l := &List{}
	for _, s := range items {
		l.Items = append(l.Items, Paragraph{Spans: []Span{{Text: s}}})
	}
	return l
}

// Numbered returns a numbered list of plain-text items.
func Numbered(items ...string) *List {
	l := Bullets(items...)
	l.Ordered = true
	return l
}

// KeyValues returns a paragraph per pair, "Key: value" with the key in
// bold; pairs with an empty value are left out.
func KeyValues(pairs ...[2]string) []Block {
	var out []Block
	for _, kv := range pairs {
		if strings.TrimSpace(kv[1]) == "" {
			continue
		}
		out = append(out, Para(Bold(kv[0]+": "), Plain(kv[1])))
	}
	return out
}

// Heading is a section as a renderer sees it: where it is and what it is
// called.
type Heading struct {
	// Number is "1", "1.2", "A", "A.1", ...
	Number string
	// Level is 1 for a section or appendix, 2 for its sub-sections, ...
	Level int
	Title string
	// Appendix is true within the appendices.
	Appendix bool
	// Anchor is a name unique within the document, such as "sec-1-2",
	// for links to the heading.
	Anchor string
}

// Label returns the heading as shown: "1.2 Title", or "Appendix A: Title"
// for an appendix's top level.
func (h Heading) Label() string {
	if h.Appendix && h.Level == 1 {
		return "Appendix " + h.Number + ": " + h.Title
	}
	return h.Number + " " + h.Title
}

// Walk calls fn for every section of d, sections then appendices, each
// before its sub-sections, with its heading. Sub-sections deeper than
// MaxDepth are numbered as MaxDepth's level.
func Walk(d *Document, fn func(h Heading, s *Section)) {
	var walk func(ss []Section, prefix string, level int, appendix bool)
	walk = func(ss []Section, prefix string, level int, appendix bool) {
		for i := range ss {
			num := fmt.Sprint(i + 1)
			if appendix && level == 1 {
				num = string(rune('A' + i%26))
			}
			if prefix != "" {
				num = prefix + "." + num
			}
			h := Heading{Number: num, Level: min(level, MaxDepth), Title: ss[i].Title, Appendix: appendix,
				Anchor: "sec-" + strings.ToLower(strings.ReplaceAll(num, ".", "-"))}
			fn(h, &ss[i])
			walk(ss[i].Sections, num, level+1, appendix)
		}
	}
	walk(d.Sections, "", 1, false)
	walk(d.Appendices, "", 1, true)
}

// Headings returns the headings of d in order.
func Headings(d *Document) []Heading {
	var hs []Heading
	Walk(d, func(h Heading, _ *Section) { hs = append(hs, h) })
	return hs
}
