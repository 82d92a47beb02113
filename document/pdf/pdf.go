// Package pdf renders a document.Document as a PDF file: a title page, a
// table of contents whose entries link to their sections and give their
// pages, numbered headings that are also the file's outline (bookmarks),
// paragraphs with bold, italic and hyperlinked text, lists, tables with a
// repeated header row, "page N of M" on every page, and the document's
// notice on every page.
//
// Text is set in the DejaVu fonts (github.com/go-fonts/dejavu), embedded in
// the binary and subset into the file, which cover the Latin, Greek and
// Cyrillic scripts among others. A character they lack (CJK ideographs, for
// one) is drawn in Options.Fallback when it has it, and shown as U+FFFD,
// "�", otherwise, rather than drawn over its neighbours.
//
// It is built on codeberg.org/go-pdf/fpdf.
package pdf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"codeberg.org/go-pdf/fpdf"

	"github.com/madspark/madspark/document"
)

// Options tune the rendering.
type Options struct {
	// Created is the creation date recorded in the file; zero means now.
	// With the same date, the same document gives the same bytes.
	Created time.Time
	// Fallback is a TrueType font (.ttf) for the characters the DejaVu
	// fonts lack, such as Droid Sans Fallback or a Noto Sans CJK TTF for
	// Chinese, Japanese and Korean. It is embedded only when used. Nil
	// means none.
	Fallback []byte
}

// Page geometry, in millimetres, and type sizes, in points.
const (
	marginLeft   = 25.0
	marginRight  = 25.0
	marginTop    = 22.0
	marginBottom = 22.0

	bodySize   = 10.5
	bodyLine   = 5.2
	smallSize  = 8.5
	tableSize  = 9
	tableLine  = 4.4
	cellPad    = 1.6
	paraSpace  = 2.2
	listIndent = 6.0
)

// headingSize is the type size of each heading level.
var headingSize = [...]float64{0, 15, 12.5, 11}

// Render writes d to w as a PDF.
func Render(w io.Writer, d *document.Document, o Options) error {
	if d == nil {
		return errors.New("pdf: no document")
	}
	faces, err := loadFaces(o.Fallback)
	if err != nil {
		return err
	}
	if !faces.neededBy(d) {
		faces.fallback = nil // not embedded, nor parsed again
	}
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	// With a table of contents, a first pass finds the page of every
	// heading and the second draws the contents with them. The contents
	// take the same room in both, so the pages do not move.
	var known map[string]int
	if d.Contents {
		first := &renderer{doc: d, o: o, faces: faces}
		if _, err := first.render(); err != nil {
			return err
		}
		known = first.pages
	}
	r := &renderer{doc: d, o: o, faces: faces, known: known}
	out, err := r.render()
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// renderer draws one pass.
type renderer struct {
	doc   *document.Document
	o     Options
	faces *faces
	pdf   *fpdf.Fpdf
	// known are the heading pages from the first pass; pages are this
	// pass's.
	known, pages map[string]int
	links        map[string]int
}

func (r *renderer) render() ([]byte, error) {
	p := fpdf.New("P", "mm", "A4", "")
	r.pdf = p
	r.pages, r.links = map[string]int{}, map[string]int{}
	r.faces.register(p)
	p.SetMargins(marginLeft, marginTop, marginRight)
	p.SetAutoPageBreak(true, marginBottom)
	p.SetCellMargin(0)
	p.SetCatalogSort(true) // resources in a fixed order: same input, same bytes
	p.AliasNbPages("{nb}")
	d := r.doc
	p.SetTitle(document.Clean(d.Title), true)
	p.SetAuthor(document.Clean(d.Author), true)
	p.SetSubject(document.Clean(d.Subject), true)
	p.SetKeywords(document.Clean(strings.Join(d.Keywords, ", ")), true)
	p.SetCreator("madspark", true)
	p.SetCreationDate(r.o.Created)
	p.SetModificationDate(r.o.Created)
	p.SetHeaderFunc(r.header)
	p.SetFooterFunc(r.footer)

	r.titlePage()
	if d.Contents {
		r.contents()
	}
	p.AddPage()
	first := true
	document.Walk(d, func(h document.Heading, s *document.Section) {
		if h.Appendix && h.Level == 1 && !first {
			p.AddPage()
		}
		first = false
		r.heading(h)
		for _, b := range s.Blocks {
			r.block(b)
		}
	})
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("pdf: %w", err)
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		return nil, fmt.Errorf("pdf: %w", err)
	}
	return buf.Bytes(), nil
}

func (r *renderer) pageWidth() float64 {
	w, _ := r.pdf.GetPageSize()
	return w - marginLeft - marginRight
}

func (r *renderer) pageBottom() float64 {
	_, h := r.pdf.GetPageSize()
	return h - marginBottom
}

// header draws a rule and the document's title on every page after the
// title page.
func (r *renderer) header() {
	p := r.pdf
	if p.PageNo() == 1 {
		return
	}
	p.SetY(10)
	p.SetTextColor(110, 110, 110)
	l := r.faces.fitLine(p, faceSerifItalic, smallSize, r.doc.Title, r.pageWidth())
	r.faces.drawLine(p, l, smallSize, marginLeft, r.pageWidth(), 4, "L", 0)
	p.SetDrawColor(0, 0, 0)
	p.Line(marginLeft, 14, marginLeft+r.pageWidth(), 14)
	p.SetTextColor(0, 0, 0)
	p.SetY(marginTop)
}

// footer draws "Page N of M" and the notice on every page.
func (r *renderer) footer() {
	p := r.pdf
	_, h := p.GetPageSize()
	p.SetXY(marginLeft, h-14)
	n := r.doc.PageNotice
	if n == "" {
		n = r.doc.Notice
	}
	if n != "" {
		p.SetTextColor(170, 20, 20)
		l := r.faces.fitLine(p, faceSansBold, smallSize, n, r.pageWidth()*0.72)
		r.faces.drawLine(p, l, smallSize, marginLeft, r.pageWidth(), 4, "L", 0)
	}
	r.faces.set(p, faceSerif, smallSize)
	p.SetTextColor(90, 90, 90)
	p.SetXY(marginLeft, h-14)
	p.CellFormat(r.pageWidth(), 4, fmt.Sprintf("Page %d of {nb}", p.PageNo()), "", 0, "R", false, 0, "")
	p.SetTextColor(0, 0, 0)
}

func (r *renderer) titlePage() {
	p, d := r.pdf, r.doc
	p.AddPage()
	w := r.pageWidth()
	p.SetY(70)
	r.multi(w, 10, faceSansBold, 22, d.Title, "C")
	if d.Subtitle != "" {
		p.Ln(4)
		r.multi(w, 7, faceSerifItalic, 14, d.Subtitle, "C")
	}
	if len(d.TitleLines) > 0 {
		p.Ln(12)
		for _, l := range d.TitleLines {
			r.multi(w, 6, faceSerif, 11, l, "C")
		}
	}
	if d.Notice != "" {
		p.Ln(14)
		p.SetTextColor(170, 20, 20)
		p.SetDrawColor(170, 20, 20)
		p.SetLineWidth(0.5)
		y := p.GetY()
		lines := r.faces.layout(p, faceSansBold, 11, d.Notice, w-8)
		hgt := float64(len(lines))*6 + 6
		p.Rect(marginLeft, y, w, hgt, "D")
		for i, l := range lines {
			p.SetY(y + 3 + float64(i)*6)
			r.faces.drawLine(p, l, 11, marginLeft+4, w-8, 6, "C", 0)
		}
		p.SetY(y + hgt)
		p.SetTextColor(0, 0, 0)
		p.SetDrawColor(0, 0, 0)
		p.SetLineWidth(0.2)
	}
}

// contents draws the table of contents: each entry links to its heading
// and gives its page, from the first pass.
func (r *renderer) contents() {
	p := r.pdf
	p.AddPage()
	r.faces.set(p, faceSansBold, headingSize[1])
	p.CellFormat(0, 9, "Contents", "", 1, "L", false, 0, "")
	p.Ln(3)
	w := r.pageWidth()
	for _, h := range document.Headings(r.doc) {
		indent := float64(h.Level-1) * 6
		face, size := faceSerif, bodySize
		if h.Level == 1 {
			face = faceSerifBold
			p.Ln(1.2)
		}
		r.faces.set(p, faceSerif, size)
		link := r.link(h.Anchor)
		page := fmt.Sprint(r.known[h.Anchor])
		pw := p.GetStringWidth(page) + 2
		label := r.faces.fitLine(p, face, size, h.Label(), w-indent-pw-8)
		lw := label.w
		if p.GetY()+bodyLine > r.pageBottom() {
			p.AddPage()
		}
		r.faces.drawLine(p, label, size, marginLeft+indent, lw, bodyLine, "L", link)
		// Dot leaders between the label and the page number.
		r.faces.set(p, faceSerif, size)
		dots := ""
		if gap := w - indent - lw - pw - 2; gap > 0 {
			dots = strings.Repeat(".", int(gap/max(p.GetStringWidth("."), 0.1)))
		}
		p.SetTextColor(140, 140, 140)
		p.CellFormat(w-indent-lw-pw, bodyLine, dots, "", 0, "R", false, link, "")
		p.SetTextColor(0, 0, 0)
		p.CellFormat(pw, bodyLine, page, "", 1, "R", false, link, "")
	}
}

// link returns the internal link to the heading with anchor.
func (r *renderer) link(anchor string) int {
	if id, ok := r.links[anchor]; ok {
		return id
	}
	id := r.pdf.AddLink()
	r.links[anchor] = id
	return id
}

func (r *renderer) heading(h document.Heading) {
	p := r.pdf
	size := headingSize[h.Level]
	// Keep a heading with the first lines of what follows it.
	if p.GetY() > r.pageBottom()-28 {
		p.AddPage()
	}
	if p.GetY() > marginTop+1 {
		p.Ln(map[int]float64{1: 6, 2: 3.5, 3: 2.5}[h.Level])
	}
	r.pages[h.Anchor] = p.PageNo()
	p.SetLink(r.link(h.Anchor), p.GetY(), p.PageNo())
	r.faces.set(p, faceSansBold, size)
	p.Bookmark(document.Clean(h.Label()), h.Level-1, -1)
	r.multi(r.pageWidth(), size*0.5, faceSansBold, size, h.Label(), "L")
	if h.Level == 1 {
		p.SetDrawColor(150, 150, 150)
		p.Line(marginLeft, p.GetY()+0.8, marginLeft+r.pageWidth(), p.GetY()+0.8)
		p.SetDrawColor(0, 0, 0)
		p.Ln(2.5)
	}
	p.Ln(1.5)
}

// multi draws plain text wrapped to width w, aligned "L" or "C", in face
// at size points (and the fallback font for what it lacks).
func (r *renderer) multi(w, lh float64, fc face, size float64, text, align string) {
	p := r.pdf
	for _, l := range r.faces.layout(p, fc, size, text, w) {
		if p.GetY()+lh > r.pageBottom() {
			p.AddPage()
		}
		r.faces.drawLine(p, l, size, marginLeft, w, lh, align, 0)
		p.Ln(lh)
	}
}

func (r *renderer) block(b document.Block) {
	switch v := b.(type) {
	case *document.Paragraph:
		if r.spans(v.Spans, marginLeft) {
			r.pdf.Ln(bodyLine + paraSpace)
		}
	case *document.List:
		r.list(v)
	case *document.Table:
		r.table(v)
	}
}

// spans writes a paragraph of styled spans flowing from the left margin
// left, and reports whether it wrote anything. Only http, https and mailto
// URLs (document.LinkURL) become links; a span with another URL is drawn
// as plain text.
func (r *renderer) spans(ss []document.Span, left float64) bool {
	p := r.pdf
	p.SetLeftMargin(left)
	defer p.SetLeftMargin(marginLeft)
	p.SetX(left)
	wrote := false
	for i, s := range ss {
		url := document.LinkURL(s.URL)
		text := collapseSpan(s.Text, i == 0, i == len(ss)-1)
		if text == "" {
			continue
		}
		wrote = true
		face := faceSerif
		switch {
		case s.Bold && s.Italic:
			face = faceSerifBoldItalic
		case s.Bold:
			face = faceSerifBold
		case s.Italic:
			face = faceSerifItalic
		}
		for _, run := range r.faces.runs(face, text) {
			fc := face
			if run.fallback {
				fc = faceFallback
			}
			if url != "" {
				r.faces.setStyle(p, fc, bodySize, "U")
				p.SetTextColor(20, 60, 160)
				p.WriteLinkString(bodyLine, run.text, url)
				p.SetTextColor(0, 0, 0)
			} else {
				r.faces.set(p, fc, bodySize)
				p.Write(bodyLine, run.text)
			}
		}
	}
	return wrote
}

// collapseSpan collapses white space inside a span, keeping one space at
// an inner edge that had some, so that adjacent spans stay apart.
func collapseSpan(s string, first, last bool) string {
	c := document.Clean(s)
	if c == "" {
		if s != "" && !first && !last {
			return " "
		}
		return ""
	}
	if !first && s != strings.TrimLeftFunc(s, unicode.IsSpace) {
		c = " " + c
	}
	if !last && s != strings.TrimRightFunc(s, unicode.IsSpace) {
		c += " "
	}
	return c
}

func (r *renderer) list(l *document.List) {
	p := r.pdf
	for i, it := range l.Items {
		if p.GetY()+bodyLine > r.pageBottom() {
			p.AddPage()
		}
		marker := "•"
		if l.Ordered {
			marker = fmt.Sprintf("%d.", i+1)
		}
		r.faces.set(p, faceSerif, bodySize)
		y := p.GetY()
		p.SetXY(marginLeft+1, y)
		p.CellFormat(listIndent-1, bodyLine, marker, "", 0, "L", false, 0, "")
		p.SetXY(marginLeft+listIndent, y)
		if r.spans(it.Spans, marginLeft+listIndent) {
			p.Ln(bodyLine + 0.8)
		} else {
			p.Ln(bodyLine)
		}
	}
	p.Ln(paraSpace)
}

func (r *renderer) table(t *document.Table) {
	p := r.pdf
	cols := len(t.Header)
	for _, row := range t.Rows {
		cols = max(cols, len(row))
	}
	if cols == 0 {
		return
	}
	widths := make([]float64, cols)
	total := 0.0
	for i := range widths {
		widths[i] = 1
		if i < len(t.Widths) && t.Widths[i] > 0 {
			widths[i] = t.Widths[i]
		}
		total += widths[i]
	}
	for i := range widths {
		widths[i] *= r.pageWidth() / total
	}
	p.SetLineWidth(0.2)
	p.SetDrawColor(120, 120, 120)
	var drawRow func(cells []string, header bool)
	drawRow = func(cells []string, header bool) {
		rowFace := faceSerif
		if header {
			rowFace = faceSerifBold
		}
		lines := make([][]line, cols)
		n := 1
		for i := range cols {
			text := ""
			if i < len(cells) {
				text = cells[i]
			}
			lines[i] = r.faces.layout(p, rowFace, tableSize, text, widths[i]-2*cellPad)
			n = max(n, len(lines[i]))
		}
		h := float64(n)*tableLine + 2*cellPad
		if p.GetY()+h > r.pageBottom() {
			p.AddPage()
			if !header && len(t.Header) > 0 {
				drawRow(t.Header, true)
			}
		}
		y := p.GetY()
		x := marginLeft
		for i := range cols {
			if header {
				p.SetFillColor(232, 232, 232)
				p.Rect(x, y, widths[i], h, "FD")
			} else {
				p.Rect(x, y, widths[i], h, "D")
			}
			for k, l := range lines[i] {
				p.SetY(y + cellPad + float64(k)*tableLine)
				r.faces.drawLine(p, l, tableSize, x+cellPad, widths[i]-2*cellPad, tableLine, "L", 0)
			}
			x += widths[i]
		}
		p.SetXY(marginLeft, y+h)
	}
	if len(t.Header) > 0 {
		drawRow(t.Header, true)
	}
	for _, row := range t.Rows {
		drawRow(row, false)
	}
	p.SetDrawColor(0, 0, 0)
	p.Ln(paraSpace + 1)
}
