// Package mdconv reads Markdown that a model wrote (an analysis, an
// answer) into a document.Document's blocks and sections, so that it is
// rendered like the rest of a document, in Markdown and in PDF. It uses
// github.com/yuin/goldmark's CommonMark parser with GitHub's tables.
//
// Headings become sections, paragraphs paragraphs (bold, italic, links
// kept), lists lists (a nested list's items follow their parent's, marked
// with a dash), tables tables, and code blocks and quotes paragraphs of
// their text. Raw HTML is dropped. Only http, https and mailto links are
// kept (document.LinkURL); any other link, such as javascript: or data:,
// keeps its text without the link.
package mdconv

import (
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/madspark/madspark/document"
)

var md = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))

// Convert reads src: the blocks before its first heading, and a section
// per heading, nested by level (the shallowest heading level in src is
// the top), at most document.MaxDepth deep. A heading at the very start
// whose text is title (the document's own title, repeated) is dropped.
func Convert(src, title string) (lead []document.Block, sections []document.Section) {
	source := []byte(src)
	root := md.Parser().Parse(text.NewReader(source))
	c := &converter{src: source}
	// The document's own title, repeated at the very start, is dropped.
	var skip ast.Node
	if h, ok := root.FirstChild().(*ast.Heading); ok && title != "" && strings.EqualFold(plain(c.spans(h)), strings.TrimSpace(title)) {
		skip = h
	}
	top := 7
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok && n != skip && h.Level < top {
			top = h.Level
		}
	}
	// path holds the open sections, outermost first.
	var path []*document.Section
	add := func(b document.Block) {
		if b == nil {
			return
		}
		if len(path) == 0 {
			lead = append(lead, b)
			return
		}
		s := path[len(path)-1]
		s.Blocks = append(s.Blocks, b)
	}
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		if n == skip {
			continue
		}
		h, ok := n.(*ast.Heading)
		if !ok {
			for _, b := range c.blocks(n) {
				add(b)
			}
			continue
		}
		name := plain(c.spans(h))
		depth := min(h.Level-top+1, document.MaxDepth)
		if depth > len(path)+1 {
			depth = len(path) + 1
		}
		path = path[:depth-1]
		sec := document.Section{Title: name}
		if len(path) == 0 {
			sections = append(sections, sec)
			path = append(path, &sections[len(sections)-1])
		} else {
			parent := path[len(path)-1]
			parent.Sections = append(parent.Sections, sec)
			path = append(path, &parent.Sections[len(parent.Sections)-1])
		}
	}
	return lead, sections
}

// Blocks reads src as blocks only, headings becoming bold paragraphs.
func Blocks(src string) []document.Block {
	source := []byte(src)
	root := md.Parser().Parse(text.NewReader(source))
	c := &converter{src: source}
	var out []document.Block
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok {
			out = append(out, document.Para(document.Bold(plain(c.spans(h)))))
			continue
		}
		out = append(out, c.blocks(n)...)
	}
	return out
}

type converter struct{ src []byte }

func plain(ss []document.Span) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.Text)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// blocks converts a block node.
func (c *converter) blocks(n ast.Node) []document.Block {
	switch v := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		if ss := c.spans(v); plain(ss) != "" {
			return []document.Block{document.Para(ss...)}
		}
	case *ast.List:
		l := &document.List{Ordered: v.IsOrdered()}
		c.listItems(v, l, "")
		if len(l.Items) > 0 {
			return []document.Block{l}
		}
	case *ast.Blockquote:
		var out []document.Block
		for ch := v.FirstChild(); ch != nil; ch = ch.NextSibling() {
			for _, b := range c.blocks(ch) {
				if p, ok := b.(*document.Paragraph); ok {
					for i := range p.Spans {
						p.Spans[i].Italic = true
					}
				}
				out = append(out, b)
			}
		}
		return out
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		var b strings.Builder
		lines := v.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(c.src))
		}
		if t := strings.TrimSpace(b.String()); t != "" {
			return []document.Block{document.Text(t)}
		}
	case *east.Table:
		return []document.Block{c.table(v)}
	case *ast.ThematicBreak, *ast.HTMLBlock:
	default:
		var out []document.Block
		for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
			out = append(out, c.blocks(ch)...)
		}
		return out
	}
	return nil
}

// listItems adds the items of list to l, a nested list's items after
// their parent's, prefixed with dashes.
func (c *converter) listItems(list *ast.List, l *document.List, prefix string) {
	for it := list.FirstChild(); it != nil; it = it.NextSibling() {
		var spans []document.Span
		var nested []*ast.List
		for ch := it.FirstChild(); ch != nil; ch = ch.NextSibling() {
			switch v := ch.(type) {
			case *ast.List:
				nested = append(nested, v)
			default:
				if len(spans) > 0 {
					spans = append(spans, document.Plain(" "))
				}
				spans = append(spans, c.spans(v)...)
			}
		}
		if plain(spans) != "" {
			if prefix != "" {
				spans = append([]document.Span{document.Plain(prefix)}, spans...)
			}
			l.Items = append(l.Items, document.Paragraph{Spans: spans})
		}
		for _, nl := range nested {
			c.listItems(nl, l, prefix+"– ")
		}
	}
}

func (c *converter) table(t *east.Table) *document.Table {
	out := &document.Table{}
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, plain(c.spans(cell)))
		}
		if _, ok := row.(*east.TableHeader); ok {
			out.Header = cells
			continue
		}
		out.Rows = append(out.Rows, cells)
	}
	// Rows as wide as the header.
	for i, r := range out.Rows {
		for len(r) < len(out.Header) {
			r = append(r, "")
		}
		out.Rows[i] = r[:len(out.Header)]
	}
	return out
}

// spans converts the inline content of n.
func (c *converter) spans(n ast.Node) []document.Span {
	var out []document.Span
	var walk func(n ast.Node, bold, italic bool, url string)
	emit := func(s string, bold, italic bool, url string) {
		if s == "" {
			return
		}
		out = append(out, document.Span{Text: s, Bold: bold, Italic: italic, URL: url})
	}
	walk = func(n ast.Node, bold, italic bool, url string) {
		for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
			switch v := ch.(type) {
			case *ast.Text:
				t := v.Value(c.src)
				if !v.IsRaw() {
					t = unescape(t)
				}
				emit(string(t), bold, italic, url)
				if v.SoftLineBreak() || v.HardLineBreak() {
					emit(" ", bold, italic, url)
				}
			case *ast.String:
				emit(string(v.Value), bold, italic, url)
			case *ast.CodeSpan:
				var b strings.Builder
				for t := v.FirstChild(); t != nil; t = t.NextSibling() {
					if tx, ok := t.(*ast.Text); ok {
						b.Write(tx.Value(c.src))
					}
				}
				emit(b.String(), bold, italic, url)
			case *ast.Emphasis:
				walk(v, bold || v.Level >= 2, italic || v.Level == 1, url)
			case *ast.Link:
				walk(v, bold, italic, document.LinkURL(string(unescape(v.Destination))))
			case *ast.AutoLink:
				u := string(v.URL(c.src))
				if v.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
					u = "mailto:" + u
				}
				emit(string(v.Label(c.src)), bold, italic, document.LinkURL(u))
			case *ast.Image:
				walk(v, bold, italic, url)
			case *ast.RawHTML:
			default:
				walk(v, bold, italic, url)
			}
		}
	}
	walk(n, false, false, "")
	return out
}

// reference matches an HTML entity or character reference at the start.
var reference = regexp.MustCompile(`^&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});`)

// unescape reads Markdown's backslash escapes and HTML entity and
// character references in text, as a Markdown renderer does: "a \\| b"
// is "a | b" and "AT&amp;T" is "AT&T".
func unescape(b []byte) []byte {
	if !strings.ContainsAny(string(b), "\\&") {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\' && i+1 < len(b) && util.IsPunct(b[i+1]):
			out = append(out, b[i+1])
			i++
		case b[i] == '&':
			m := reference.Find(b[i:])
			if m == nil {
				out = append(out, '&')
				continue
			}
			out = append(out, util.ResolveNumericReferences(util.ResolveEntityNames(m))...)
			i += len(m) - 1
		default:
			out = append(out, b[i])
		}
	}
	return out
}
