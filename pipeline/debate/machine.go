package debate

import (
	"fmt"
	"time"
)

// State is the orchestrator's state (seed §4.5).
type State string

// The states. Proposing and PeerReviewing carry the round in the machine.
const (
	Idle                State = "idle"
	AnalyzingComplexity State = "analyzing_complexity"
	SimpleGeneration    State = "simple_generation"
	Proposing           State = "proposing"
	PeerReviewing       State = "peer_reviewing"
	Aggregating         State = "aggregating"
	Complete            State = "complete"
	Failed              State = "failed"
)

// Event drives the orchestrator from one state to the next.
type Event string

// The events.
const (
	QueryReceived        Event = "query_received"
	ComplexitySimple     Event = "complexity_simple"
	ComplexityComplex    Event = "complexity_complex"
	ProposalComplete     Event = "proposal_complete"
	RoundComplete        Event = "round_complete"
	AllProposalsComplete Event = "all_proposals_complete"
	ReviewsComplete      Event = "reviews_complete"
	GenerationDone       Event = "generation_done"
	SynthesisComplete    Event = "synthesis_complete"
	ErrorOccurred        Event = "error_occurred"
)

// Transition is one recorded step of the machine.
type Transition struct {
	From   State     `json:"from"`
	Event  Event     `json:"event"`
	To     State     `json:"to"`
	Round  int       `json:"round,omitempty"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// Machine is the debate's explicit state machine. An event that is not
// allowed in the current state is an error and changes nothing. It is not
// safe for concurrent use; the orchestrator drives it from one goroutine.
type Machine struct {
	state   State
	round   int
	rounds  int
	review  bool
	history []Transition
	log     func(Transition)
}

// NewMachine starts a machine in Idle for a debate of rounds rounds, with
// or without peer review. log, if not nil, sees every transition.
func NewMachine(rounds int, review bool, log func(Transition)) *Machine {
	return &Machine{state: Idle, rounds: rounds, review: review, log: log}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Round returns the current proposing round, from 1.
func (m *Machine) Round() int { return m.round }

// History returns every transition so far.
func (m *Machine) History() []Transition { return append([]Transition(nil), m.history...) }

// Fire applies e; detail is recorded with the transition.
func (m *Machine) Fire(e Event, detail string) error {
	to, ok := m.next(e)
	if !ok {
		return fmt.Errorf("debate: invalid transition: event %s in state %s", e, m.state)
	}
	switch {
	case e == ComplexityComplex:
		m.round = 1
	case e == RoundComplete:
		m.round++
	}
	t := Transition{From: m.state, Event: e, To: to, Round: m.round, Detail: detail, At: time.Now().UTC()}
	m.state = to
	m.history = append(m.history, t)
	if m.log != nil {
		m.log(t)
	}
	return nil
}

// next is the transition table.
func (m *Machine) next(e Event) (State, bool) {
	if e == ErrorOccurred {
		return Failed, m.state != Complete && m.state != Failed
	}
	switch m.state {
	case Idle:
		return AnalyzingComplexity, e == QueryReceived
	case AnalyzingComplexity:
		switch e {
		case ComplexitySimple:
			return SimpleGeneration, true
		case ComplexityComplex:
			return Proposing, true
		}
	case SimpleGeneration:
		return Complete, e == GenerationDone
	case Proposing:
		switch e {
		case ProposalComplete:
			return Proposing, true
		case RoundComplete:
			return Proposing, m.round < m.rounds
		case AllProposalsComplete:
			if m.round != m.rounds {
				return "", false
			}
			if m.review {
				return PeerReviewing, true
			}
			return Aggregating, true
		}
	case PeerReviewing:
		return Aggregating, e == ReviewsComplete
	case Aggregating:
		return Complete, e == SynthesisComplete
	}
	return "", false
}
