package document

import (
	"strings"
	"testing"
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
		"a\x00b\tc":     "ab\tc",
		"bad \xff":      "bad \uFFFD",
		"<b>x</b>":      "\\<b\\>x\\</b\\>",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
