package spark

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// Each inference type has its own prompt wording and output fields, and
// the output names its type.
func TestInferenceTypes(t *testing.T) {
	wording := map[string]string{
		FullReasoning:          "in the one chain",
		CausalChain:            `"causal_links"`,
		ConstraintSatisfaction: `"constraints"`,
		ContradictionDetection: "List every conflict",
		ImplicationAnalysis:    `"implications"`,
	}
	for _, typ := range InferenceTypes {
		t.Run(typ, func(t *testing.T) {
			rec := &mock.Recorder{Next: mock.New(MockResponders())}
			res, _, err := runSpark(t, newStore(t), rec, params("urban farming", func(p *Params) {
				p.LogicalInference, p.InferenceType = true, typ
			}))
			if err != nil {
				t.Fatal(err)
			}
			reqs := rec.Of(agentInfer)
			if len(reqs) != 1 {
				t.Fatalf("%d inference calls", len(reqs))
			}
			var prompt strings.Builder
			prompt.WriteString(reqs[0].System)
			for _, m := range reqs[0].Messages {
				prompt.WriteString(m.Content)
			}
			for other, w := range wording {
				if got := strings.Contains(prompt.String(), w); got != (other == typ) {
					t.Errorf("prompt contains %q (of %s): %v", w, other, got)
				}
			}
			li := res.Candidates[0].LogicalInference
			if li == nil || li.Type != typ {
				t.Fatalf("inference %+v", li)
			}
			if (len(li.CausalLinks) > 0) != (typ == CausalChain) || (len(li.Constraints) > 0) != (typ == ConstraintSatisfaction) || (len(li.Implications) > 0) != (typ == ImplicationAnalysis) {
				t.Errorf("fields of %s: %+v", typ, li)
			}
			rep := NewReport(res, "run-1", "mock", "mock", "mock", llm.Usage{}, time.Second)
			for _, format := range []string{"detailed", "markdown"} {
				var b bytes.Buffer
				if err := rep.Write(&b, format); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), "Logical inference ("+typ) {
					t.Errorf("%s does not name %s", format, typ)
				}
				if typ == ConstraintSatisfaction && !strings.Contains(b.String(), "unmet") {
					t.Errorf("%s does not mark the unmet constraint", format)
				}
			}
		})
	}
	p := params("urban farming", func(p *Params) { p.InferenceType = "deduction" })
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "inference_type must be one of full_reasoning, causal_chain") {
		t.Fatalf("bad type: %v", err)
	}
}
