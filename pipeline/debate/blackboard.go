package debate

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/madspark/madspark/search"
)

// Handoff token budget (seed §4.2): what a proposer posts is 150-300
// tokens. The prompt asks for it and each handoff records its count; a
// shorter handoff is kept, a longer one trimmed at a sentence boundary,
// and either is recorded as a repair.
const (
	MinHandoffTokens = 150
	MaxHandoffTokens = 300
)

// HandoffMessage is what a proposer posts to the blackboard (seed §4.2).
type HandoffMessage struct {
	ConversationID string   `json:"conversation_id"`
	FromRole       Role     `json:"from_role"`
	ToRole         Role     `json:"to_role"`
	Round          int      `json:"round"`
	ContextSummary string   `json:"context_summary"`
	KeyPoints      []string `json:"key_points"`
	// ConfidenceScore is the proposer's confidence, 0-1; nil when its
	// reply gave none.
	ConfidenceScore *float64  `json:"confidence_score,omitempty"`
	Timestamp       time.Time `json:"timestamp"`
	Tokens          int       `json:"tokens"`
}

// Confidence is the handoff's confidence as a prompt gives it: "0.81", or
// "not given".
func (h HandoffMessage) Confidence() string {
	if h.ConfidenceScore == nil {
		return "not given"
	}
	return strconv.FormatFloat(*h.ConfidenceScore, 'f', 2, 64)
}

// handoffTokens counts the tokens of a handoff's content: its summary and
// key points.
func handoffTokens(count func(string) int, summary string, keyPoints []string) int {
	return count(summary + "\n" + strings.Join(keyPoints, "\n"))
}

// sentenceEnd matches the end of a sentence: a full stop, question or
// exclamation mark, possibly closed by a quote or bracket, then space.
var sentenceEnd = regexp.MustCompile(`[.!?]["')\]]?\s+`)

// trimToBudget shortens a handoff whose content is over max tokens: the
// summary is cut after its last whole sentence that fits (one sentence at
// least is kept), then trailing key points are dropped (one at least is
// kept). It returns the shortened content; the result may still be over
// max when a single sentence and key point are.
func trimToBudget(count func(string) int, summary string, keyPoints []string, max int) (string, []string) {
	if handoffTokens(count, summary, keyPoints) <= max {
		return summary, keyPoints
	}
	var ends []int
	for _, m := range sentenceEnd.FindAllStringIndex(summary, -1) {
		ends = append(ends, m[0]+1)
	}
	// Cut at the longest prefix of whole sentences that fits, keeping the
	// first sentence whatever its length.
	for i := len(ends) - 1; i >= 0; i-- {
		cut := strings.TrimSpace(summary[:ends[i]])
		if i == 0 || handoffTokens(count, cut, keyPoints) <= max {
			summary = cut
			break
		}
	}
	for len(keyPoints) > 1 && handoffTokens(count, summary, keyPoints) > max {
		keyPoints = keyPoints[:len(keyPoints)-1]
	}
	return summary, keyPoints
}

// Blackboard holds the handoffs of one debate and its web search results.
// It is safe for concurrent use by the proposers and the search.
type Blackboard struct {
	count func(string) int

	mu    sync.Mutex
	posts []HandoffMessage

	sourcesOnce sync.Once
	sourcesSet  chan struct{} // closed by PostSources
	sources     []search.Result
}

// NewBlackboard returns an empty blackboard counting tokens with count.
func NewBlackboard(count func(string) int) *Blackboard {
	return &Blackboard{count: count, sourcesSet: make(chan struct{})}
}

// PostSources records the web search results (nil when there are none)
// and wakes those waiting in Sources. Only the first call counts.
func (b *Blackboard) PostSources(rs []search.Result) {
	b.sourcesOnce.Do(func() {
		b.sources = rs
		close(b.sourcesSet)
	})
}

// Sources waits until the web search results are posted, or ctx is done,
// and returns them.
func (b *Blackboard) Sources(ctx context.Context) ([]search.Result, error) {
	select {
	case <-b.sourcesSet:
		return b.sources, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Post records m's token count and adds it. The token budget is a target
// the proposers are asked for, not a gate: a handoff outside it is posted
// with its count (the proposer step repairs and records it).
func (b *Blackboard) Post(m HandoffMessage) {
	m.Tokens = handoffTokens(b.count, m.ContextSummary, m.KeyPoints)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.posts = append(b.posts, m)
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
