package debate

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Handoff token budget (seed §4.2): what a proposer posts is 150-300 tokens.
const (
	MinHandoffTokens = 150
	MaxHandoffTokens = 300
)

// HandoffMessage is what a proposer posts to the blackboard (seed §4.2).
type HandoffMessage struct {
	ConversationID  string    `json:"conversation_id"`
	FromRole        Role      `json:"from_role"`
	ToRole          Role      `json:"to_role"`
	Round           int       `json:"round"`
	ContextSummary  string    `json:"context_summary"`
	KeyPoints       []string  `json:"key_points"`
	ConfidenceScore float64   `json:"confidence_score"`
	Timestamp       time.Time `json:"timestamp"`
	Tokens          int       `json:"tokens"`
}

// BudgetError is returned when a handoff's token count is outside the
// budget.
type BudgetError struct{ Actual, Min, Max int }

func (e *BudgetError) Error() string {
	if e.Actual > e.Max {
		return fmt.Sprintf("handoff token budget exceeded: %d > %d tokens; shorten context_summary and key_points", e.Actual, e.Max)
	}
	return fmt.Sprintf("handoff too short: %d < %d tokens; expand context_summary", e.Actual, e.Min)
}

// handoffTokens counts the tokens of a handoff's content: its summary and
// key points.
func handoffTokens(count func(string) int, summary string, keyPoints []string) int {
	return count(summary + "\n" + strings.Join(keyPoints, "\n"))
}

// Blackboard holds the handoffs of one debate. It is safe for concurrent
// use by the proposers.
type Blackboard struct {
	count func(string) int

	mu    sync.Mutex
	posts []HandoffMessage
}

// NewBlackboard returns an empty blackboard counting tokens with count.
func NewBlackboard(count func(string) int) *Blackboard { return &Blackboard{count: count} }

// Validate checks a handoff's token budget and records its count.
func (b *Blackboard) Validate(m *HandoffMessage) error {
	m.Tokens = handoffTokens(b.count, m.ContextSummary, m.KeyPoints)
	if m.Tokens < MinHandoffTokens || m.Tokens > MaxHandoffTokens {
		return &BudgetError{Actual: m.Tokens, Min: MinHandoffTokens, Max: MaxHandoffTokens}
	}
	return nil
}

// Post validates m and adds it.
func (b *Blackboard) Post(m HandoffMessage) error {
	if err := b.Validate(&m); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.posts = append(b.posts, m)
	return nil
}

// Round returns the handoffs of round r, in proposer order.
func (b *Blackboard) Round(r int) []HandoffMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []HandoffMessage
	for _, role := range Proposers {
		for _, m := range b.posts {
			if m.Round == r && m.FromRole == role {
				out = append(out, m)
			}
		}
	}
	return out
}

// Latest returns role's most recent handoff, if any.
func (b *Blackboard) Latest(role Role) (HandoffMessage, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.posts) - 1; i >= 0; i-- {
		if b.posts[i].FromRole == role {
			return b.posts[i], true
		}
	}
	return HandoffMessage{}, false
}

// All returns every handoff in posting order.
func (b *Blackboard) All() []HandoffMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]HandoffMessage(nil), b.posts...)
}
