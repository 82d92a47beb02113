package eval

import (
	"fmt"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// MockResponders answers the eval's agents in mock mode: the baseline
// writes a short answer naming the request, and the judge picks a side by
// a hash of the two answers, so that a mock eval has wins, losses and
// ties, always the same ones, and proves nothing.
func MockResponders() map[string]mock.Responder {
	return map[string]mock.Responder{
		"eval.baseline": func(req *llm.Request) (any, error) {
			in, ok := req.Input.(baselineInput)
			if !ok {
				return nil, fmt.Errorf("input of type %T", req.Input)
			}
			return fmt.Sprintf("# A single answer\n\nOne reply to the %s request:\n\n%s\n\nThe answer: %s.", in.Pipeline, in.Request,
				mock.Pick(in.Request, 0, "start small and measure", "work with the people affected", "reuse what exists", "test it where it is hardest")), nil
		},
		"eval.judge": func(req *llm.Request) (any, error) {
			in, ok := req.Input.(judgeInput)
			if !ok {
				return nil, fmt.Errorf("input of type %T", req.Input)
			}
			// The same pair gets the same preference in both orders,
			// except for some pairs where the mock favours position A,
			// as real judges sometimes do.
			h := mock.Hash(min(in.A, in.B), max(in.A, in.B))
			var winner string
			switch h % 5 {
			case 0, 1:
				winner = pickLonger(in)
			case 2:
				winner = pickShorter(in)
			case 3:
				winner = "tie"
			default:
				winner = "A"
			}
			return Verdict{Winner: winner, Reasons: "Mock verdict: chosen by a hash of the two answers, not by reading them."}, nil
		},
	}
}

func pickLonger(in judgeInput) string {
	if len(in.A) >= len(in.B) {
		return "A"
	}
	return "B"
}

func pickShorter(in judgeInput) string {
	if pickLonger(in) == "A" {
		return "B"
	}
	return "A"
}
