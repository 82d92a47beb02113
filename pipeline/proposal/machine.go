package proposal

import (
	"fmt"
	"time"
)

// State is a state of the proposal workflow (seed: WorkflowState). The
// four PF_ and LIT_REVIEW states are the sub-states of
// PROBLEM_FORMULATION.
type State string

// The states.
const (
	Init           State = "INIT"
	Interviewing   State = "INTERVIEWING"
	PFStart        State = "PF_START"
	LitReview      State = "LIT_REVIEW"
	PFRevise       State = "PF_REVISE"
	PFDone         State = "PF_DONE"
	Objectives     State = "OBJECTIVES"
	Methodology    State = "METHODOLOGY"
	DataCollection State = "DATA_COLLECTION"
	QualityControl State = "QUALITY_CONTROL"
	Refinement     State = "REFINEMENT"
	Complete       State = "COMPLETE"
	Failed         State = "ERROR"
)

// ProblemFormulation is the parent of the problem-formulation sub-states.
const ProblemFormulation State = "PROBLEM_FORMULATION"

// Parent returns PROBLEM_FORMULATION for its sub-states, and s for the
// others.
func (s State) Parent() State {
	switch s {
	case PFStart, LitReview, PFRevise, PFDone:
		return ProblemFormulation
	}
	return s
}

// stageState is the state where re-running a stage starts.
var stageState = map[Stage]State{StageProblem: PFStart, StageObjectives: Objectives, StageMethodology: Methodology, StageData: DataCollection}

// transitions is the machine's table: the states each state may move to.
// Any state but COMPLETE and ERROR may also move to ERROR.
var transitions = map[State][]State{
	Init:           {Interviewing},
	Interviewing:   {PFStart},
	PFStart:        {LitReview, PFRevise}, // PF_REVISE directly when the search is off
	LitReview:      {PFRevise},
	PFRevise:       {PFDone},
	PFDone:         {Objectives},
	Objectives:     {Methodology},
	Methodology:    {DataCollection},
	DataCollection: {QualityControl},
	QualityControl: {Complete, Refinement},
	Refinement:     {PFStart, Objectives, Methodology, DataCollection},
}

// Transition is one recorded move of the machine.
type Transition struct {
	From State `json:"from"`
	To   State `json:"to"`
	// Round is the refinement round: 0 for the first pass.
	Round  int       `json:"round"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// Machine is the proposal's explicit workflow state machine. A move the
// table does not allow is an error and changes nothing; so is a move to
// REFINEMENT once the refinement budget is spent. Every move is recorded.
// It is not safe for concurrent use.
type Machine struct {
	state       State
	round, max  int
	history     []Transition
	log         func(Transition)
	now         func() time.Time
	refinements int
}

// NewMachine starts a machine in INIT that allows maxRefinements moves to
// REFINEMENT. log, if not nil, sees every transition.
func NewMachine(maxRefinements int, log func(Transition)) *Machine {
	return &Machine{state: Init, max: maxRefinements, log: log, now: time.Now}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Round returns the current refinement round, 0 before any refinement.
func (m *Machine) Round() int { return m.round }

// CanRefine reports whether another refinement is allowed.
func (m *Machine) CanRefine() bool { return m.refinements < m.max }

// History returns every transition so far.
func (m *Machine) History() []Transition { return append([]Transition(nil), m.history...) }

// To moves to s, recording detail with the transition.
func (m *Machine) To(s State, detail string) error {
	if !m.allowed(s) {
		return fmt.Errorf("proposal: invalid transition %s → %s", m.state, s)
	}
	if s == Refinement {
		if !m.CanRefine() {
			return fmt.Errorf("proposal: invalid transition %s → %s: the %d refinements allowed are spent", m.state, s, m.max)
		}
		m.refinements++
		m.round++
	}
	t := Transition{From: m.state, To: s, Round: m.round, Detail: detail, At: m.now().UTC()}
	m.state = s
	m.history = append(m.history, t)
	if m.log != nil {
		m.log(t)
	}
	return nil
}

func (m *Machine) allowed(s State) bool {
	if s == Failed {
		return m.state != Complete && m.state != Failed
	}
	for _, next := range transitions[m.state] {
		if next == s {
			return true
		}
	}
	return false
}
