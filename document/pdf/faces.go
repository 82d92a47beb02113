package pdf

import (
	"fmt"
	"strings"
	"unicode"

	"codeberg.org/go-pdf/fpdf"
	"github.com/go-fonts/dejavu/dejavusansbold"
	"github.com/go-fonts/dejavu/dejavuserif"
	"github.com/go-fonts/dejavu/dejavuserifbold"
	"github.com/go-fonts/dejavu/dejavuserifbolditalic"
	"github.com/go-fonts/dejavu/dejavuserifitalic"
	"golang.org/x/image/font/sfnt"
)

// face is one of the typefaces a document is set in.
type face int

const (
	faceSerif face = iota
	faceSerifBold
	faceSerifItalic
	faceSerifBoldItalic
	faceSansBold
	numFaces
)

// faceFonts are the fonts of each face: the fpdf family and style it is
// registered as, and its TrueType data.
var faceFonts = [numFaces]struct {
	family, style string
	ttf           []byte
}{
	faceSerif:           {"serif", "", dejavuserif.TTF},
	faceSerifBold:       {"serif", "B", dejavuserifbold.TTF},
	faceSerifItalic:     {"serif", "I", dejavuserifitalic.TTF},
	faceSerifBoldItalic: {"serif", "BI", dejavuserifbolditalic.TTF},
	faceSansBold:        {"sans", "B", dejavusansbold.TTF},
}

// faces knows which characters the fonts can draw.
type faces struct {
	fonts   [numFaces]*sfnt.Font
	buf     sfnt.Buffer
	covered map[rune]bool
}

func loadFaces() (*faces, error) {
	f := &faces{covered: map[rune]bool{}}
	for i, ff := range faceFonts {
		font, err := sfnt.Parse(ff.ttf)
		if err != nil {
			return nil, fmt.Errorf("pdf: font %s %s: %w", ff.family, ff.style, err)
		}
		f.fonts[i] = font
	}
	return f, nil
}

// register adds the fonts to p.
func (f *faces) register(p *fpdf.Fpdf) {
	for _, ff := range faceFonts {
		p.AddUTF8FontFromBytes(ff.family, ff.style, ff.ttf)
	}
}

// set selects face at size points.
func (f *faces) set(p *fpdf.Fpdf, fc face, size float64) { f.setStyle(p, fc, size, "") }

// setStyle selects face at size points with extra style letters, such as
// "U" for underlined.
func (f *faces) setStyle(p *fpdf.Fpdf, fc face, size float64, extra string) {
	ff := faceFonts[fc]
	p.SetFont(ff.family, ff.style+extra, size)
}

// has reports whether every face has a glyph for r.
func (f *faces) has(r rune) bool {
	if r < 0x80 {
		return r >= 0x20
	}
	if ok, seen := f.covered[r]; seen {
		return ok
	}
	ok := true
	for _, font := range f.fonts {
		if gi, err := font.GlyphIndex(&f.buf, r); err != nil || gi == 0 {
			ok = false
			break
		}
	}
	f.covered[r] = ok
	return ok
}

// clean replaces every character the fonts cannot draw with U+FFFD, so
// that it neither vanishes nor overprints its neighbours.
func (f *faces) clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			return ' '
		case unicode.IsControl(r):
			return -1
		case !f.has(r):
			return '\uFFFD'
		}
		return r
	}, s)
}

// split wraps text to width w in the current font; it returns one empty
// line for empty text.
func (f *faces) split(p *fpdf.Fpdf, text string, w float64) []string {
	if strings.TrimSpace(text) == "" {
		return []string{""}
	}
	lines := p.SplitText(text, w)
	if len(lines) == 0 {
		return []string{""}
	}
	return lines
}

// fit cuts text to width w in the current font, marking the cut with "…".
func (f *faces) fit(p *fpdf.Fpdf, text string, w float64) string {
	if p.GetStringWidth(text) <= w {
		return text
	}
	r := []rune(text)
	for len(r) > 0 && p.GetStringWidth(string(r)+"…") > w {
		r = r[:len(r)-1]
	}
	return strings.TrimRight(string(r), " ") + "…"
}
