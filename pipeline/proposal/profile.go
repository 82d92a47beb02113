package proposal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v4"

	"github.com/madspark/madspark/input"
)

// TimeUnit is the unit of a timeline.
type TimeUnit string

// The time units.
const (
	Weeks  TimeUnit = "weeks"
	Months TimeUnit = "months"
	Years  TimeUnit = "years"
)

// Timeline is the time the researcher has in total (seed: Timeline).
type Timeline struct {
	Value int      `json:"value" jsonschema:"required,minimum=1,title=Length,description=How many weeks\\, months or years"`
	Unit  TimeUnit `json:"unit" jsonschema:"required,enum=weeks,enum=months,enum=years,title=Unit,description=The unit of the length"`
}

// Weeks returns the timeline in weeks, months counted as 52/12 weeks.
func (t Timeline) Weeks() int {
	switch t.Unit {
	case Weeks:
		return t.Value
	case Months:
		return int(math.Round(float64(t.Value) * 52 / 12))
	case Years:
		return t.Value * 52
	}
	return 0
}

// UnmarshalJSON reads a timeline as {"value": 6, "unit": "months"}, with
// no other field, or as a string such as "6 months".
func (t *Timeline) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseTimeline(s)
		if err != nil {
			return fmt.Errorf("total_timeline: %w", err)
		}
		*t = v
		return nil
	}
	type plain Timeline
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v plain
	if err := dec.Decode(&v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("total_timeline.%s must be %s, got %s", te.Field, map[string]string{"value": "a whole number", "unit": "text"}[te.Field], te.Value)
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("total_timeline: unknown field %s (the fields are value and unit)", f)
		}
		return fmt.Errorf("total_timeline must be a mapping with value and unit, or text such as \"6 months\"")
	}
	*t = Timeline(v)
	return nil
}

// ParseTimeline reads a timeline written as a number and a unit, such as
// "6 months", "1 year" or "12wk".
func ParseTimeline(s string) (Timeline, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i == 0 || s == "" {
		return Timeline{}, fmt.Errorf("give a whole number and a unit, such as \"6 months\", got %q", s)
	}
	if i < 0 {
		return Timeline{}, fmt.Errorf("give a unit after %s: weeks, months or years", s)
	}
	if s[i] == '.' || s[i] == ',' {
		return Timeline{}, fmt.Errorf("give a whole number, such as \"7 months\" or \"30 weeks\", got %q", s)
	}
	var n int
	if _, err := fmt.Sscan(s[:i], &n); err != nil || n < 1 {
		return Timeline{}, fmt.Errorf("give a whole number and a unit, such as \"6 months\", got %q", s)
	}
	u, ok := parseUnit(s[i:])
	if !ok {
		return Timeline{}, fmt.Errorf("the unit must be weeks, months or years, got %q", strings.TrimSpace(s[i:]))
	}
	return Timeline{Value: n, Unit: u}, nil
}

func (t Timeline) String() string {
	u := string(t.Unit)
	if t.Value == 1 {
		u = strings.TrimSuffix(u, "s")
	}
	return fmt.Sprintf("%d %s", t.Value, u)
}

// Limits on a profile.
const (
	MaxWeeklyHours   = 80
	MinTimelineWeeks = 2
	MaxTimelineWeeks = 520
	MaxListItems     = 30
	maxShortText     = 300
	maxContext       = 4000
)

// UserProfile is what the interview learns about the researcher (seed:
// UserProfile).
type UserProfile struct {
	AcademicProgram   string   `json:"academic_program" jsonschema:"required,maxLength=300,title=Academic program,description=Degree or program\\, such as MSc Computer Science"`
	FieldOfStudy      string   `json:"field_of_study" jsonschema:"required,maxLength=300,title=Field of study,description=The discipline the research belongs to"`
	ResearchArea      string   `json:"research_area" jsonschema:"required,maxLength=300,title=Research area,description=The topic the proposal is about"`
	WeeklyHours       int      `json:"weekly_hours" jsonschema:"required,minimum=1,maximum=80,title=Hours a week,description=Time given to the research each week\\, in hours"`
	TotalTimeline     Timeline `json:"total_timeline" jsonschema:"required,title=Total timeline,description=The time available in total (2 weeks to 10 years)"`
	ExistingSkills    []string `json:"existing_skills" jsonschema:"maxItems=30,title=Existing skills,description=Skills the researcher has"`
	MissingSkills     []string `json:"missing_skills" jsonschema:"maxItems=30,title=Skills to acquire,description=Skills the research needs that the researcher lacks"`
	Constraints       []string `json:"constraints" jsonschema:"maxItems=30,title=Constraints,description=Limits on data\\, equipment\\, ethics or budget"`
	AdditionalContext string   `json:"additional_context" jsonschema:"maxLength=4000,title=Additional context,description=Anything else the proposal should take into account"`
}

// HoursAvailable is the researcher's total time in hours.
func (p *UserProfile) HoursAvailable() int { return p.WeeklyHours * p.TotalTimeline.Weeks() }

// Normalize trims every text, drops empty list items, and spells the
// timeline's unit in full ("month" and "mo" become "months").
func (p *UserProfile) Normalize() {
	for _, s := range []*string{&p.AcademicProgram, &p.FieldOfStudy, &p.ResearchArea, &p.AdditionalContext} {
		*s = strings.TrimSpace(*s)
	}
	for _, l := range []*[]string{&p.ExistingSkills, &p.MissingSkills, &p.Constraints} {
		out := []string{}
		for _, s := range *l {
			if s = strings.Join(strings.Fields(s), " "); s != "" {
				out = append(out, s)
			}
		}
		*l = out
	}
	if u, ok := parseUnit(string(p.TotalTimeline.Unit)); ok {
		p.TotalTimeline.Unit = u
	}
}

// parseUnit reads a time unit in any common spelling.
func parseUnit(s string) (TimeUnit, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "week", "weeks", "wk", "wks", "w":
		return Weeks, true
	case "month", "months", "mo", "mos", "m":
		return Months, true
	case "year", "years", "yr", "yrs", "y":
		return Years, true
	}
	return "", false
}

// Validate reports the first problem with p, naming the field.
func (p *UserProfile) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	for _, f := range []struct {
		name, value string
	}{{"academic_program", p.AcademicProgram}, {"field_of_study", p.FieldOfStudy}, {"research_area", p.ResearchArea}} {
		if err := checkText(f.name, f.value, maxShortText, true); err != nil {
			return err
		}
	}
	if p.WeeklyHours < 1 || p.WeeklyHours > MaxWeeklyHours {
		return fmt.Errorf("weekly_hours must be a whole number of hours from 1 to %d, got %d", MaxWeeklyHours, p.WeeklyHours)
	}
	if _, ok := parseUnit(string(p.TotalTimeline.Unit)); !ok {
		return fmt.Errorf("total_timeline.unit must be weeks, months or years, got %q", p.TotalTimeline.Unit)
	}
	if p.TotalTimeline.Value < 1 {
		return fmt.Errorf("total_timeline.value must be a positive whole number, got %d", p.TotalTimeline.Value)
	}
	if w := p.TotalTimeline.Weeks(); w < MinTimelineWeeks || w > MaxTimelineWeeks {
		return fmt.Errorf("total_timeline must be from %d weeks to 10 years, got %s", MinTimelineWeeks, p.TotalTimeline)
	}
	for _, l := range []struct {
		name  string
		items []string
	}{{"existing_skills", p.ExistingSkills}, {"missing_skills", p.MissingSkills}, {"constraints", p.Constraints}} {
		if len(l.items) > MaxListItems {
			return fmt.Errorf("%s has %d items; the limit is %d", l.name, len(l.items), MaxListItems)
		}
		for i, s := range l.items {
			if err := checkText(fmt.Sprintf("%s[%d]", l.name, i), s, maxShortText, true); err != nil {
				return err
			}
		}
	}
	return checkText("additional_context", p.AdditionalContext, maxContext, false)
}

func checkText(name, s string, limit int, required bool) error {
	switch {
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", name)
	case required && strings.TrimSpace(s) == "":
		return fmt.Errorf("%s must not be empty", name)
	case utf8.RuneCountInString(s) > limit:
		return fmt.Errorf("%s is %d characters; the limit is %d", name, utf8.RuneCountInString(s), limit)
	}
	return nil
}

// requiredFields must be present in a profile file.
var requiredFields = []string{"academic_program", "field_of_study", "research_area", "weekly_hours", "total_timeline"}

// ParseProfile reads a profile in YAML or JSON (by name's extension: .json
// is JSON, anything else YAML, of which JSON is a subset). Decoding is
// strict: an unknown field, a value of the wrong type or a missing
// required field is an error naming the field. The profile is normalized
// and validated.
func ParseProfile(name string, r io.Reader) (UserProfile, error) {
	var p UserProfile
	ext := filepath.Ext(name)
	// The name is the user's file's, shown in one-line errors.
	name = input.Show(name)
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return p, fmt.Errorf("profile %s: %w", name, err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return p, fmt.Errorf("profile %s is empty", name)
	}
	if !strings.EqualFold(ext, ".json") {
		// YAML is read into plain values and re-encoded as JSON, so that
		// both formats go through the same strict decoder and report
		// errors the same way.
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			msg := strings.TrimPrefix(oneLine(err.Error()), "yaml: ")
			return p, fmt.Errorf("profile %s: %s", name, strings.TrimPrefix(msg, "unmarshal errors: "))
		}
		if data, err = json.Marshal(v); err != nil {
			return p, fmt.Errorf("profile %s: the profile must be a mapping of field names to values", name)
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return p, fmt.Errorf("profile %s: %s", name, decodeError(err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("profile %s: %s", name, decodeError(err))
	}
	for _, f := range requiredFields {
		if _, ok := fields[f]; !ok {
			return p, fmt.Errorf("profile %s: %s is missing", name, f)
		}
	}
	p.Normalize()
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("profile %s: %w", name, err)
	}
	return p, nil
}

// decodeError rewords a JSON decoding error so that it names the field.
func decodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return "the profile must be a mapping of field names to values"
		}
		want := map[string]string{"int": "a whole number", "string": "text", "[]string": "a list of texts"}[te.Type.String()]
		switch field {
		case "existing_skills", "missing_skills", "constraints":
			want = "a list of texts"
		}
		if want == "" {
			want = "a mapping with value and unit"
		}
		return fmt.Sprintf("%s must be %s, got %s", field, want, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, se.Error())
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		if near := nearest(strings.Trim(f, `"`), profileFields()); near != "" {
			return fmt.Sprintf("unknown field %s (did you mean %q?)", f, near)
		}
		return fmt.Sprintf("unknown field %s (the fields are %s)", f, strings.Join(profileFields(), ", "))
	}
	return msg
}

// profileFields lists the fields of a profile file.
func profileFields() []string {
	return []string{"academic_program", "field_of_study", "research_area", "weekly_hours", "total_timeline",
		"existing_skills", "missing_skills", "constraints", "additional_context"}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// nearest returns the name in names closest to s if it is within two
// edits, else "".
func nearest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}
