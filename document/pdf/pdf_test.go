package pdf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/document/pdf/pdftest"
)

// longDocument has every kind of block, text in several scripts, and enough
// of it to run over many pages.
func longDocument() *document.Document {
	d := &document.Document{
		Title:      "Réseaux de capteurs à faible consommation pour l'agriculture",
		Subtitle:   "Research proposal",
		TitleLines: []string{"Master's programme in Électronique", "Ærøskøbing · Łódź · Ελληνικά · Русский"},
		Notice:     "MOCK DATA: generated offline, not by a language model",
		Author:     "Zoë Ångström",
		Subject:    "A test document",
		Keywords:   []string{"sensors", "agriculture"},
		Contents:   true,
	}
	long := strings.Repeat("Les capteurs mesurent l'humidité du sol, la température et la conductivité; the data are sent every hour. ", 12)
	for i := 1; i <= 6; i++ {
		s := document.Section{Title: fmt.Sprintf("Section numéro %d", i), Blocks: []document.Block{
			document.Text(long),
			document.Para(document.Plain("A cited work: "), document.Link("Piwowar et al. (2018), The state of OA", fmt.Sprintf("https://doi.org/10.7717/peerj.%d", 4375+i)),
				document.Plain(" — "), document.Bold("bold"), document.Plain(", "), document.Italic("italic"), document.Plain(" and "),
				document.Span{Text: "both", Bold: true, Italic: true}, document.Plain(". CJK 研究 is not in the font.")),
			document.Bullets("Première puce avec des accents: é è ê ë", "Second bullet that is long enough to wrap onto a second line of the page, so the hanging indent is exercised properly."),
			document.Numbered("One", "Two"),
		}}
		for k := 1; k <= 2; k++ {
			s.Sections = append(s.Sections, document.Section{Title: fmt.Sprintf("Sous-section %d.%d", i, k), Blocks: []document.Block{document.Text(long[:300])}})
		}
		d.Sections = append(d.Sections, s)
	}
	table := &document.Table{Header: []string{"Phase", "Start week", "End week", "Activities"}, Widths: []float64{2, 1, 1, 4}}
	for i := 1; i <= 40; i++ {
		table.Rows = append(table.Rows, []string{fmt.Sprintf("Phase %d", i), fmt.Sprint(i), fmt.Sprint(i + 1), "Collecte des données et vérification de la qualité, with a long description that wraps."})
	}
	d.Sections[2].Blocks = append(d.Sections[2].Blocks, table)
	d.Appendices = []document.Section{{Title: "Quality control", Blocks: []document.Block{document.Text("Coherence 0.82, feasibility 0.75.")}}}
	return d
}

func render(t *testing.T, d *document.Document) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, d, Options{Created: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	return save(t, buf.Bytes()), buf.Bytes()
}

func save(t *testing.T, pdf []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// long is longDocument rendered once for the tests that only read it.
var long = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	err := Render(&buf, longDocument(), Options{Created: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)})
	return buf.Bytes(), err
})

// renderLong returns the path and bytes of the long document.
func renderLong(t *testing.T) (string, []byte) {
	t.Helper()
	raw, err := long()
	if err != nil {
		t.Fatal(err)
	}
	return save(t, raw), raw
}

func TestRenderText(t *testing.T) {
	path, raw := renderLong(t)
	if !bytes.HasPrefix(raw, []byte("%PDF-")) {
		t.Fatalf("not a PDF: %q", raw[:min(len(raw), 20)])
	}
	pages := pdftest.PageCount(t, path)
	if pages < 6 {
		t.Fatalf("%d pages; the document should run over at least 6", pages)
	}
	flat := pdftest.Text(t, path)
	for _, want := range []string{
		"Réseaux de capteurs à faible consommation pour l'agriculture",
		"Master's programme in Électronique",
		"Ærøskøbing · Łódź · Ελληνικά · Русский",
		"MOCK DATA: generated offline, not by a language model",
		"Contents",
		"Première puce avec des accents: é è ê ë",
		"Collecte des données et vérification de la qualité",
		"Appendix A: Quality control",
		"Coherence 0.82, feasibility 0.75.",
		"CJK �� is not in the font",
		fmt.Sprintf("Page 1 of %d", pages),
		fmt.Sprintf("Page %d of %d", pages, pages),
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	// The notice is on every page.
	if n := strings.Count(flat, "MOCK DATA"); n < pages {
		t.Errorf("notice on %d places, want every one of %d pages", n, pages)
	}
	// The table's header row is repeated on the page it continues on.
	if n := strings.Count(flat, "Activities"); n < 2 {
		t.Errorf("table header drawn %d times; the table spans pages", n)
	}
}

// TestContentsPagesAreRight reads each entry of the table of contents and
// checks that its heading is on the page it names.
func TestContentsPagesAreRight(t *testing.T) {
	d := longDocument()
	path, _ := renderLong(t)
	pages := pdftest.Pages(t, path)
	contents := pages[1]
	checked := 0
	for _, h := range document.Headings(d) {
		m := regexp.MustCompile(regexp.QuoteMeta(h.Label()) + `[ .]*(\d+)\s*$`).FindStringSubmatch(lineWith(contents, h.Label()))
		if m == nil {
			t.Errorf("contents lack %q:\n%s", h.Label(), contents)
			continue
		}
		page, _ := strconv.Atoi(m[1])
		if page < 3 || page > len(pages) {
			t.Errorf("%q on page %d, outside the body", h.Label(), page)
			continue
		}
		if on := pdftest.Flat(pages[page-1]); !strings.Contains(on, h.Label()) {
			t.Errorf("contents put %q on page %d, which does not show it", h.Label(), page)
		}
		checked++
	}
	if checked != len(document.Headings(d)) {
		t.Errorf("checked %d of %d headings", checked, len(document.Headings(d)))
	}
}

func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func TestLinksOutlineAndMetadata(t *testing.T) {
	_, raw := renderLong(t)
	// Hyperlinks are URI actions; contents entries are internal links.
	if n := bytes.Count(raw, []byte("/URI (https://doi.org/10.7717/peerj.43")); n != 6 {
		t.Errorf("%d hyperlinks, want 6", n)
	}
	if n := bytes.Count(raw, []byte("/Dest [")); n < 3*len(document.Headings(longDocument())) {
		t.Errorf("%d internal links, want 3 per contents entry", n)
	}
	if !bytes.Contains(raw, []byte("/Outlines")) {
		t.Error("no outline (bookmarks)")
	}
	if n := bytes.Count(raw, []byte("/FontFile2")); n != 5 {
		t.Errorf("%d TrueType fonts embedded, want 5 (serif ×4, sans bold)", n)
	}
	if !bytes.Contains(raw, []byte("/CreationDate (D:20240501120000")) {
		t.Error("creation date not recorded")
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	_, a := renderLong(t)
	_, b := render(t, longDocument())
	if !bytes.Equal(a, b) {
		t.Error("the same document gave different bytes")
	}
}

func TestRenderEdgeCases(t *testing.T) {
	// A minimal document: no contents, no notice, empty blocks and cells,
	// control characters and invalid UTF-8.
	d := &document.Document{Title: "Bare\x00 title \xff", Sections: []document.Section{{Title: "Only", Blocks: []document.Block{
		document.Text(""), &document.List{}, &document.Table{}, &document.Table{Rows: [][]string{{"", "x"}}},
		document.Text("tab\there"),
	}}}}
	path, _ := render(t, d)
	if n := pdftest.PageCount(t, path); n != 2 {
		t.Errorf("%d pages, want title page + body", n)
	}
	flat := pdftest.Text(t, path)
	for _, want := range []string{"Bare title �", "1 Only", "tab here", "Page 2 of 2"} {
		if !strings.Contains(flat, want) {
			t.Errorf("text lacks %q: %s", want, flat)
		}
	}
	if err := Render(&bytes.Buffer{}, nil, Options{}); err == nil {
		t.Error("nil document: no error")
	}
}

// droidFallback is Debian's fonts-droid-fallback, a TrueType font with
// CJK ideographs, which .ci/run installs.
const droidFallback = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"

func TestFallbackFontDrawsCJK(t *testing.T) {
	ttf, err := os.ReadFile(droidFallback)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: .ci/run installs fonts-droid-fallback", err)
		}
		t.Skipf("no CJK font to test with (Debian: apt-get install fonts-droid-fallback): %v", err)
	}
	d := &document.Document{
		Title:    "研究提案: Federated learning 联邦学习",
		Contents: true,
		Sections: []document.Section{{Title: "問題 Problem", Blocks: []document.Block{
			document.Para(document.Plain("Le café 研究 est prêt; "), document.Link("論文へのリンク", "https://example.org/ja"), document.Plain(" — fin.")),
			&document.Table{Header: []string{"名前", "Note"}, Rows: [][]string{{"中文单元格", "Vérité à Noël"}}},
			document.Text("Emoji 🙂 is in neither font."),
		}}},
	}
	var buf bytes.Buffer
	if err := Render(&buf, d, Options{Created: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), Fallback: ttf}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cjk.pdf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	text := pdftest.Text(t, path)
	for _, want := range []string{"研究提案: Federated learning 联邦学习", "1 問題 Problem", "Le café 研究 est prêt; 論文へのリンク — fin.", "名前", "中文单元格", "Vérité à Noël", "Emoji � is in neither font."} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if n := bytes.Count(buf.Bytes(), []byte("/FontFile2")); n < 6 {
		t.Errorf("%d fonts embedded; the fallback is not among them", n)
	}
	if !bytes.Contains(buf.Bytes(), []byte("/URI (https://example.org/ja)")) {
		t.Error("the CJK link is lost")
	}

	// A document that needs no fallback does not carry it.
	var plain bytes.Buffer
	latin := &document.Document{Title: "Café", Sections: []document.Section{{Title: "Only Latin", Blocks: []document.Block{document.Text("Vérité à Noël.")}}}}
	if err := Render(&plain, latin, Options{Fallback: ttf}); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(plain.Bytes(), []byte("/FontFile2")); n != 5 {
		t.Errorf("%d fonts embedded; the unused fallback should not be", n)
	}
}

func TestBadFallbackFont(t *testing.T) {
	for font, want := range map[string]string{
		"not a font": "not a TrueType font", "ttcf....": "font collection (.ttc) is not supported",
		"OTTO....": "(.otf) is not supported", "ab": "not a font file",
	} {
		if err := CheckFont([]byte(font)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckFont(%q): %v", font, err)
		}
		err := Render(&bytes.Buffer{}, longDocument(), Options{Fallback: []byte(font)})
		if err == nil || !strings.Contains(err.Error(), "pdf: fallback font: ") {
			t.Errorf("Render with %q: %v", font, err)
		}
	}
}

// TestOnlyWebAndMailLinks: a span whose URL is not http, https or mailto
// is drawn as its text, with no link annotation.
func TestOnlyWebAndMailLinks(t *testing.T) {
	d := &document.Document{Title: "Links <script>alert(0)</script>", Sections: []document.Section{{Title: "Sources", Blocks: []document.Block{
		document.Para(document.Link("js-link", "javascript:app.alert(1)"), document.Plain(" "), document.Link("data-link", "data:text/html,<script>x</script>"),
			document.Plain(" "), document.Link("file-link", "file:///etc/passwd"), document.Plain(" "), document.Link("rel-link", "../secret.pdf"),
			document.Plain(" "), document.Link("launch-link", " JavaScript:this.print()"), document.Plain(" "), document.Link("web-link", "https://example.org/a(b)"),
			document.Plain(" "), document.Link("mail-link", "mailto:ada@example.org")),
	}}}}
	path, raw := render(t, d)
	var uris []string
	for _, m := range regexp.MustCompile(`/URI \(((?:[^()\\]|\\.)*)\)`).FindAllSubmatch(raw, -1) {
		uris = append(uris, string(m[1]))
	}
	if want := []string{`https://example.org/a\(b\)`, "mailto:ada@example.org"}; strings.Join(uris, " ") != strings.Join(want, " ") {
		t.Errorf("link targets %q, want %q", uris, want)
	}
	for _, bad := range []string{"/JavaScript", "/JS", "/Launch", "javascript:", "data:", "file:"} {
		if bytes.Contains(raw, []byte(bad)) {
			t.Errorf("the PDF holds %q", bad)
		}
	}
	text := pdftest.Text(t, path)
	if want := "js-link data-link file-link rel-link launch-link web-link mail-link"; !strings.Contains(text, want) {
		t.Errorf("text lacks %q: %s", want, text)
	}
}
