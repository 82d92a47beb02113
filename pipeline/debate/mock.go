package debate

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// MockResponders returns deterministic answers for the debate's agents:
// handoffs inside the token budget, rankings that list every contribution
// once, and answers that quote the query.
func MockResponders() map[string]func(*llm.Request) (any, error) {
	return map[string]func(*llm.Request) (any, error){
		agentDirect:    asked(mockDirect),
		agentPropose:   mockPropose,
		agentReview:    mockReview,
		agentAggregate: asked(mockAggregate),
	}
}

// asked answers a request for JSON (an answer with a Format) with a value
// of its schema, and any other with answer.
func asked(answer func(*llm.Request) (any, error)) func(*llm.Request) (any, error) {
	return func(req *llm.Request) (any, error) {
		if req.Schema != nil {
			return mock.FromSchema(req.Agent, req.Schema.JSON)
		}
		return answer(req)
	}
}

func short(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		w = append(w[:n], "…")
	}
	return strings.Join(w, " ")
}

func mockDirect(req *llm.Request) (any, error) {
	in, ok := req.Input.(directInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	return fmt.Sprintf("In short: %s is best answered directly. Start from the definition, give one concrete example, and note the one caveat that matters most in practice.", quote(in.Query)), nil
}

var roleAngles = map[Role][]string{
	Drafter: {"Start from the core mechanism and state it plainly.", "Lay out the steps in the order a reader would carry them out.",
		"Show the shape of the code or the procedure before the details.", "Name the inputs, the outputs and the state carried between steps."},
	Critic: {"The most common mistake is to skip error handling at the boundaries.", "Edge cases include empty inputs, cancellation and partial failure.",
		"Claims about performance need a measurement, not an assumption.", "Beware of advice that only holds for one runtime or version."},
	Synthesizer: {"Organise the answer as concept, steps, pitfalls and a worked example.", "Recommend the simple approach by default and the advanced one when scale demands it.",
		"Make the trade-off between clarity and performance explicit.", "Close with a checklist the reader can apply immediately."},
}

func mockPropose(req *llm.Request) (any, error) {
	in, ok := req.Input.(proposeInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	angles := roleAngles[in.Role]
	var b strings.Builder
	fmt.Fprintf(&b, "Round %d on %s: ", in.Round, quote(short(in.Query, 12)))
	for i := 0; i < 3; i++ {
		for _, a := range angles {
			b.WriteString(a + " ")
		}
		if i == 0 && len(in.Peers) > 0 {
			fmt.Fprintf(&b, "Having read %d peer handoffs, I keep their agreed points and correct the rest. ", len(in.Peers))
		}
		if i == 0 && in.Sources != "" {
			b.WriteString("The web sources support the main claim. ")
		}
	}
	h := fnv.New32a()
	h.Write([]byte(in.Query + string(in.Role)))
	return map[string]any{
		"context_summary":  strings.TrimSpace(b.String()),
		"key_points":       angles[:3],
		"confidence_score": 0.6 + float64(h.Sum32()%35)/100,
	}, nil
}

func mockReview(req *llm.Request) (any, error) {
	in, ok := req.Input.(reviewInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	// Prefer contributions in a stable order by their text.
	labels := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		labels[i] = e.Label
	}
	score := func(l string) uint32 {
		for _, e := range in.Entries {
			if e.Label == l {
				h := fnv.New32a()
				h.Write([]byte(e.Text))
				return h.Sum32()
			}
		}
		return 0
	}
	for i := 1; i < len(labels); i++ {
		for j := i; j > 0 && score(labels[j]) > score(labels[j-1]); j-- {
			labels[j], labels[j-1] = labels[j-1], labels[j]
		}
	}
	return map[string]any{"ranking": labels, "reasons": "The first is the most complete and correct."}, nil
}

func mockAggregate(req *llm.Request) (any, error) {
	in, ok := req.Input.(aggregateInput)
	if !ok {
		return nil, fmt.Errorf("unexpected input %T", req.Input)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Answer to %s\n\n", quote(in.Query))
	for _, h := range in.Handoffs {
		fmt.Fprintf(&b, "- From the %s: %s\n", h.FromRole, h.KeyPoints[0])
	}
	if in.Ranking != "" {
		fmt.Fprintf(&b, "\nThe proposers ranked the contributions: %s.\n", in.Ranking)
	}
	if in.Sources != "" {
		b.WriteString("\nSources were consulted and are cited above where used.\n")
	}
	b.WriteString("\nIn practice: follow the steps in order, handle the edge cases, and measure before optimising.")
	return b.String(), nil
}

func quote(s string) string { return "\u201c" + s + "\u201d" }
