package eval

import "math"

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson returns the 95% Wilson score interval of a proportion p observed
// over n trials (p may be fractional, as a win rate that counts ties as
// half a win is). With no trials it is [0, 1]: nothing is known.
func Wilson(p float64, n int) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	p = math.Min(1, math.Max(0, p))
	nf := float64(n)
	z2 := z95 * z95
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := z95 * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

// Outcome is the result of one topic for the pipeline: it won, lost or
// tied against the baseline.
type Outcome string

// The outcomes of a topic.
const (
	Win  Outcome = "win"
	Loss Outcome = "loss"
	Tie  Outcome = "tie"
)

// Combine turns the judge's two verdicts on one topic into its outcome:
// ab is the verdict with the pipeline's answer shown as A, ba the one with
// the baseline's shown as A. Each verdict is "A", "B" or "tie". The
// outcome is a win or a loss only when both orders agree on it; any
// disagreement between the orders is a tie. consistent reports whether the
// two orders named the same answer (or both a tie).
func Combine(ab, ba string) (o Outcome, consistent bool) {
	first, second := fromPipeline(ab, "A"), fromPipeline(ba, "B")
	if first != second {
		return Tie, false
	}
	return first, true
}

// fromPipeline is a verdict seen from the pipeline's side, when the
// pipeline's answer was shown as label.
func fromPipeline(verdict, label string) Outcome {
	switch verdict {
	case "tie":
		return Tie
	case label:
		return Win
	}
	return Loss
}

// Tally counts outcomes.
type Tally struct {
	Wins, Losses, Ties int
	// Consistent counts the topics whose two orders agreed.
	Consistent int
}

// Add counts one judged topic.
func (t *Tally) Add(o Outcome, consistent bool) {
	switch o {
	case Win:
		t.Wins++
	case Loss:
		t.Losses++
	default:
		t.Ties++
	}
	if consistent {
		t.Consistent++
	}
}

// N is the number of judged topics.
func (t Tally) N() int { return t.Wins + t.Losses + t.Ties }

// WinRate is the share of judged topics the pipeline won, a tie counting
// half; 0 with none.
func (t Tally) WinRate() float64 {
	if t.N() == 0 {
		return 0
	}
	return (float64(t.Wins) + float64(t.Ties)/2) / float64(t.N())
}

// Consistency is the share of judged topics whose two orders agreed; 0
// with none.
func (t Tally) Consistency() float64 {
	if t.N() == 0 {
		return 0
	}
	return float64(t.Consistent) / float64(t.N())
}
