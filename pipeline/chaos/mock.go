package chaos

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// MockResponders returns deterministic answers for each of the pipeline's
// agents, in the formats the prompts ask for. From the second iteration on,
// track B repeats one remembered idea under a new name, as models do despite
// instructions, so that mock runs show the memory rejecting it.
func MockResponders() map[string]func(*llm.Request) (any, error) {
	return map[string]func(*llm.Request) (any, error){
		agentChaos:    mockChaos,
		agentCreative: mockCreative,
		agentRefine:   mockRefine,
		agentJudge:    mockJudge,
		agentCompare:  mockCompare,
		agentEvolve:   mockEvolve,
	}
}

func shortPrompt(p string) string {
	w := strings.Fields(p)
	if len(w) > 6 {
		w = w[:6]
	}
	return strings.Join(w, " ")
}

func mockChaos(req *llm.Request) (any, error) {
	in, ok := req.Input.(chaosInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	var b strings.Builder
	for i, s := range in.Seeds {
		fmt.Fprintf(&b, "%d. %s: what if %q worked the way %s do, in cycles and hand-offs rather than one-off fixes?\n", i+1, s, shortPrompt(in.Prompt), s)
	}
	return b.String(), nil
}

var (
	mockAdjectives = []string{"Tidal", "Folding", "Swarm", "Lantern", "Mycelial", "Relay", "Mosaic", "Harbour", "Orbit", "Compost", "Echo", "Quilted", "Glacier", "Beacon", "Kite", "Honeycomb"}
	mockNouns      = []string{"Exchange", "Circles", "Ledger", "Kitchens", "Routes", "Lockers", "Guild", "Market", "Atlas", "Swaps", "Studio", "Network", "Commons", "Depot", "Clinic", "Pantry"}
	ideaName       = regexp.MustCompile(`(?m)^\s*\d+\.\s*\*\*(.+?)\*\*`)
)

func mockCreative(req *llm.Request) (any, error) {
	in, ok := req.Input.(creativeInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	var b strings.Builder
	// A code from the chaos text keeps names of different runs apart, as a
	// model's ideas would differ with different tangents.
	code := mock.Hash(in.Chaos) % 900
	for i := 0; i < in.N; i++ {
		h := mock.Hash(in.Prompt, in.Chaos, in.Track, fmt.Sprint(i))
		name := fmt.Sprintf("%s %s %d%s%d", mockAdjectives[h%16], mockNouns[(h>>4)%16], 100+code, strings.ToUpper(in.Track), i+1)
		if i == 0 && in.Track == "b" && len(in.Remembered) > 0 {
			name = in.Remembered[0] + " Revisited"
		}
		fmt.Fprintf(&b, "%d. **%s**: a %s take on %q that borrows from the tangents; it starts small in one neighbourhood and spreads by word of mouth.\n", i+1, name, strings.Split(in.Style, ",")[0], shortPrompt(in.Prompt))
	}
	return b.String(), nil
}

func mockRefine(req *llm.Request) (any, error) {
	in, ok := req.Input.(refineInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	var b strings.Builder
	for i, m := range ideaName.FindAllStringSubmatch(in.Ideas, -1) {
		h := mock.Hash(m[1])
		fmt.Fprintf(&b, "%d. **%s** — originality %d/10, feasibility %d/10, impact %d/10, substance %d/10. Refinement: name one owner and one measurable first milestone.\n",
			i+1, m[1], 4+h%6, 4+(h>>3)%6, 4+(h>>6)%6, 4+(h>>9)%6)
	}
	return b.String(), nil
}

func mockQuality(name string) float64 {
	if strings.HasSuffix(name, " Revisited") {
		return 9
	}
	return 4 + float64(mock.Hash(name)%60)/10
}

func mockJudge(req *llm.Request) (any, error) {
	in, ok := req.Input.(judgeInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	j := Judgement{
		AcceptedIdeas: []AcceptedIdea{}, RejectedIdeas: []RejectedIdea{},
		Synthesis:           fmt.Sprintf("The strongest ideas for %q pair a small, local start with a mechanism that spreads on its own.", shortPrompt(in.Prompt)),
		TopRecommendations:  []string{"Pilot the top idea in one neighbourhood for eight weeks", "Recruit one partner organisation before launch"},
		StrategicInsights:   []string{"Ideas that reuse existing routines need the least persuasion"},
		UnresolvedQuestions: []string{"Who maintains the idea after the pilot ends?"},
	}
	for _, m := range ideaName.FindAllStringSubmatch(in.RefinementA+"\n"+in.RefinementB, -1) {
		name, q := m[1], mockQuality(m[1])
		if q >= in.Threshold {
			h := mock.Hash(name)
			j.AcceptedIdeas = append(j.AcceptedIdeas, AcceptedIdea{
				IdeaName: name, QualityScore: q,
				FeasibilityScore: float64(5 + h%5), ImpactScore: float64(5 + (h>>3)%5), OriginalityScore: float64(5 + (h>>6)%5),
				KeyPoints:          []string{name + " pilots in one neighbourhood", name + " measures uptake monthly"},
				ImplementationPath: "Pilot, measure, then expand to three more sites.",
				RequiredResources:  []string{"two volunteers", "a small budget"},
				SuccessMetrics:     []string{"weekly participants", "repeat participation rate"},
				NextSteps:          []string{"find a pilot site"},
			})
		} else {
			j.RejectedIdeas = append(j.RejectedIdeas, RejectedIdea{IdeaName: name, RejectionReason: "too vague to act on", QualityScore: q, FatalFlaw: "no clear owner"})
		}
	}
	return j, nil
}

func mockCompare(req *llm.Request) (any, error) {
	in, ok := req.Input.(compareInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	out := comparisons{}
	for i, p := range in.Pairs {
		w := "a"
		if mock.Hash(p.A) < mock.Hash(p.B) {
			w = "b"
		}
		out.Results = append(out.Results, comparison{Pair: i, Winner: w, Reason: "clearer first step"})
	}
	return out, nil
}

func mockEvolve(req *llm.Request) (any, error) {
	in, ok := req.Input.(evolveInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	var b strings.Builder
	for i := 0; i < in.N; i++ {
		a := strings.SplitN(in.Parents[i%len(in.Parents)], " (", 2)[0]
		c := strings.SplitN(in.Parents[(i+1)%len(in.Parents)], " (", 2)[0]
		fmt.Fprintf(&b, "%d. **Hybrid %d: %s × %s**: combines the first's local start with the second's way of spreading.\n", i+1, i+1, a, c)
	}
	return b.String(), nil
}
