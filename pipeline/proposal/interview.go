package proposal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrInterviewEnded is returned by Interview when its input ends before
// every question is answered.
var ErrInterviewEnded = errors.New("interview ended")

// question is one step of the interview: a prompt and how to read the
// answer into the profile.
type question struct {
	field, prompt string
	// set reads answer into p, or says what is wrong with it.
	set func(p *UserProfile, answer string) error
}

var questions = []question{
	{"academic_program", "Which academic programme are you in (for example Bachelor's, Master's, PhD)?", func(p *UserProfile, a string) error {
		p.AcademicProgram = a
		return checkText("the programme", a, maxShortText, true)
	}},
	{"field_of_study", "What is your field of study (for example Computer Science, Public Health)?", func(p *UserProfile, a string) error {
		p.FieldOfStudy = a
		return checkText("the field of study", a, maxShortText, true)
	}},
	{"research_area", "Which research area or topic interests you? A phrase is enough.", func(p *UserProfile, a string) error {
		p.ResearchArea = a
		return checkText("the research area", a, maxShortText, true)
	}},
	{"weekly_hours", fmt.Sprintf("How many hours a week can you give to the research (a whole number, 1-%d)?", MaxWeeklyHours), func(p *UserProfile, a string) error {
		n, err := parseHours(a)
		if err != nil {
			return err
		}
		p.WeeklyHours = n
		return nil
	}},
	{"total_timeline", "How long do you have in total (for example \"6 months\", \"1 year\", \"12 weeks\")?", func(p *UserProfile, a string) error {
		t, err := ParseTimeline(a)
		if err != nil {
			return err
		}
		if w := t.Weeks(); w < MinTimelineWeeks || w > MaxTimelineWeeks {
			return fmt.Errorf("the timeline must be from %d weeks to 10 years, got %s", MinTimelineWeeks, t)
		}
		p.TotalTimeline = t
		return nil
	}},
	{"existing_skills", "Which relevant skills do you already have? Separate them with commas; leave empty for none.", func(p *UserProfile, a string) error {
		return setList(&p.ExistingSkills, "skills", a)
	}},
	{"missing_skills", "Which skills do you expect to need and not have yet? Commas between them; empty for none.", func(p *UserProfile, a string) error {
		return setList(&p.MissingSkills, "skills", a)
	}},
	{"constraints", "Any constraints (fieldwork, software access, ethics approval, budget...)? Commas between them; empty for none.", func(p *UserProfile, a string) error {
		return setList(&p.Constraints, "constraints", a)
	}},
	{"additional_context", "Anything else the proposal should take into account? Optional: press Enter to skip.", func(p *UserProfile, a string) error {
		p.AdditionalContext = a
		return checkText("the answer", a, maxContext, false)
	}},
}

// parseHours reads a whole number of hours: "10", "10h", "10 hours".
func parseHours(a string) (int, error) {
	s := strings.ToLower(strings.TrimSpace(a))
	for _, suffix := range []string{"hours", "hour", "hrs", "hr", "h"} {
		if t, ok := strings.CutSuffix(s, suffix); ok {
			s = strings.TrimSpace(t)
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("give a whole number of hours, such as 10, got %q", a)
	}
	if n < 1 || n > MaxWeeklyHours {
		return 0, fmt.Errorf("the hours must be from 1 to %d, got %d", MaxWeeklyHours, n)
	}
	return n, nil
}

// setList reads a comma- or semicolon-separated list; "none", "-" and "n/a"
// mean an empty one.
func setList(dst *[]string, what, a string) error {
	*dst = []string{}
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "", "none", "-", "n/a", "no":
		return nil
	}
	for _, item := range strings.FieldsFunc(a, func(r rune) bool { return r == ',' || r == ';' }) {
		if item = strings.Join(strings.Fields(item), " "); item != "" {
			if err := checkText("each item", item, maxShortText, true); err != nil {
				return err
			}
			*dst = append(*dst, item)
		}
	}
	if len(*dst) > MaxListItems {
		return fmt.Errorf("list at most %d %s", MaxListItems, what)
	}
	return nil
}

// Interview asks for the profile one question at a time on out, reading
// each answer, a line, from in. An answer that does not fit is explained
// and the question asked again. When in ends before the last answer, it
// returns an error wrapping ErrInterviewEnded that names the unanswered
// field; when ctx ends (Ctrl-C), ctx's error.
func Interview(ctx context.Context, in io.Reader, out io.Writer) (UserProfile, error) {
	p := UserProfile{ExistingSkills: []string{}, MissingSkills: []string{}, Constraints: []string{}}
	lines, stop := readLines(in)
	defer stop()
	fmt.Fprintf(out, "A few questions about you and your research (%d in all).\n", len(questions))
	for i, q := range questions {
		for {
			fmt.Fprintf(out, "\n[%d/%d] %s\n> ", i+1, len(questions), q.prompt)
			var l readLine
			select {
			case <-ctx.Done():
				fmt.Fprintln(out)
				return p, fmt.Errorf("interview interrupted before %s was answered: %w", q.field, ctx.Err())
			case l = <-lines:
			}
			if l.tooLong {
				fmt.Fprintf(out, "  ✗ The answer is longer than %d bytes. Please answer again.\n", maxAnswer)
				if l.err == nil {
					continue
				}
				l.text = ""
			}
			if l.err != nil && (l.err != io.EOF || l.text == "") {
				fmt.Fprintln(out)
				if l.err == io.EOF {
					return p, fmt.Errorf("%w before %s was answered: nothing was written", ErrInterviewEnded, q.field)
				}
				return p, fmt.Errorf("interview: reading the answer to %s: %w", q.field, l.err)
			}
			answer := strings.TrimSpace(l.text)
			if err := q.set(&p, answer); err != nil {
				fmt.Fprintf(out, "  ✗ %s. Please answer again.\n", capitalize(err.Error()))
				continue
			}
			break
		}
	}
	p.Normalize()
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("interview: %w", err)
	}
	fmt.Fprintf(out, "\nThank you. Writing a proposal on %q for %s of %d hours a week.\n", p.ResearchArea, p.TotalTimeline, p.WeeklyHours)
	return p, nil
}

// maxAnswer bounds an answer line, in bytes: room for the longest field
// (additional_context, 4000 characters) in any script.
const maxAnswer = 4 * maxContext

// readLine is a line read from the terminal, or why none could be.
// tooLong marks a line longer than maxAnswer, of which text holds nothing.
type readLine struct {
	text    string
	tooLong bool
	err     error
}

// readLines reads lines from in in a goroutine, so that waiting for an
// answer can be interrupted; stop ends it once its current read returns.
// A line longer than maxAnswer is read to its end and dropped, so that no
// input, however long, is held in memory.
func readLines(in io.Reader) (<-chan readLine, func()) {
	lines, done := make(chan readLine), make(chan struct{})
	go func() {
		br := bufio.NewReaderSize(in, 4096)
		for {
			var l readLine
			var b []byte
			for {
				chunk, more, err := br.ReadLine()
				if len(b)+len(chunk) > maxAnswer {
					l.tooLong, b = true, nil
				} else if !l.tooLong {
					b = append(b, chunk...)
				}
				if err != nil {
					l.err = err
					break
				}
				if !more {
					break
				}
			}
			l.text = string(b)
			select {
			case lines <- l:
			case <-done:
				return
			}
			if l.err != nil {
				return
			}
		}
	}()
	return lines, func() { close(done) }
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
