package proposal

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const goodYAML = `# my profile
academic_program: Master's
field_of_study: Education
research_area: peer tutoring in secondary schools
weekly_hours: 10
total_timeline:
  value: 6
  unit: Month
existing_skills: [surveys, " interviews "]
missing_skills:
  - statistics
constraints: []
additional_context: Études en français, naïve learners.
`

func TestParseProfile(t *testing.T) {
	want := UserProfile{
		AcademicProgram: "Master's", FieldOfStudy: "Education", ResearchArea: "peer tutoring in secondary schools",
		WeeklyHours: 10, TotalTimeline: Timeline{Value: 6, Unit: Months},
		ExistingSkills: []string{"surveys", "interviews"}, MissingSkills: []string{"statistics"}, Constraints: []string{},
		AdditionalContext: "Études en français, naïve learners.",
	}
	got, err := ParseProfile("me.yaml", strings.NewReader(goodYAML))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("yaml:\n got %+v\nwant %+v", got, want)
	}
	js := `{"academic_program": "Master's", "field_of_study": "Education", "research_area": "peer tutoring in secondary schools",
	  "weekly_hours": 10, "total_timeline": "6 months", "existing_skills": ["surveys", "interviews"], "missing_skills": ["statistics"],
	  "additional_context": "Études en français, naïve learners."}`
	got, err = ParseProfile("me.json", strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("json:\n got %+v\nwant %+v", got, want)
	}
	if got.TotalTimeline.Weeks() != 26 || got.HoursAvailable() != 260 {
		t.Errorf("weeks %d hours %d", got.TotalTimeline.Weeks(), got.HoursAvailable())
	}
}

func TestParseProfileNamesTheBadField(t *testing.T) {
	base := strings.Replace(goodYAML, "# my profile\n", "", 1)
	for _, tc := range []struct {
		name, file, text, want string
	}{
		{"unknown field", "me.yaml", base + "weekly_hour: 3\n", `unknown field "weekly_hour" (did you mean "weekly_hours"?)`},
		{"unknown far field", "me.yaml", base + "supervisor: Dr. X\n", `unknown field "supervisor" (the fields are academic_program, field_of_study`},
		{"unknown nested", "me.yaml", strings.Replace(base, "unit: Month", "unit: Month\n  start: May", 1), `total_timeline: unknown field "start"`},
		{"wrong type", "me.yaml", strings.Replace(base, "weekly_hours: 10", "weekly_hours: ten", 1), "weekly_hours must be a whole number, got string"},
		{"fraction", "me.yaml", strings.Replace(base, "weekly_hours: 10", "weekly_hours: 7.5", 1), "weekly_hours must be a whole number, got number 7.5"},
		{"zero hours", "me.yaml", strings.Replace(base, "weekly_hours: 10", "weekly_hours: 0", 1), "weekly_hours must be a whole number of hours from 1 to 80, got 0"},
		{"too many hours", "me.yaml", strings.Replace(base, "weekly_hours: 10", "weekly_hours: 100", 1), "weekly_hours must be a whole number of hours from 1 to 80, got 100"},
		{"missing field", "me.yaml", strings.Replace(base, "research_area: peer tutoring in secondary schools\n", "", 1), "research_area is missing"},
		{"empty field", "me.yaml", strings.Replace(base, "research_area: peer tutoring in secondary schools", `research_area: "  "`, 1), "research_area must not be empty"},
		{"bad unit", "me.yaml", strings.Replace(base, "unit: Month", "unit: fortnights", 1), `total_timeline.unit must be weeks, months or years, got "fortnights"`},
		{"timeline too long", "me.yaml", strings.Replace(base, "value: 6", "value: 600", 1), "total_timeline must be from 2 weeks to 10 years, got 600 months"},
		{"timeline text", "me.yaml", strings.Replace(base, "total_timeline:\n  value: 6\n  unit: Month", "total_timeline: soon", 1), `total_timeline: give a whole number and a unit`},
		{"timeline value type", "me.yaml", strings.Replace(base, "value: 6", "value: six", 1), "total_timeline.value must be a whole number, got string"},
		{"list of numbers", "me.yaml", strings.Replace(base, "constraints: []", "constraints: {a: 1}", 1), "constraints must be a list of texts, got object"},
		{"empty list item", "me.json", `{"academic_program":"M","field_of_study":"F","research_area":"R","weekly_hours":5,"total_timeline":"3 months","constraints":[1]}`, "constraints must be a list of texts, got number"},
		{"duplicate key", "me.yaml", base + "weekly_hours: 12\n", `line 13: mapping key "weekly_hours" already defined at line 4`},
		{"not a mapping", "me.yaml", "- a\n- b\n", "the profile must be a mapping of field names to values"},
		{"empty", "me.yaml", "  \n", "profile me.yaml is empty"},
		{"bad json", "me.json", `{"academic_program": `, "not valid JSON"},
		{"long context", "me.yaml", strings.Replace(base, "additional_context: Études en français, naïve learners.", "additional_context: "+strings.Repeat("é", 4001), 1), "additional_context is 4001 characters; the limit is 4000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProfile(tc.file, strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
			if err != nil && (!strings.HasPrefix(err.Error(), "profile "+tc.file) || strings.Contains(err.Error(), "\n")) {
				t.Errorf("error is not one line naming the file: %q", err)
			}
		})
	}
}

func TestParseTimeline(t *testing.T) {
	for in, want := range map[string]Timeline{
		"6 months": {6, Months}, "1 year": {1, Years}, "12wk": {12, Weeks}, " 18 Mo ": {18, Months}, "2 YEARS": {2, Years},
	} {
		got, err := ParseTimeline(in)
		if err != nil || got != want {
			t.Errorf("ParseTimeline(%q) = %v, %v", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"six months": "give a whole number and a unit", "6": "give a unit after 6", "6 fortnights": `the unit must be weeks, months or years, got "fortnights"`,
		"7.5 months": "give a whole number", "": "give a whole number", "0 weeks": "give a whole number",
	} {
		if _, err := ParseTimeline(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTimeline(%q): %v, want %q", in, err, want)
		}
	}
	if s := (Timeline{1, Years}).String(); s != "1 year" {
		t.Errorf("String %q", s)
	}
}

func TestInterviewReasksBadAnswers(t *testing.T) {
	script := strings.Join([]string{
		"",                     // programme: empty, asked again
		"Master's",             //
		"Education",            // field
		"peer tutoring",        // area
		"ten",                  // hours: not a number
		"0",                    // hours: out of range
		"12 h",                 // hours
		"6",                    // timeline: no unit
		"1 week",               // timeline: too short
		"6 months",             // timeline
		"surveys, interviews ", // existing skills
		"none",                 // missing skills
		"no travel; ethics approval needed",
		"", // additional context: skipped
	}, "\n") + "\n"
	var out strings.Builder
	p, err := Interview(context.Background(), strings.NewReader(script), &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := UserProfile{AcademicProgram: "Master's", FieldOfStudy: "Education", ResearchArea: "peer tutoring", WeeklyHours: 12,
		TotalTimeline: Timeline{6, Months}, ExistingSkills: []string{"surveys", "interviews"}, MissingSkills: []string{},
		Constraints: []string{"no travel", "ethics approval needed"}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("profile\n got %+v\nwant %+v", p, want)
	}
	o := out.String()
	for _, s := range []string{
		"[1/9] Which academic programme", "✗ The programme must not be empty. Please answer again.",
		`✗ Give a whole number of hours, such as 10, got "ten"`, "✗ The hours must be from 1 to 80, got 0",
		"✗ Give a unit after 6: weeks, months or years", "✗ The timeline must be from 2 weeks to 10 years, got 1 week",
		"[9/9] Anything else", `Writing a proposal on "peer tutoring" for 6 months of 12 hours a week`,
	} {
		if !strings.Contains(o, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	// Questions are asked one at a time: each bad answer asks the same
	// question again, once.
	if n := strings.Count(o, "[1/9]"); n != 2 {
		t.Errorf("question 1 asked %d times, want 2", n)
	}
	if n := strings.Count(o, "[4/9]"); n != 3 {
		t.Errorf("question 4 asked %d times, want 3", n)
	}
}

// TestInterviewLongAnswer: an answer longer than any field allows (here a
// megabyte without a newline, as from a wrong file piped in) is refused
// and the question asked again; it is never held whole.
func TestInterviewLongAnswer(t *testing.T) {
	script := strings.Repeat("x", 1<<20) + "\nMaster's\nEducation\npeer tutoring\n10\n6 months\n\n\n\n\n"
	var out strings.Builder
	p, err := Interview(context.Background(), strings.NewReader(script), &out)
	if err != nil || p.AcademicProgram != "Master's" {
		t.Fatalf("%+v %v", p, err)
	}
	if !strings.Contains(out.String(), "✗ The answer is longer than 16000 bytes. Please answer again.") || strings.Count(out.String(), "[1/9]") != 2 {
		t.Errorf("output %q", out.String())
	}
	// Without a newline before the input ends: the interview ends.
	_, err = Interview(context.Background(), strings.NewReader(strings.Repeat("x", 1<<20)), &out)
	if !errors.Is(err, ErrInterviewEnded) {
		t.Errorf("err %v", err)
	}
}

func TestInterviewEndsEarly(t *testing.T) {
	var out strings.Builder
	_, err := Interview(context.Background(), strings.NewReader("Master's\nEducation\npeer tutoring\n"), &out)
	if !errors.Is(err, ErrInterviewEnded) || !strings.Contains(err.Error(), "before weekly_hours was answered") {
		t.Errorf("err %v", err)
	}
	// A last answer without a newline still counts.
	script := "PhD\nBiology\nsoil microbes\n20\n1 year\n\n\n\nlast line without newline"
	p, err := Interview(context.Background(), strings.NewReader(script), &out)
	if err != nil || p.AdditionalContext != "last line without newline" || p.TotalTimeline.Weeks() != 52 {
		t.Errorf("%+v %v", p, err)
	}
}

func TestInterviewInterrupted(t *testing.T) {
	// A terminal that answers once, then never again: the interview ends
	// when ctx does.
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := &syncBuf{}
	go func() {
		_, err := Interview(ctx, r, out)
		done <- err
	}()
	if _, err := io.WriteString(w, "Master's\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "[2/9]"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second question was not asked")
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted before field_of_study was answered") {
			t.Errorf("err %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the interview did not stop when its context ended")
	}
}

// syncBuf is a strings.Builder safe for one writer and one reader.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
