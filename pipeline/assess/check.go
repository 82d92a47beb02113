package assess

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/madspark/madspark/structured"
)

// Section is one of the sections an analysis must have.
type Section struct {
	Title string
	// Guidance tells the analyst what goes in it.
	Guidance string
	// match is what a heading must contain, once normalised, to count as
	// this section.
	match string
}

// Sections are the seed's sections of a market analysis, in order.
var Sections = []Section{
	{"What We Do", "the business in two or three plain sentences: who pays, for what", "what we do"},
	{"The Problem", "whose pain, how often, how costly; evidence that it is real", "problem"},
	{"The Solution", "how the product removes the pain and why it is better than today's workaround", "solution"},
	{"Market Size", "TAM, SAM and SOM with the arithmetic behind each figure", "market size"},
	{"Business Model", "pricing, revenue streams, unit economics (CAC, LTV, margins)", "business model"},
	{"Why Now", "the changes in technology, regulation or behaviour that open the window", "why now"},
	{"Competition & Moat", "direct and indirect competitors, substitutes, and what will stay defensible", "competition"},
	{"Key Risks & Mitigation", "the risks that could kill the business, each with its mitigation", "risk"},
	{"Milestones", "what to achieve at 6, 12 and 24 months, and the proof each gives", "milestone"},
	{"References", "the sources behind the figures", "reference"},
}

var (
	headingRE = regexp.MustCompile(`(?m)^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$`)
	urlRE     = regexp.MustCompile(`https?://[^\s<>()\[\]"'` + "`" + `]+`)
)

// normalise lower-cases a heading, spells "&" as "and" and keeps only
// letters and single spaces, so "## 7. Competition & Moat" reads
// "competition and moat".
func normalise(s string) string {
	s = strings.ReplaceAll(strings.ToLower(s), "&", " and ")
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }), " ")
}

// Headings returns the analysis's markdown headings.
func Headings(analysis string) []string {
	var out []string
	for _, m := range headingRE.FindAllStringSubmatch(analysis, -1) {
		out = append(out, m[1])
	}
	return out
}

// MissingSections returns the titles of the sections the analysis has no
// heading for.
func MissingSections(analysis string) []string {
	heads := Headings(analysis)
	var missing []string
	for _, s := range Sections {
		found := false
		for _, h := range heads {
			if strings.Contains(normalise(h), s.match) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, s.Title)
		}
	}
	return missing
}

// CountWords counts the words of a markdown text: runs of characters
// between spaces that hold at least one letter or digit (so "-", "|" and
// "##" are not words, "$4.2B" and "2030" are).
func CountWords(text string) int {
	n := 0
	for _, f := range strings.Fields(text) {
		if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			n++
		}
	}
	return n
}

// CitedURLs returns the distinct URLs in text, in order of appearance,
// without the punctuation that ends a sentence.
func CitedURLs(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, u := range urlRE.FindAllString(text, -1) {
		u = strings.TrimRight(u, ".,;:!?*_")
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// urlKey is the form in which two URLs are compared: scheme and host in
// lower case, no fragment, no trailing slash.
func urlKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme, u.Host, u.Fragment = strings.ToLower(u.Scheme), strings.ToLower(u.Host), ""
	return strings.TrimSuffix(u.String(), "/")
}

// unfence returns text without a code fence around the whole of it, as
// models sometimes send a markdown document ("```markdown" … "```"); any
// other text is returned as it is. A bare "```" fence is removed only when
// the text has no other fence, which would make its extent unclear.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	nl := strings.IndexByte(t, '\n')
	if nl < 0 || !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < nl+4 {
		return text
	}
	body := t[nl+1 : len(t)-3]
	switch strings.ToLower(strings.TrimSpace(t[3:nl])) {
	case "markdown", "md":
	case "":
		if strings.Contains(body, "```") {
			return text
		}
	default:
		return text
	}
	return strings.TrimSpace(body)
}

// checkAnalysis is the analyst's contract, read softly: the word target
// is asked for in the prompt, and a shorter analysis is kept (and marked
// Short by the caller); a missing section is asked for once, then the
// analysis is kept without it; a URL that the searches did not return
// (with no searches, any URL) is removed from the text, as nothing backs
// it. The text is taken out of a code fence around the whole of it first.
func checkAnalysis(text *string, p *structured.Problems, minWords int, returned []string) {
	*text = unfence(*text)
	if n := CountWords(*text); n < minWords {
		p.Fix("length", fmt.Sprintf("the analysis has %d words; the target is %d", n, minWords), func() string {
			return fmt.Sprintf("%d words, below the %d-word target: kept", n, minWords)
		})
	}
	if m := MissingSections(*text); len(m) > 0 {
		p.Ask("count", "sections are missing (each needs a markdown heading): "+strings.Join(m, ", "), func() string {
			return "kept without the sections " + strings.Join(m, ", ")
		})
	}
	if bad := uncited(*text, returned); len(bad) > 0 {
		msg := "the analysis cites URLs that the web searches did not return (cite only the listed sources): " + strings.Join(bad, ", ")
		if len(returned) == 0 {
			msg = "no web search was run, so the analysis must not cite URLs; remove: " + strings.Join(bad, ", ")
		}
		p.Fix("reference", msg, func() string {
			*text = dropURLs(*text, bad)
			return fmt.Sprintf("%d URL(s) no search returned removed: %s", len(bad), strings.Join(bad, ", "))
		})
	}
}

// mdLinkRE matches a markdown link or an autolink.
var mdLinkRE = regexp.MustCompile(`\[([^\]]*)\]\(\s*<?(https?://[^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|<(https?://[^>\s]+)>`)

// dropURLs removes the URLs bad from text: a markdown link keeps its text,
// a bare URL or an autolink goes, with the brackets or parentheses left
// empty around it.
func dropURLs(text string, bad []string) string {
	drop := map[string]bool{}
	for _, u := range bad {
		drop[urlKey(u)] = true
	}
	isBad := func(u string) bool { return drop[urlKey(strings.TrimRight(u, ".,;:!?*_"))] }
	text = mdLinkRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := mdLinkRE.FindStringSubmatch(m)
		switch {
		case sub[2] != "" && isBad(sub[2]):
			if strings.TrimSpace(sub[1]) == "" || isBad(sub[1]) {
				return ""
			}
			return sub[1]
		case sub[3] != "" && isBad(sub[3]):
			return ""
		}
		return m
	})
	text = urlRE.ReplaceAllStringFunc(text, func(u string) string {
		trimmed := strings.TrimRight(u, ".,;:!?*_")
		if isBad(trimmed) {
			return u[len(trimmed):]
		}
		return u
	})
	return emptyRefRE.ReplaceAllString(text, "")
}

// emptyRefRE matches the brackets a removed URL leaves empty.
var emptyRefRE = regexp.MustCompile(`[ \t]*(\(\s*\)|\[\s*\])`)

// uncited returns the URLs in text that are not among returned, in order
// of appearance.
func uncited(text string, returned []string) []string {
	ok := map[string]bool{}
	for _, u := range returned {
		ok[urlKey(u)] = true
	}
	var bad []string
	for _, u := range CitedURLs(text) {
		if !ok[urlKey(u)] {
			bad = append(bad, u)
		}
	}
	return bad
}
