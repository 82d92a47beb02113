package assess

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// MockResponders returns deterministic answers for each of the pipeline's
// agents, in the formats the prompts ask for, flavoured by the idea.
//
// They behave like the roles they stand in for, so mock runs exercise every
// path of the loop:
//   - the analyst writes every section at the length asked for, cites only
//     the sources it was given, and in its first draft states one growth
//     figure as fact with nothing behind it; a revision addresses the
//     reviewer's issues and restates the claims the fact checker flagged as
//     estimates;
//   - the reviewer approves from iteration 1 when lenient, 2 when normal and
//     3 when strict (and rejects an analysis that is too short or misses a
//     section);
//   - the fact checker rejects an analysis with a figure stated as fact
//     that no source backs;
//   - the judge grades from the idea, better evidence for cited sources.
func MockResponders() map[string]func(*llm.Request) (any, error) {
	return map[string]func(*llm.Request) (any, error){
		agentAnalyst:     mockAnalyst,
		agentReviewer:    mockReviewer,
		agentFactChecker: mockFactChecker,
		agentJudge:       mockJudge,
		agentSynthesizer: mockSynthesizer,
	}
}

func mockHash(parts ...string) uint32 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

func mockAnalyst(req *llm.Request) (any, error) {
	switch in := req.Input.(type) {
	case researchInput:
		return mockPlan(in), nil
	case analystInput:
		return mockAnalysis(in), nil
	}
	return nil, fmt.Errorf("unexpected input %T", req.Input)
}

func mockPlan(in researchInput) researchPlan {
	topic := mock.Short(in.Idea, 60)
	all := []plannedQuery{
		{topic + " market size and growth", "size the market"},
		{topic + " competitors and pricing", "map the competition"},
		{topic + " customer pain points survey", "evidence of the problem"},
		{topic + " regulation and compliance", "regulatory exposure"},
	}
	return researchPlan{Queries: all[:min(in.Max, len(all))]}
}

// Figures of the mock analysis, derived from the idea.
type mockFigures struct {
	customers, price, growth, cac, margin int
}

func figuresOf(idea string) mockFigures {
	h := mockHash(idea)
	return mockFigures{
		customers: 20_000 + int(h%80)*1_000,
		price:     19 + int(h>>8%18)*10,
		growth:    18 + int(h>>16%30),
		cac:       60 + int(h>>4%12)*20,
		margin:    55 + int(h>>12%30),
	}
}

var (
	mockSubjects = []string{"Early adopters", "Procurement teams", "Small operators", "Budget owners", "Frequent buyers", "First-time customers"}
	mockClaims   = []string{
		"care most about reliability and a predictable monthly cost",
		"switch only when the saving is obvious within the first month",
		"ask for references from peers before they commit",
		"value a named contact more than a long feature list",
		"compare any offer with the cost of doing nothing",
		"expect onboarding to take an afternoon, not a quarter",
	}
)

// mockAnalysis writes a complete analysis of in.Idea of at least
// in.MinWords words.
func mockAnalysis(in analystInput) string {
	f := figuresOf(in.Idea)
	topic := mock.Short(in.Idea, 80)
	cite := func(i int) string {
		if len(in.Sources) == 0 {
			return ""
		}
		return fmt.Sprintf(" [%d]", in.Sources[i%len(in.Sources)].N)
	}
	revenue := f.customers * f.price * 12
	som := revenue / 20
	body := map[string][]string{
		"What We Do":   {fmt.Sprintf("%s. We sell it as a subscription to the people who feel the problem every week, and we make money when they keep using it.", topic)},
		"The Problem":  {fmt.Sprintf("Today the people behind %q patch the problem together with spreadsheets, favours and one-off purchases. The cost is hidden in wasted hours and in decisions made too late.", topic)},
		"The Solution": {"A single service that removes the workaround: one place to start, a fixed monthly price, and someone accountable when something goes wrong."},
		"Market Size": {
			fmt.Sprintf("We estimate %d potential customers in our first markets%s. At an assumed $%d a month, the bottom-up total addressable market is roughly $%s a year (customers × price × 12).", f.customers, cite(0), f.price, thousands(revenue)),
			fmt.Sprintf("We assume we can serve about 5%% of it within three years, an obtainable market of roughly $%s a year.", thousands(som)),
		},
		"Business Model":     {fmt.Sprintf("Subscription at an assumed $%d a month, with an estimated gross margin of %d%% once volumes are reached. We estimate customer acquisition cost at $%d through direct sales to the first segment, paid back within the first year on our assumptions.", f.price, f.margin, f.cac)},
		"Why Now":            {growthClaim(in, f, cite(1)), "Buyers have grown used to subscriptions for things they used to own, and the tools to run such a service cheaply now exist."},
		"Competition & Moat": {fmt.Sprintf("Incumbents sell the same outcome as one-off purchases%s; marketplaces list options but take no responsibility. Our moat is the service record we build per customer, which makes switching costly once we hold it.", cite(2))},
		"Key Risks & Mitigation": {
			"Demand risk: customers may prefer to keep buying outright. Mitigation: a pilot with a money-back guarantee before any scale-up.",
			"Operational risk: servicing costs may exceed plan. Mitigation: price the first contracts with a margin buffer and review them monthly.",
		},
		"Milestones": {"Month 6: 50 paying customers as a target, proving willingness to pay. Month 12: a target of 300 customers and positive contribution margin. Month 24: a second market, planned once retention holds above the target of 85%."},
	}
	var refs []string
	if len(in.Sources) > 0 {
		for i := 0; i < min(3, len(in.Sources)); i++ {
			s := in.Sources[i]
			refs = append(refs, fmt.Sprintf("- [%d] %s — %s", s.N, s.Title, s.URL))
		}
	} else {
		refs = []string{
			"- Industry association reports on the segment (no web research was run: verify the estimates above before relying on them).",
			"- Public filings and price lists of the incumbents named under Competition & Moat.",
			"- National statistics office data on the number of potential customers.",
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "> %s\n\n# %s\n\n", MockNote, titleCase(mock.Short(in.Idea, 60)))
	if in.Previous != "" {
		fmt.Fprintf(&b, "> Revision %d.", in.Iteration)
		if fb := in.Feedback; fb != nil {
			for _, c := range fb.CriticalIssues {
				fmt.Fprintf(&b, " Addressed [%s]: %s.", c.Section, strings.TrimSuffix(c.Suggestion, "."))
			}
		}
		if len(in.FactIssues) > 0 {
			fmt.Fprintf(&b, " Restated %d flagged claim(s) as estimates.", len(in.FactIssues))
		}
		b.WriteString("\n\n")
	}
	// Pad the sections round-robin until the analysis is long enough.
	render := func() string {
		var s strings.Builder
		for _, sec := range in.Sections {
			if sec.Title == "References" {
				continue
			}
			fmt.Fprintf(&s, "## %s\n\n%s\n\n", sec.Title, strings.Join(body[sec.Title], "\n\n"))
		}
		fmt.Fprintf(&s, "## References\n\n%s\n", strings.Join(refs, "\n"))
		return s.String()
	}
	words := CountWords(b.String() + render())
	for i := 0; words < in.MinWords+10; i++ {
		sec := in.Sections[i%len(in.Sections)].Title
		if sec == "References" || len(body[sec]) == 0 {
			continue
		}
		h := mockHash(in.Idea, strconv.Itoa(i))
		sentence := fmt.Sprintf("%s weighing %s %s.", mockSubjects[h%uint32(len(mockSubjects))], firstWords(in.Idea, 6), mockClaims[(h>>8)%uint32(len(mockClaims))])
		last := len(body[sec]) - 1
		body[sec][last] += " " + sentence
		words += CountWords(sentence)
	}
	b.WriteString(render())
	return b.String()
}

// growthClaim is the Why Now figure: stated as fact in a first draft
// without sources, cited when there are sources, restated as an estimate
// once the fact checker flagged it.
func growthClaim(in analystInput, f mockFigures, cite string) string {
	switch {
	case cite != "":
		return fmt.Sprintf("Spending in this segment grew %d%% last year%s.", f.growth, cite)
	case len(in.FactIssues) > 0:
		return fmt.Sprintf("We estimate that spending in this segment grows about %d%% a year, an assumption to verify with primary research.", f.growth)
	}
	return fmt.Sprintf("Spending in this segment grew %d%% last year.", f.growth)
}

// firstWords returns the first n words of s, lower-cased.
func firstWords(s string, n int) string {
	w := strings.Fields(strings.ToLower(s))
	return strings.Join(w[:min(n, len(w))], " ")
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func titleCase(s string) string {
	w := strings.Fields(s)
	for i, x := range w {
		r := []rune(x)
		r[0] = unicode.ToUpper(r[0])
		w[i] = string(r)
	}
	return strings.Join(w, " ")
}

var mockIssues = []Issue{
	{"Market Size", "The obtainable market rests on a single adoption assumption", "Give a low and a high adoption case and show how the obtainable market changes"},
	{"Competition & Moat", "The moat is asserted rather than shown", "Name what a well-funded competitor could not copy within a year"},
	{"Business Model", "Customer acquisition cost is not derived from a channel", "Derive acquisition cost from one named channel and its conversion rates"},
	{"Key Risks & Mitigation", "The risks omit the dependency on a few suppliers", "Add supplier concentration as a risk with a mitigation"},
}

func mockReviewer(req *llm.Request) (any, error) {
	in, ok := req.Input.(reviewInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	topic := mock.Short(in.Idea, 60)
	need := map[string]int{Lenient: 1, Normal: 2, Strict: 3}[in.Strictness]
	fb := Feedback{
		Strengths:        []string{"The Market Size section shows its arithmetic", fmt.Sprintf("The risks are specific to %q", topic)},
		Improvements:     []Improvement{{"Milestones", "Tie each milestone to the evidence it will produce"}},
		MinorSuggestions: []string{"Shorten the opening paragraph of What We Do"},
	}
	var problems []string
	if in.Words < in.MinWords {
		problems = append(problems, fmt.Sprintf("%d words, %d required", in.Words, in.MinWords))
	}
	if m := MissingSections(in.Analysis); len(m) > 0 {
		problems = append(problems, "missing "+strings.Join(m, ", "))
	}
	if len(problems) == 0 && in.Iteration >= need {
		fb.IterationRecommendation = Approve
		fb.OverallAssessment = fmt.Sprintf("MOCK DATA — The analysis of %q is complete and candid about its risks; it is ready for the committee.", topic)
		fb.IterationReason = fmt.Sprintf("No critical issue remains at %s strictness.", in.Strictness)
		fb.CriticalIssues = []Issue{}
		return fb, nil
	}
	fb.IterationRecommendation = Reject
	fb.OverallAssessment = fmt.Sprintf("MOCK DATA — The analysis of %q is promising but not yet ready for the committee.", topic)
	h := mockHash(in.Idea, strconv.Itoa(in.Iteration))
	fb.CriticalIssues = []Issue{mockIssues[h%uint32(len(mockIssues))]}
	for _, p := range problems {
		fb.CriticalIssues = append(fb.CriticalIssues, Issue{"Structure", p, "Complete the analysis as the constraints ask"})
	}
	fb.IterationReason = fmt.Sprintf("%d critical issue(s) remain; %s strictness requires them resolved.", len(fb.CriticalIssues), in.Strictness)
	return fb, nil
}

var (
	citationRE = regexp.MustCompile(`\[(\d+)\]`)
	sentenceRE = regexp.MustCompile(`[.!?](?:\s+|$)`)
	hedges     = []string{"estimate", "assum", "target", "plan", "illustrative", "projected", "approximately", "mock data"}
)

func mockFactChecker(req *llm.Request) (any, error) {
	in, ok := req.Input.(factCheckInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	byN := map[int]source{}
	for _, s := range in.Sources {
		byN[s.N] = s
	}
	// Figures that are part of the idea itself ("3D printing") are not
	// claims.
	ideaWords := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(in.Idea)) {
		ideaWords[strings.Trim(w, ".,;:!?\"'()")] = true
	}
	hasFigure := func(sent string) bool {
		for _, w := range strings.Fields(strings.ToLower(citationRE.ReplaceAllString(sent, ""))) {
			if strings.ContainsFunc(w, unicode.IsDigit) && !ideaWords[strings.Trim(w, ".,;:!?\"'()")] {
				return true
			}
		}
		return false
	}
	fc := FactCheck{Verdict: Approve}
	section := "Introduction"
	for _, line := range strings.Split(in.Analysis, "\n") {
		if hs := Headings(line); len(hs) == 1 {
			section = hs[0]
			continue
		}
		if section == "References" || strings.HasPrefix(line, ">") {
			continue
		}
		for _, sent := range sentences(line) {
			if !hasFigure(sent) || len(fc.Claims) >= 8 {
				continue
			}
			c := Claim{Claim: sent, Section: section, Status: Unsupported, Note: "stated as fact; no source backs it"}
			if m := citationRE.FindStringSubmatch(sent); m != nil {
				n, _ := strconv.Atoi(m[1])
				if s, ok := byN[n]; ok {
					c.Status, c.Source, c.Note = Supported, s.URL, "backed by the cited source"
				}
			}
			lower := strings.ToLower(sent)
			for _, h := range hedges {
				if c.Status == Unsupported && strings.Contains(lower, h) {
					c.Status, c.Note = Unverifiable, "presented as an estimate or assumption"
				}
			}
			if c.Status == Unsupported {
				fc.Verdict = Reject
			}
			fc.Claims = append(fc.Claims, c)
		}
	}
	if len(fc.Claims) == 0 {
		fc.Claims = []Claim{{Claim: "The analysis states no figures", Section: "Market Size", Status: Unverifiable, Note: "nothing to check"}}
	}
	problems := len(fc.Problems())
	fc.Summary = fmt.Sprintf("MOCK DATA — %d claims checked in iteration %d; %d unsupported.", len(fc.Claims), in.Iteration, problems)
	return fc, nil
}

// sentences splits a line of prose at sentence ends.
func sentences(line string) []string {
	var out []string
	for _, s := range sentenceRE.Split(line, -1) {
		if s = strings.TrimSpace(strings.TrimLeft(s, "-*• ")); s != "" {
			out = append(out, s+".")
		}
	}
	return out
}

var gradePhrases = map[string]string{
	"A": "a clear strength, well argued in the analysis",
	"B": "solid, with minor gaps",
	"C": "adequate, but the analysis leaves real doubts",
	"D": "weak: the analysis shows more problems than answers",
}

func mockJudge(req *llm.Request) (any, error) {
	in, ok := req.Input.(judgeInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	topic := mock.Short(in.Idea, 60)
	letters := []string{"A", "B", "C", "D"}
	grade := func(key, title string) Grade {
		i := int(mockHash(in.Idea, key) % 4)
		if key == "evidence_quality" && len(in.Sources) > 0 && i > 0 {
			i--
		}
		l := letters[i]
		return Grade{Grade: l, Rationale: fmt.Sprintf("%s for %q is %s.", title, topic, gradePhrases[l])}
	}
	var g Grades
	for _, c := range Criteria {
		v := grade(c.Key, c.Title)
		switch c.Key {
		case "market_potential":
			g.MarketPotential = v
		case "competitive_landscape":
			g.CompetitiveLandscape = v
		case "technical_feasibility":
			g.TechnicalFeasibility = v
		case "capital_requirements":
			g.CapitalRequirements = v
		case "regulatory_risks":
			g.RegulatoryRisks = v
		case "execution_difficulty":
			g.ExecutionDifficulty = v
		case "evidence_quality":
			g.EvidenceQuality = v
		}
	}
	score, _, err := Score(g)
	if err != nil {
		return nil, err
	}
	rec := Abandon
	switch {
	case score >= 7:
		rec = Pursue
	case score >= 5:
		rec = Refine
	}
	return Judgement{Grades: g, Recommendation: rec,
		Summary: fmt.Sprintf("MOCK DATA — %q after %d iteration(s): strongest where the analysis shows its numbers, weakest where it relies on assumptions.", topic, in.Iterations)}, nil
}

func mockSynthesizer(req *llm.Request) (any, error) {
	in, ok := req.Input.(synthInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	n := Narrative{
		Overview:       fmt.Sprintf("MOCK DATA — %d ideas were judged; the leaders combine a large market with evidence that backs it.", len(in.Entries)),
		Recommendation: "Take the top idea to customer interviews this month; revisit the others once their weakest criterion has new evidence.",
	}
	weakest := map[string]int{}
	for _, e := range in.Entries {
		best, worst := extremes(e.Grades)
		weakest[worst]++
		for _, s := range in.TopSlugs {
			if s == e.Slug {
				n.Top = append(n.Top, TopPick{Slug: e.Slug, Why: fmt.Sprintf("Rank %d with %.1f/10 (grade %s): strongest on %s, weakest on %s.",
					e.Rank, e.WeightedScore, e.OverallGrade, strings.ToLower(best), strings.ToLower(worst))})
			}
		}
	}
	for _, c := range Criteria {
		if k := weakest[c.Title]; k > 0 {
			n.Patterns = append(n.Patterns, fmt.Sprintf("%s is the weakest criterion of %d idea(s).", c.Title, k))
		}
	}
	return n, nil
}

// extremes returns the titles of the best and the worst graded criteria.
func extremes(g Grades) (best, worst string) {
	bp, wp := -1.0, 5.0
	for _, c := range Criteria {
		gr, _ := g.ByKey(c.Key)
		p, _ := Points(gr.Grade)
		if p > bp {
			best, bp = c.Title, p
		}
		if p < wp {
			worst, wp = c.Title, p
		}
	}
	return best, worst
}
