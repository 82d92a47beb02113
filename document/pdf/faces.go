package pdf

import (
	"errors"
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

	"github.com/madspark/madspark/document"
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

// faceFallback is the Options.Fallback font, for the characters the DejaVu
// faces lack.
const faceFallback = numFaces

// faces knows which characters the fonts can draw.
type faces struct {
	fonts       [numFaces]*sfnt.Font
	fallback    *sfnt.Font
	fallbackTTF []byte
	buf         sfnt.Buffer
	dejavu      map[rune]bool
	extra       map[rune]bool
}

// CheckFont reports whether ttf is a font Options.Fallback can use: a
// TrueType font (.ttf), not a collection (.ttc) nor a CFF-based OpenType
// font (.otf).
func CheckFont(ttf []byte) error {
	switch {
	case len(ttf) < 4:
		return errors.New("not a font file")
	case string(ttf[:4]) == "ttcf":
		return errors.New("a font collection (.ttc) is not supported: use a single TrueType (.ttf) font")
	case string(ttf[:4]) == "OTTO":
		return errors.New("a CFF-based OpenType font (.otf) is not supported: use a TrueType (.ttf) font")
	}
	if _, err := sfnt.Parse(ttf); err != nil {
		return fmt.Errorf("not a TrueType font: %w", err)
	}
	return nil
}

func loadFaces(fallback []byte) (*faces, error) {
	f := &faces{dejavu: map[rune]bool{}, extra: map[rune]bool{}}
	for i, ff := range faceFonts {
		font, err := sfnt.Parse(ff.ttf)
		if err != nil {
			return nil, fmt.Errorf("pdf: font %s %s: %w", ff.family, ff.style, err)
		}
		f.fonts[i] = font
	}
	if len(fallback) > 0 {
		if err := CheckFont(fallback); err != nil {
			return nil, fmt.Errorf("pdf: fallback font: %w", err)
		}
		font, err := sfnt.Parse(fallback)
		if err != nil {
			return nil, fmt.Errorf("pdf: fallback font: %w", err)
		}
		f.fallback, f.fallbackTTF = font, fallback
	}
	return f, nil
}

// register adds the fonts to p.
func (f *faces) register(p *fpdf.Fpdf) {
	for _, ff := range faceFonts {
		p.AddUTF8FontFromBytes(ff.family, ff.style, ff.ttf)
	}
	if f.fallback != nil {
		p.AddUTF8FontFromBytes("fallback", "", f.fallbackTTF)
	}
}

// set selects face at size points.
func (f *faces) set(p *fpdf.Fpdf, fc face, size float64) { f.setStyle(p, fc, size, "") }

// setStyle selects face at size points with extra style letters, such as
// "U" for underlined.
func (f *faces) setStyle(p *fpdf.Fpdf, fc face, size float64, extra string) {
	if fc == faceFallback {
		p.SetFont("fallback", extra, size)
		return
	}
	ff := faceFonts[fc]
	p.SetFont(ff.family, ff.style+extra, size)
}

// hasDejaVu reports whether every DejaVu face has a glyph for r.
func (f *faces) hasDejaVu(r rune) bool {
	if r < 0x80 {
		return r >= 0x20
	}
	if ok, seen := f.dejavu[r]; seen {
		return ok
	}
	ok := true
	for _, font := range f.fonts {
		if gi, err := font.GlyphIndex(&f.buf, r); err != nil || gi == 0 {
			ok = false
			break
		}
	}
	f.dejavu[r] = ok
	return ok
}

// hasFallback reports whether the fallback font has a glyph for r.
func (f *faces) hasFallback(r rune) bool {
	if f.fallback == nil {
		return false
	}
	if ok, seen := f.extra[r]; seen {
		return ok
	}
	gi, err := f.fallback.GlyphIndex(&f.buf, r)
	ok := err == nil && gi != 0
	f.extra[r] = ok
	return ok
}

// neededBy reports whether any text of d needs the fallback font.
func (f *faces) neededBy(d *document.Document) bool {
	if f.fallback == nil {
		return false
	}
	texts := append([]string{d.Title, d.Subtitle, d.Notice, d.PageNotice}, d.TitleLines...)
	document.Walk(d, func(h document.Heading, s *document.Section) {
		texts = append(texts, h.Title)
		for _, b := range s.Blocks {
			switch v := b.(type) {
			case *document.Paragraph:
				for _, sp := range v.Spans {
					texts = append(texts, sp.Text)
				}
			case *document.List:
				for _, it := range v.Items {
					for _, sp := range it.Spans {
						texts = append(texts, sp.Text)
					}
				}
			case *document.Table:
				texts = append(texts, v.Header...)
				for _, row := range v.Rows {
					texts = append(texts, row...)
				}
			}
		}
	})
	for _, t := range texts {
		for _, r := range t {
			if !f.hasDejaVu(r) && f.hasFallback(r) {
				return true
			}
		}
	}
	return false
}

// covers reports whether face fc can draw r.
func (f *faces) covers(fc face, r rune) bool {
	if fc == faceFallback {
		return f.hasFallback(r)
	}
	return f.hasDejaVu(r)
}

// cleanFor replaces every character face fc cannot draw with U+FFFD (or
// "?" when it lacks that too), so that it neither vanishes nor overprints
// its neighbours; tabs and newlines become spaces.
func (f *faces) cleanFor(fc face, s string) string {
	repl := '\uFFFD'
	if !f.covers(fc, repl) {
		repl = '?'
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			return ' '
		case unicode.IsControl(r):
			return -1
		case r == ' ' || f.covers(fc, r):
			return r
		}
		return repl
	}, s)
}

// run is a stretch of text drawn in one font.
type run struct {
	text     string
	fallback bool
}

// runs splits text into stretches for face fc and for the fallback font:
// a character goes to the fallback only when the face lacks it and the
// fallback has it. Each stretch is cleaned for its font.
func (f *faces) runs(fc face, text string) []run {
	var out []run
	var cur []rune
	curFallback := false
	flush := func() {
		if len(cur) > 0 {
			font := fc
			if curFallback {
				font = faceFallback
			}
			out = append(out, run{text: f.cleanFor(font, string(cur)), fallback: curFallback})
			cur = cur[:0]
		}
	}
	for _, r := range text {
		fb := f.fallback != nil && !f.hasDejaVu(r) && f.hasFallback(r)
		if unicode.IsSpace(r) {
			fb = curFallback // white space stays with its neighbours
		}
		if fb != curFallback {
			flush()
			curFallback = fb
		}
		cur = append(cur, r)
	}
	flush()
	return out
}
