package assess

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// IdeaLine is an idea read from an ideas file, with its line number.
type IdeaLine struct {
	Line int
	Idea string
}

var (
	listMarker = regexp.MustCompile(`^(?:[-*+]|\d{1,4}[.)])\s+(?:\[[ xX]\]\s+)?`)
	rule       = regexp.MustCompile(`^(?:-{3,}|\*{3,}|_{3,})$`)
)

// ParseIdeas reads one idea per line, or a markdown list of them. Blank
// lines, headings, rules, quotes, HTML comments and fenced code are
// ignored; list markers and check boxes are removed. An idea that appears
// twice is kept once and its later line returned in dups. An invalid idea
// is an error naming its line.
func ParseIdeas(r io.Reader) (ideas []IdeaLine, dups []IdeaLine, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	seen := map[string]bool{}
	fenced := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fenced = !fenced
			continue
		}
		switch {
		case fenced, line == "", strings.HasPrefix(line, "#"), strings.HasPrefix(line, ">"),
			strings.HasPrefix(line, "<!--") && strings.HasSuffix(line, "-->"), rule.MatchString(line):
			continue
		}
		idea := strings.TrimSpace(listMarker.ReplaceAllString(line, ""))
		if idea == "" {
			continue
		}
		if err := ValidateIdea(idea); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		key := strings.ToLower(strings.Join(strings.Fields(idea), " "))
		if seen[key] {
			dups = append(dups, IdeaLine{n, idea})
			continue
		}
		seen[key] = true
		ideas = append(ideas, IdeaLine{n, idea})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading ideas: %w", err)
	}
	return ideas, dups, nil
}
