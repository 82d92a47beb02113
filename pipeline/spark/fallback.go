package spark

import "sync"

// fallbacks records the stages that failed and were replaced by the seed's
// fallback values. Every stage is one batched call, so a stage's fallback
// applies to every candidate it handled.
type fallbacks struct {
	allowed bool
	mu      sync.Mutex
	marks   []Fallback
}

// list returns the marks so far.
func (f *fallbacks) list() []Fallback {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Fallback(nil), f.marks...)
}

func (f *fallbacks) mark(stage string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.marks = append(f.marks, Fallback{Stage: stage, Reason: oneLine(err.Error())})
}

// The seed's fallback table: evaluation → score 5.0, advocacy → a generic
// positive message, skepticism → generic concerns, improvement → the
// original idea.
const fallbackScore = 5.0

func fallbackEvaluations(n int) []Evaluation {
	out := make([]Evaluation, n)
	for i := range out {
		out[i] = Evaluation{Index: i, Score: fallbackScore, Critique: "Evaluation unavailable; default score used."}
	}
	return out
}

func fallbackAdvocacy(n int) []Advocacy {
	out := make([]Advocacy, n)
	for i := range out {
		out[i] = Advocacy{Index: i, Strengths: []string{"The idea addresses the topic and may merit further exploration."}}
	}
	return out
}

func fallbackSkepticism(n int) []Skepticism {
	out := make([]Skepticism, n)
	for i := range out {
		out[i] = Skepticism{Index: i, RisksAndChallenges: []string{"Feasibility, cost and adoption have not been assessed."}}
	}
	return out
}

// fallbackImprovement keeps each top candidate's original idea.
func fallbackImprovement(ideas []Idea, top []int) []Improvement {
	out := make([]Improvement, len(top))
	for k, i := range top {
		out[k] = Improvement{Index: k, Title: ideas[i].Title, Description: ideas[i].Description}
	}
	return out
}
