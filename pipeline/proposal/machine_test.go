package proposal

import (
	"strings"
	"testing"
)

func TestMachineRejectsInvalidTransitions(t *testing.T) {
	for _, tc := range []struct {
		path []State // valid moves first
		bad  State
	}{
		{nil, Objectives},                        // INIT → OBJECTIVES skips the interview
		{nil, Complete},                          // INIT → COMPLETE
		{[]State{Interviewing}, Objectives},      // skips problem formulation
		{[]State{Interviewing}, LitReview},       // LIT_REVIEW only from PF_START
		{[]State{Interviewing, PFStart}, PFDone}, // problem not written
		{[]State{Interviewing, PFStart, PFRevise}, LitReview},
		{[]State{Interviewing, PFStart, PFRevise, PFDone, Objectives}, DataCollection},          // skips methodology
		{[]State{Interviewing, PFStart, PFRevise, PFDone, Objectives, Methodology}, Refinement}, // refinement only after review
		{[]State{Interviewing, PFStart, PFRevise, PFDone, Objectives, Methodology, DataCollection, QualityControl, Refinement}, QualityControl},
		{[]State{Interviewing, PFStart, PFRevise, PFDone, Objectives, Methodology, DataCollection, QualityControl, Complete}, Failed},
		{[]State{Failed}, Interviewing},
	} {
		m := NewMachine(3, nil)
		for _, s := range tc.path {
			if err := m.To(s, ""); err != nil {
				t.Fatalf("valid move to %s: %v", s, err)
			}
		}
		before := m.State()
		n := len(m.History())
		err := m.To(tc.bad, "")
		if err == nil || !strings.Contains(err.Error(), "invalid transition "+string(before)+" → "+string(tc.bad)) {
			t.Errorf("%s → %s: %v", before, tc.bad, err)
		}
		if m.State() != before || len(m.History()) != n {
			t.Errorf("a refused move changed the machine: %s, %d transitions", m.State(), len(m.History()))
		}
	}
}

func TestMachineRefinementBudget(t *testing.T) {
	var logged []Transition
	m := NewMachine(1, func(tr Transition) { logged = append(logged, tr) })
	review := []State{Objectives, Methodology, DataCollection, QualityControl}
	for _, s := range append([]State{Interviewing, PFStart, LitReview, PFRevise, PFDone}, review...) {
		if err := m.To(s, "d"); err != nil {
			t.Fatal(err)
		}
	}
	if !m.CanRefine() || m.Round() != 0 {
		t.Fatal("a refinement should be allowed")
	}
	if err := m.To(Refinement, "coherence low"); err != nil {
		t.Fatal(err)
	}
	if m.Round() != 1 || m.CanRefine() {
		t.Errorf("round %d, can refine %v", m.Round(), m.CanRefine())
	}
	// From REFINEMENT to the earliest target's state: here OBJECTIVES.
	for _, s := range review {
		if err := m.To(s, ""); err != nil {
			t.Fatal(err)
		}
	}
	err := m.To(Refinement, "")
	if err == nil || !strings.Contains(err.Error(), "the 1 refinements allowed are spent") {
		t.Errorf("second refinement: %v", err)
	}
	if err := m.To(Complete, "not passed"); err != nil {
		t.Fatal(err)
	}
	h := m.History()
	if len(h) != 15 || len(logged) != 15 || h[0].From != Init || h[len(h)-1].To != Complete || h[len(h)-1].Round != 1 || h[9].Detail != "coherence low" {
		t.Errorf("history %+v", h)
	}
	for _, tr := range h {
		if tr.At.IsZero() {
			t.Error("transition without a time")
		}
	}
	if LitReview.Parent() != ProblemFormulation || PFDone.Parent() != ProblemFormulation || Objectives.Parent() != Objectives {
		t.Error("Parent")
	}
}

func TestMachineErrorFromAnyActiveState(t *testing.T) {
	for _, path := range [][]State{nil, {Interviewing, PFStart, LitReview}, {Interviewing, PFStart, PFRevise, PFDone, Objectives}} {
		m := NewMachine(0, nil)
		for _, s := range path {
			if err := m.To(s, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.To(Failed, "boom"); err != nil || m.State() != Failed {
			t.Errorf("to ERROR from %v: %v", path, err)
		}
	}
}
