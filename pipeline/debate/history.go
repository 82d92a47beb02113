package debate

import (
	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// MaxHistory is how many earlier messages a query of a conversation
// carries: its last six exchanges.
const MaxHistory = 12

// Exchange is a question of a conversation and its answer; Answer is empty
// for a question left unanswered (it failed, or was stopped).
type Exchange struct {
	Question, Answer string
}

// ConversationHistory returns the history a conversation's next query
// carries: the answered exchanges, oldest first, as user and assistant
// messages, at most MaxHistory of them (the latest). A question left
// unanswered is not carried.
func ConversationHistory(exchanges []Exchange) []llm.Message {
	var out []llm.Message
	for _, e := range exchanges {
		if e.Answer == "" {
			continue
		}
		out = append(out, llm.Message{Role: llm.RoleUser, Content: e.Question}, llm.Message{Role: llm.RoleAssistant, Content: e.Answer})
	}
	if len(out) > MaxHistory {
		out = out[len(out)-MaxHistory:]
	}
	return out
}

// ExchangesOf pairs the messages of a stored conversation into questions
// and their answers. A question answered again (regenerated) has its last
// answer; failed answers (madspark.ChatError) are no answers.
func ExchangesOf(msgs []madspark.ChatMessage) []Exchange {
	var out []Exchange
	for _, m := range msgs {
		switch {
		case m.Role == madspark.ChatUser:
			out = append(out, Exchange{Question: m.Content})
		case m.Role == madspark.ChatAssistant && len(out) > 0:
			out[len(out)-1].Answer = m.Content
		}
	}
	return out
}
