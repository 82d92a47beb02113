package debate

import (
	"fmt"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

func TestConversationHistory(t *testing.T) {
	if got := ConversationHistory(nil); len(got) != 0 {
		t.Errorf("no exchanges: %v", got)
	}
	var ex []Exchange
	for i := range 8 {
		ex = append(ex, Exchange{Question: fmt.Sprint("q", i), Answer: fmt.Sprint("a", i)})
	}
	ex[6].Answer = "" // stopped: not carried
	got := ConversationHistory(ex)
	if len(got) != MaxHistory {
		t.Fatalf("%d messages, want %d", len(got), MaxHistory)
	}
	want := []string{"q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "q5", "a5", "q7", "a7"}
	for i, m := range got {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		if m.Content != want[i] || m.Role != role {
			t.Errorf("message %d = %s %q, want %s %q", i, m.Role, m.Content, role, want[i])
		}
	}
}

// TestExchangesOf: a question answered again has its last answer; a failed
// answer is none, unless an answer came after it.
func TestExchangesOf(t *testing.T) {
	msg := func(role madspark.ChatRole, content string) madspark.ChatMessage {
		return madspark.ChatMessage{Role: role, Content: content}
	}
	got := ExchangesOf([]madspark.ChatMessage{
		msg(madspark.ChatUser, "q1"), msg(madspark.ChatAssistant, "a1"), msg(madspark.ChatAssistant, "a1 again"),
		msg(madspark.ChatUser, "q2"), msg(madspark.ChatError, "openai: HTTP 500"),
		msg(madspark.ChatUser, "q3"), msg(madspark.ChatError, "openai: HTTP 500"), msg(madspark.ChatAssistant, "a3"),
	})
	want := []Exchange{{"q1", "a1 again"}, {"q2", ""}, {"q3", "a3"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ExchangesOf = %v, want %v", got, want)
	}
}
