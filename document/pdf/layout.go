package pdf

import (
	"strings"
	"unicode"

	"codeberg.org/go-pdf/fpdf"

	"github.com/madspark/madspark/document"
)

// piece is text drawn in one font.
type piece struct {
	text string
	fc   face
	w    float64
}

// line is a line of pieces and its width.
type line struct {
	pieces []piece
	w      float64
}

// layout breaks plain text, set in fc at size points with the fallback font
// for what fc lacks, into lines of at most width: at spaces, between CJK
// characters, and inside a word only when it alone is wider than a line.
func (f *faces) layout(p *fpdf.Fpdf, fc face, size float64, text string, width float64) []line {
	var tokens []piece
	for _, r := range f.runs(fc, document.Clean(text)) {
		font := fc
		if r.fallback {
			font = faceFallback
		}
		for _, t := range tokenize(r.text) {
			tokens = append(tokens, piece{text: t, fc: font})
		}
	}
	measure := func(t *piece) {
		f.set(p, t.fc, size)
		t.w = p.GetStringWidth(t.text)
	}
	var lines []line
	cur := line{}
	push := func(t piece) {
		// Pieces of one font next to each other are merged.
		if n := len(cur.pieces); n > 0 && cur.pieces[n-1].fc == t.fc {
			cur.pieces[n-1].text += t.text
			cur.pieces[n-1].w += t.w
		} else {
			cur.pieces = append(cur.pieces, t)
		}
		cur.w += t.w
	}
	newLine := func() {
		// A line does not end with a space.
		if n := len(cur.pieces); n > 0 {
			last := &cur.pieces[n-1]
			if trimmed := strings.TrimRight(last.text, " "); trimmed != last.text {
				cur.w -= last.w
				last.text = trimmed
				measure(last)
				cur.w += last.w
			}
		}
		lines = append(lines, cur)
		cur = line{}
	}
	for _, t := range tokens {
		measure(&t)
		if t.text == " " && len(cur.pieces) == 0 {
			continue // no space at the start of a line
		}
		if cur.w+t.w <= width {
			push(t)
			continue
		}
		if t.text == " " {
			newLine()
			continue
		}
		if len(cur.pieces) > 0 {
			newLine()
		}
		if t.w <= width {
			push(t)
			continue
		}
		// A word wider than a line is cut into lines of its own.
		var part []rune
		for _, r := range t.text {
			q := piece{text: string(append(part, r)), fc: t.fc}
			measure(&q)
			if q.w > width && len(part) > 0 {
				w := piece{text: string(part), fc: t.fc}
				measure(&w)
				push(w)
				newLine()
				part = []rune{r}
				continue
			}
			part = append(part, r)
		}
		w := piece{text: string(part), fc: t.fc}
		measure(&w)
		push(w)
	}
	if len(cur.pieces) > 0 || len(lines) == 0 {
		newLine()
	}
	return lines
}

// tokenize splits text into spaces, CJK characters (each a place to break
// a line) and the words between them.
func tokenize(s string) []string {
	var out []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			out = append(out, word.String())
			word.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r == ' ':
			flush()
			out = append(out, " ")
		case isCJK(r):
			flush()
			out = append(out, string(r))
		default:
			word.WriteRune(r)
		}
	}
	flush()
	return out
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// drawLine draws l at the current y, from x within width, aligned "L",
// "C" or "R", lh high, with every piece linking to link when it is not 0.
func (f *faces) drawLine(p *fpdf.Fpdf, l line, size, x, width, lh float64, align string, link int) {
	switch align {
	case "C":
		x += (width - l.w) / 2
	case "R":
		x += width - l.w
	}
	p.SetX(x)
	for _, pc := range l.pieces {
		f.set(p, pc.fc, size)
		p.CellFormat(pc.w, lh, pc.text, "", 0, "L", false, link, "")
	}
}

// fitLine returns text laid out on one line of width, cut with "…" when
// it is longer.
func (f *faces) fitLine(p *fpdf.Fpdf, fc face, size float64, text string, width float64) line {
	lines := f.layout(p, fc, size, text, width)
	if len(lines) == 1 {
		return lines[0]
	}
	f.set(p, fc, size)
	ell := p.GetStringWidth("…")
	l := f.layout(p, fc, size, text, width-ell)[0]
	l.pieces = append(l.pieces, piece{text: "…", fc: fc, w: ell})
	l.w += ell
	return l
}
