package document

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

func sample() *Document {
	return &Document{
		Title:      "Réseaux de capteurs & *IoT*",
		Subtitle:   "A proposal",
		TitleLines: []string{"Master's programme", "2024"},
		Notice:     "MOCK DATA: not real",
		Contents:   true,
		Sections: []Section{
			{Title: "Problem", Blocks: []Block{
				Text("First  paragraph\nwith [brackets] and a_b and 1. not a list"),
				Para(Plain("See "), Link("the paper (2020)", "https://example.org/a b(c)"), Plain(" and "), Bold("bold"), Plain(" "), Italic("italic "), Plain("end.")),
			}, Sections: []Section{
				{Title: "Questions", Blocks: []Block{Numbered("Why?", "How | when?")}},
			}},
			{Title: "Plan", Blocks: []Block{
				Bullets("# not a heading", "- not nested"),
				&Table{Header: []string{"Phase", "Weeks"}, Rows: [][]string{{"Pilot | test", "1-4"}, {"Main\nstudy"}}},
			}},
		},
		Appendices: []Section{{Title: "Quality control", Sections: []Section{{Title: "Scores"}}}},
	}
}

func TestHeadingsAreNumbered(t *testing.T) {
	var got []string
	for _, h := range Headings(sample()) {
		got = append(got, h.Label()+"#"+h.Anchor)
	}
	want := []string{"1 Problem#sec-1", "1.1 Questions#sec-1-1", "2 Plan#sec-2", "Appendix A: Quality control#sec-a", "A.1 Scores#sec-a-1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("headings\n got %q\nwant %q", got, want)
	}
}

func TestMarkdown(t *testing.T) {
	md := string(Markdown(sample()))
	for _, want := range []string{
		"# Réseaux de capteurs & \\*IoT\\*\n",
		"> **MOCK DATA: not real**",
		"- [1 Problem](#sec-1)\n  - [1.1 Questions](#sec-1-1)\n",
		"- [Appendix A: Quality control](#sec-a)\n  - [A.1 Scores](#sec-a-1)",
		"<a id=\"sec-1-1\"></a>\n\n### 1.1 Questions\n",
		"First paragraph with \\[brackets\\] and a\\_b and 1. not a list\n",
		"See [the paper (2020)](https://example.org/a%20b%28c%29) and **bold** *italic* end.\n",
		"1. Why?\n2. How \\| when?\n",
		"- \\# not a heading\n- \\- not nested\n",
		"| Phase | Weeks |\n| --- | --- |\n| Pilot \\| test | 1-4 |\n| Main study |  |\n",
		"## Appendix A: Quality control",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"12. item":      "12\\. item",
		"3) item":       "3\\) item",
		"2024 was good": "2024 was good",
		"+1":            "\\+1",
		"a\x00b\tc":     "ab c",
		"two\nlines":    "two lines",
		"bad \xff":      "bad \uFFFD",
		"<b>x</b>":      "\\<b\\>x\\</b\\>",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLinkURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.org/a":             "https://example.org/a",
		"  http://example.org  ":            "http://example.org",
		"HTTPS://EXAMPLE.ORG/x?q=1#f":       "HTTPS://EXAMPLE.ORG/x?q=1#f",
		"mailto:ada@example.org":            "mailto:ada@example.org",
		"javascript:alert(1)":               "",
		"JavaScript:alert(1)":               "",
		" javascript:alert(1)":              "",
		"java\tscript:alert(1)":             "",
		"java\nscript:alert(1)":             "",
		"jav&#x61;script:alert(1)":          "",
		"vbscript:msgbox(1)":                "",
		"data:text/html,<script>x</script>": "",
		"file:///etc/passwd":                "",
		"ftp://example.org/f":               "",
		"//example.org/x":                   "",
		"/relative/path":                    "",
		"#sec-1":                            "",
		"https:example.org":                 "",
		"https://":                          "",
		"mailto:":                           "",
		"https://exa mple.org":              "",
		"":                                  "",
	} {
		if got := LinkURL(in); got != want {
			t.Errorf("LinkURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// hostile is a document whose every text comes from a model that tries to
// break out of it.
func hostile() *Document {
	return &Document{
		Title:      "Topic | with pipe\n# injected heading\n<script>alert(1)</script>",
		Subtitle:   "sub\n===",
		TitleLines: []string{"line\n\n## not a heading"},
		Notice:     "note\n\n<iframe src=x></iframe>",
		Contents:   true,
		Sections: []Section{{Title: "Idea\n## Evil | x #", Blocks: []Block{
			Para(Link("js", "javascript:alert(1)"), Plain(" "), Link("data", "data:text/html;base64,PHNjcmlwdD4="), Plain(" "),
				Link("file", "file:///etc/passwd"), Plain(" "), Link("rel", "/api/runs"), Plain(" "), Link("ok", "https://example.org/a)b<c>"),
				Plain(" "), Link("mail", "mailto:ada@example.org"), Plain(" "), Link("nl", "https://example.org/x\n[y](javascript:alert(5))"),
				Plain(" "), Link("sp", "https://example.org/a b\\](x) \"t\"")),
			Text("<img src=x onerror=alert(1)> &lt;script&gt; &#60;b&#62; [y](javascript:alert(2)) <javascript:alert(3)> ![i](https://example.org/t.png)"),
			&Table{Header: []string{"Idea | x", "Score"}, Rows: [][]string{{"a|b\n| --- |\nc", "1"}}},
			Bullets("x\n- nested?", "1. ordered?", "<div onclick=alert(4)>"),
		}}},
	}
}

// TestMarkdownOfHostileText renders the Markdown of hostile text to HTML
// with raw HTML allowed, as a permissive viewer would, and finds nothing
// active in it and the document's structure intact.
func TestMarkdownOfHostileText(t *testing.T) {
	md := Markdown(hostile())
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	var buf bytes.Buffer
	if err := gm.Convert(md, &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script", "<iframe", "<img", "<div", `href="javascript`, "data:text", "file:"} {
		if strings.Contains(out, bad) {
			t.Errorf("HTML has %q:\n%s\n--- from ---\n%s", bad, out, md)
		}
	}
	var hrefs []string
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(out, -1) {
		hrefs = append(hrefs, m[1])
	}
	want := []string{"#sec-1", "https://example.org/a%29b%3Cc%3E", "mailto:ada@example.org", "https://example.org/a%20b%5C%5D%28x%29%20%22t%22", "https://example.org/t.png"}
	if !slices.Equal(hrefs, want) {
		t.Errorf("links %q, want %q:\n%s", hrefs, want, md)
	}
	for tag, n := range map[string]int{"<h1": 1, "<h2": 2, "<h3": 0, "<table": 1, "<th>": 2, "<td>": 2, "<ul": 2, "<ol": 0, "<li": 4, "<blockquote": 1, "<hr": 0} {
		if got := strings.Count(out, tag); got != n {
			t.Errorf("%d %s, want %d:\n%s\n--- from ---\n%s", got, tag, n, out, md)
		}
	}
	for _, text := range []string{
		"Topic | with pipe # injected heading &lt;script&gt;alert(1)&lt;/script&gt;</h1>",
		"1 Idea ## Evil | x #</h2>",
		"<td>a|b | --- | c</td>",
		"js data file rel <a", "</a> nl <a",
		"&amp;lt;script&amp;gt; &amp;#60;b&amp;#62; [y](javascript:alert(2)) &lt;javascript:alert(3)&gt; ![i](",
		"<li>x - nested?</li>", "<li>1. ordered?</li>",
	} {
		if !strings.Contains(out, text) {
			t.Errorf("HTML lacks %q:\n%s\n--- from ---\n%s", text, out, md)
		}
	}
}
