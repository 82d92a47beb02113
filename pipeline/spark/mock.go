package spark

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// MockResponders returns deterministic answers for each of the pipeline's
// agents, flavoured by the topic and context, for the mock provider. They
// answer exactly what the prompt asks (one item per index) so that mock runs
// exercise the same validation as live ones.
func MockResponders() map[string]func(*llm.Request) (any, error) {
	return map[string]func(*llm.Request) (any, error){
		agentGenerate: mockGenerate,
		agentEvaluate: mockEvaluate,
		agentMultiDim: mockMultiDim,
		agentAdvocate: mockAdvocate,
		agentSkeptic:  mockSkeptic,
		agentInfer:    mockInfer,
		agentImprove:  mockImprove,
	}
}

var mockIdeaShapes = []struct{ title, desc string }{
	{"Neighbourhood %s Hubs", "Small shared spaces where residents learn and practise %s together, run by volunteers with a modest municipal grant."},
	{"Open %s Toolkit", "A free, openly licensed kit of guides, templates and sensors that lets any group start with %s in a weekend."},
	{"%s Apprenticeship Network", "Pairs newcomers with experienced practitioners of %s for twelve-week paid placements funded by local businesses."},
	{"Modular %s Kits", "Standardised, flat-packed modules for %s that can be assembled without tools and scaled one unit at a time."},
	{"%s Data Commons", "A shared, privacy-preserving dataset about %s that schools, councils and startups can query to plan better."},
	{"Subscription %s Service", "A monthly service that delivers everything needed for %s, priced on a sliding scale so everyone can join."},
	{"Gamified %s Challenge", "A season-long challenge that rewards progress in %s with badges, local prizes and public leaderboards."},
	{"%s Micro-Grants", "Small grants of a few hundred dollars, decided by residents, that seed grassroots projects in %s."},
	{"Mobile %s Lab", "A converted van that brings hands-on %s workshops to schools and neighbourhoods that lack facilities."},
	{"%s Impact Bonds", "Outcome-based financing where investors fund %s programmes and are repaid only when measured results are met."},
	{"Peer-Led %s Circles", "Self-organising groups of eight that meet weekly to tackle %s problems with a facilitator guide."},
	{"%s Marketplace", "An online marketplace that connects people who need help with %s to vetted local providers."},
}

func mockTopic(topic string) string {
	words := strings.Fields(topic)
	if len(words) > 4 {
		words = words[:4]
	}
	small := map[string]bool{"a": true, "an": true, "and": true, "for": true, "in": true, "of": true, "on": true, "the": true, "to": true}
	for i, w := range words {
		if i > 0 && small[w] {
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}

func mockGenerate(req *llm.Request) (any, error) {
	in, ok := req.Input.(generateInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	t := mockTopic(in.Topic)
	lower := strings.Join(strings.Fields(in.Topic), " ")
	start := int(mock.Hash(in.Topic, in.Context) % uint32(len(mockIdeaShapes)))
	out := ideaList{}
	for i := 0; i < in.N; i++ {
		s := mockIdeaShapes[(start+i)%len(mockIdeaShapes)]
		desc := fmt.Sprintf(s.desc, lower)
		if in.Context != "" {
			desc += " Within the brief: " + strings.TrimSuffix(in.Context, ".") + "."
		}
		title := fmt.Sprintf(s.title, t)
		if i >= len(mockIdeaShapes) {
			title += fmt.Sprintf(" (variant %d)", i/len(mockIdeaShapes)+1)
		}
		if len(in.SeedIdeas) > 0 {
			// A remix: each idea carries one of the kept ideas further.
			seed := seedTitle(in.SeedIdeas[i%len(in.SeedIdeas)])
			title += " × " + seed
			desc += fmt.Sprintf(" It builds on the kept idea %q, taking it to a new audience.", seed)
		}
		out.Ideas = append(out.Ideas, Idea{Title: title, Description: desc})
	}
	return out, nil
}

const refinedPrefix = "Refined "

// mockScore gives an idea a stable score between 4.0 and 8.4; a refined
// idea scores 0.8-1.5 higher than its original.
func mockScore(topic string, idea Idea) float64 {
	base := strings.TrimPrefix(idea.Title, refinedPrefix)
	score := 4 + float64(mock.Hash(topic, base)%45)/10
	if strings.HasPrefix(idea.Title, refinedPrefix) {
		score += 0.8 + float64(mock.Hash(base)%8)/10
	}
	return min(round2(score), 10)
}

func mockEvaluate(req *llm.Request) (any, error) {
	in, ok := req.Input.(ideasInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	out := evaluations{}
	for i, idea := range in.Ideas {
		s := mockScore(in.Topic, idea)
		out.Evaluations = append(out.Evaluations, Evaluation{
			Index:       i,
			Score:       s,
			Critique:    fmt.Sprintf("%s is a plausible answer to %q; its feasibility depends on securing early partners.", idea.Title, in.Topic),
			Strengths:   []string{"Clear target audience", "Can start small and grow"},
			Weaknesses:  []string{"Funding beyond the pilot is uncertain"},
			Suggestions: []string{"Run a three-month pilot with one partner and measure uptake"},
		})
	}
	return out, nil
}

func mockMultiDim(req *llm.Request) (any, error) {
	in, ok := req.Input.(ideasInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	out := multiDims{}
	for i, idea := range in.Ideas {
		s := mockScore(in.Topic, idea)
		d := func(salt string) float64 {
			return min(max(round2(s-1.5+float64(mock.Hash(idea.Title, salt)%31)/10), 0), 10)
		}
		out.Evaluations = append(out.Evaluations, multiDimItem{
			Index: i,
			Scores: Dimensions{
				Innovation: d("i"), Feasibility: d("f"), Impact: d("m"), Scalability: d("s"),
				Sustainability: d("u"), CostEffectiveness: d("c"), RiskAssessment: d("r"),
			},
			Rationale: "Balanced profile; strongest on impact, weakest on sustainability.",
		})
	}
	return out, nil
}

func reviewItems(req *llm.Request) (reviewInput, error) {
	in, ok := req.Input.(reviewInput)
	if !ok {
		return in, fmt.Errorf("unexpected input %T", req.Input)
	}
	return in, nil
}

func mockAdvocate(req *llm.Request) (any, error) {
	in, err := reviewItems(req)
	if err != nil {
		return nil, err
	}
	out := advocacies{}
	for i := range in.Items {
		out.Advocacies = append(out.Advocacies, Advocacy{
			Index:              i,
			Strengths:          []string{"Directly serves people affected by " + strings.ToLower(mockTopic(in.Topic)), "Low cost to pilot"},
			Opportunities:      []string{"Partnerships with schools and local councils", "Reusable playbook for other cities"},
			AddressingConcerns: []string{"Start with volunteers and a single site to keep funding risk small"},
		})
	}
	return out, nil
}

func mockSkeptic(req *llm.Request) (any, error) {
	in, err := reviewItems(req)
	if err != nil {
		return nil, err
	}
	out := skepticisms{}
	for i := range in.Items {
		out.Skepticisms = append(out.Skepticisms, Skepticism{
			Index:                   i,
			CriticalFlaws:           []string{},
			RisksAndChallenges:      []string{"Volunteer fatigue after the first year", "Competing local initiatives"},
			QuestionableAssumptions: []string{"That demand seen in surveys turns into participation"},
			MissingConsiderations:   []string{"Accessibility for people with disabilities", "Long-term maintenance costs"},
		})
	}
	return out, nil
}

func mockInfer(req *llm.Request) (any, error) {
	in, err := reviewItems(req)
	if err != nil {
		return nil, err
	}
	out := inferences{}
	for i := range in.Items {
		var extra Inference
		switch in.InferenceType {
		case CausalChain:
			extra.CausalLinks = []CausalLink{
				{Cause: "The idea lowers the cost of taking part", Effect: "More people take part"},
				{Cause: "More people take part", Effect: "Outcomes for the topic improve"},
			}
		case ConstraintSatisfaction:
			extra.Constraints = []ConstraintCheck{
				{Constraint: "Low cost", Met: true, Explanation: "It reuses what exists."},
				{Constraint: "Scalable", Met: false, Explanation: "It depends on local volunteers."},
			}
		case ImplicationAnalysis:
			extra.Implications = []string{"Participation grows", "Demand for volunteers grows with it"}
		}
		out.Inferences = append(out.Inferences, Inference{
			CausalLinks: extra.CausalLinks, Constraints: extra.Constraints, Implications: extra.Implications,
			Index: i,
			InferenceChain: []string{
				"The idea lowers the cost of taking part.",
				"Lower cost raises participation among those currently excluded.",
				"Higher participation improves outcomes for the topic.",
			},
			Conclusion:     "The idea is sound if participation can be sustained past the pilot.",
			Confidence:     0.72,
			Contradictions: []string{},
			Improvements:   []string{"Add a retention mechanism such as peer mentoring"},
		})
	}
	return out, nil
}

func mockImprove(req *llm.Request) (any, error) {
	in, ok := req.Input.(improveInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	out := improvements{}
	for i, it := range in.Items {
		title, desc, _ := strings.Cut(it.Idea, ": ")
		out.Improvements = append(out.Improvements, Improvement{
			Index:           i,
			Title:           refinedPrefix + strings.TrimPrefix(title, refinedPrefix),
			Description:     desc + " A single-site pilot with measured uptake comes first, accessibility is designed in, and peer mentors keep volunteers engaged beyond the first year.",
			KeyImprovements: []string{"Pilot before scaling", "Accessibility built in", "Retention through peer mentoring"},
		})
	}
	return out, nil
}

// seedTitle is a seed idea's title: the text before ": ", without the
// "Refined " of an improved idea, at most 60 characters.
func seedTitle(s string) string {
	title, _, _ := strings.Cut(s, ": ")
	title = strings.TrimPrefix(strings.TrimSpace(title), refinedPrefix)
	if r := []rune(title); len(r) > 60 {
		title = string(r[:59]) + "…"
	}
	return title
}
