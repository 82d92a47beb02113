package document

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Markdown renders d as GitHub-flavoured Markdown: the title as a level-1
// heading, the notice as a quote, a linked table of contents, sections as
// numbered headings with HTML anchors, lists, tables and links. Text is
// escaped so that nothing in it is read as Markdown or HTML, and kept on
// its line; only http, https and mailto URLs (see LinkURL) become links,
// others leave their text alone.
func Markdown(d *Document) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", headingText(Escape(d.Title)))
	if d.Subtitle != "" {
		fmt.Fprintf(&b, "**%s**\n\n", Escape(d.Subtitle))
	}
	for _, l := range d.TitleLines {
		fmt.Fprintf(&b, "%s  \n", Escape(l))
	}
	if len(d.TitleLines) > 0 {
		b.WriteString("\n")
	}
	if d.Notice != "" {
		fmt.Fprintf(&b, "> **%s**\n\n", Escape(d.Notice))
	}
	if d.Contents {
		b.WriteString("## Contents\n\n")
		for _, h := range Headings(d) {
			fmt.Fprintf(&b, "%s- [%s](#%s)\n", strings.Repeat("  ", h.Level-1), escapeInline(collapse(h.Label())), h.Anchor)
		}
		b.WriteString("\n")
	}
	Walk(d, func(h Heading, s *Section) {
		fmt.Fprintf(&b, "<a id=\"%s\"></a>\n\n%s %s\n\n", h.Anchor, strings.Repeat("#", h.Level+1), headingText(escapeInline(collapse(h.Label()))))
		for _, blk := range s.Blocks {
			writeBlock(&b, blk)
		}
	})
	return []byte(b.String())
}

func writeBlock(b *strings.Builder, blk Block) {
	switch v := blk.(type) {
	case *Paragraph:
		if t := spans(v.Spans); t != "" {
			b.WriteString(t + "\n\n")
		}
	case *List:
		for i, it := range v.Items {
			marker := "-"
			if v.Ordered {
				marker = fmt.Sprintf("%d.", i+1)
			}
			fmt.Fprintf(b, "%s %s\n", marker, spans(it.Spans))
		}
		if len(v.Items) > 0 {
			b.WriteString("\n")
		}
	case *Table:
		cols := len(v.Header)
		for _, r := range v.Rows {
			cols = max(cols, len(r))
		}
		if cols == 0 {
			return
		}
		row := func(cells []string) {
			b.WriteString("|")
			for i := range cols {
				c := ""
				if i < len(cells) {
					c = escapeInline(collapse(cells[i]))
				}
				b.WriteString(" " + c + " |")
			}
			b.WriteString("\n")
		}
		row(v.Header)
		b.WriteString("|" + strings.Repeat(" --- |", cols) + "\n")
		for _, r := range v.Rows {
			row(r)
		}
		b.WriteString("\n")
	}
}

// spans renders a run of spans on one line.
func spans(ss []Span) string {
	var b strings.Builder
	for _, s := range ss {
		t := collapseKeepEdges(s.Text)
		if strings.TrimSpace(t) == "" {
			b.WriteString(t)
			continue
		}
		// Emphasis markers must touch the text, so white space at the
		// edges goes outside them.
		lead := t[:len(t)-len(strings.TrimLeft(t, " "))]
		trail := t[len(strings.TrimRight(t, " ")):]
		core := Escape(strings.TrimSpace(t))
		switch {
		case s.Bold && s.Italic:
			core = "***" + core + "***"
		case s.Bold:
			core = "**" + core + "**"
		case s.Italic:
			core = "*" + core + "*"
		}
		if u := LinkURL(s.URL); u != "" {
			core = "[" + core + "](" + escapeURL(u) + ")"
		}
		b.WriteString(lead + core + trail)
	}
	return strings.TrimSpace(b.String())
}

// headingText is escaped text as the text of an ATX heading: a "#" at
// its end is escaped too, which would otherwise close the heading and be
// dropped.
func headingText(out string) string {
	if strings.HasSuffix(out, "#") {
		out = out[:len(out)-1] + "\\#"
	}
	return out
}

// Escape returns s as one line of Markdown text: white space collapsed,
// and the characters Markdown could read as syntax or HTML
// backslash-escaped, with a "#", "+", "-", "=" or "N." that starts the
// text.
func Escape(s string) string {
	out := escapeInline(collapse(s))
	if out != "" && strings.ContainsRune("#+-=", rune(out[0])) {
		out = "\\" + out
	}
	// "1. text" at the start would be a list item.
	if i := strings.IndexFunc(out, func(r rune) bool { return !unicode.IsDigit(r) }); i > 0 && i < len(out) && (out[i] == '.' || out[i] == ')') {
		out = out[:i] + "\\" + out[i:]
	}
	return out
}

// escapeInline backslash-escapes the characters Markdown could read as
// syntax inside a line, and an "&" that would start an HTML entity.
func escapeInline(s string) string {
	s = clean(s)
	var b strings.Builder
	for i, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~", r) || (r == '&' && entity.MatchString(s[i:])) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// entity matches an HTML entity or character reference at the start.
var entity = regexp.MustCompile(`^&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});`)

// escapeURL makes a URL safe inside (...) of a Markdown link: white
// space, control characters and the characters that would end the
// destination or escape one are percent-encoded.
func escapeURL(u string) string {
	var b strings.Builder
	for _, c := range []byte(strings.TrimSpace(u)) {
		if c <= ' ' || c == 0x7f || strings.IndexByte("()<>\\", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// collapse replaces every run of white space by one space and trims.
func collapse(s string) string { return strings.Join(strings.Fields(clean(s)), " ") }

// collapseKeepEdges collapses white space but keeps one space at each edge
// that had some, so that adjacent spans stay apart.
func collapseKeepEdges(s string) string {
	s = clean(s)
	c := strings.Join(strings.Fields(s), " ")
	if c == "" {
		if s != "" {
			return " "
		}
		return ""
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) {
		c = " " + c
	}
	if unicode.IsSpace(last) {
		c += " "
	}
	return c
}

// clean makes s valid UTF-8 without control characters other than white
// space.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// Clean returns s as valid UTF-8 without control characters and with its
// white space collapsed; renderers use it for every piece of text.
func Clean(s string) string { return collapse(s) }
