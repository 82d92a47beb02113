package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document/pdf/pdftest"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/debate"
)

// hostileRun is a debate whose query, answer and sources try to put
// active content and broken structure into its exports.
func hostileRun(t *testing.T) *madspark.Run {
	t.Helper()
	res := map[string]any{
		"query": "Which DB? | col\n# Injected <script>alert(1)</script>",
		"answer": "## Verdict\n\nUse [Postgres](javascript:alert(2)) or [SQLite](https://sqlite.org/).\n\n" +
			"<img src=x onerror=alert(3)>\n\n<iframe src=\"https://evil.example\"></iframe>\n\n" +
			"Inline <script>alert(4)</script> and <javascript:alert(5)> and [d](data:text/html;base64,PHNjcmlwdD4=) and [f](file:///etc/passwd).\n\n" +
			"| Engine | Note |\n|---|---|\n| a \\| b | <b onmouseover=alert(6)>x</b> |\n",
		"path":        "simple",
		"rounds":      1,
		"transitions": []any{},
		"sources": []map[string]string{
			{"title": "Evil ](javascript:alert(7)) page", "url": "javascript:alert(8)", "snippet": "<svg onload=alert(9)>"},
			{"title": "Good page", "url": "https://example.org/good", "snippet": "fine"},
		},
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return &madspark.Run{ID: "01234567-hostile", Pipeline: "debate", Status: madspark.RunSucceeded, Mode: "live", Provider: "p", Model: "m",
		Result: raw, CreatedAt: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), FinishedAt: time.Date(2024, 5, 1, 12, 1, 0, 0, time.UTC)}
}

var hostileDef = pipeline.Definition{Name: "debate", Document: debate.Document}

// TestMarkdownExportOfHostileRun renders the Markdown export to HTML with
// raw HTML allowed, as a permissive viewer would.
func TestMarkdownExportOfHostileRun(t *testing.T) {
	f, err := Render(hostileDef, hostileRun(t), "markdown", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := gm.Convert(f.Data, &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script", "<img", "<iframe", "<svg", "<b ", "href=\"javascript", "href=\"data", "href=\"file"} {
		if strings.Contains(out, bad) {
			t.Errorf("HTML has %q:\n%s\n--- from ---\n%s", bad, out, f.Data)
		}
	}
	var hrefs []string
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(out, -1) {
		hrefs = append(hrefs, m[1])
	}
	if got, want := strings.Join(hrefs, " "), "https://sqlite.org/ https://example.org/good"; got != want {
		t.Errorf("links %q, want %q:\n%s", got, want, f.Data)
	}
	if n := strings.Count(out, "<h1>"); n != 1 {
		t.Errorf("%d level-1 headings, want the title alone:\n%s", n, out)
	}
	for _, want := range []string{
		"<h1>Which DB? | col # Injected &lt;script&gt;alert(1)&lt;/script&gt;</h1>",
		"Use Postgres or <a href=\"https://sqlite.org/\">SQLite</a>",
		"<td>a | b</td>",
		"Evil ](javascript:alert(7)) page — &lt;svg onload=alert(9)&gt;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q:\n%s", want, out)
		}
	}
}

func TestPDFExportOfHostileRun(t *testing.T) {
	f, err := Render(hostileDef, hostileRun(t), "pdf", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, m := range regexp.MustCompile(`/URI \(((?:[^()\\]|\\.)*)\)`).FindAllSubmatch(f.Data, -1) {
		uris = append(uris, string(m[1]))
	}
	if got, want := strings.Join(uris, " "), "https://sqlite.org/ https://example.org/good"; got != want {
		t.Errorf("link targets %q, want %q", got, want)
	}
	for _, bad := range []string{"/JavaScript", "/JS", "/Launch", "javascript:alert(2)", "javascript:alert(8)", "data:text", "file:"} {
		if bytes.Contains(f.Data, []byte(bad)) {
			t.Errorf("the PDF holds %q", bad)
		}
	}
	path := filepath.Join(t.TempDir(), f.Name)
	if err := os.WriteFile(path, f.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	text := pdftest.Text(t, path)
	for _, want := range []string{"Use Postgres or SQLite.", "Evil ](javascript:alert(7)) page", "Good page"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}
