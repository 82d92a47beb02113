package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark"
)

// mustConversation reads conversation id or fails the test.
func mustConversation(t *testing.T, s Store, id string) *madspark.Conversation {
	t.Helper()
	c, err := s.Conversation(context.Background(), id)
	if err != nil {
		t.Fatalf("Conversation(%q): %v", id, err)
	}
	return c
}

// testConversationRoundTrip: a conversation and its messages come back as
// stored, in order, with sequence numbers from 1 and times in UTC; the last
// message's time becomes the conversation's UpdatedAt.
func testConversationRoundTrip(t *testing.T, s Store) {
	ctx := context.Background()
	c := &madspark.Conversation{ID: "c1", Title: "Rust or Go?", Model: "madspark-debate", CreatedAt: base.In(zone)}
	if err := s.CreateConversation(ctx, c); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	if !sameTime(c.UpdatedAt, base) {
		t.Errorf("UpdatedAt = %v, want the creation time %v", c.UpdatedAt, base)
	}
	got := mustConversation(t, s, "c1")
	if got.Title != c.Title || got.Model != c.Model || !sameTime(got.CreatedAt, base) || got.CreatedAt.Location() != time.UTC ||
		got.Messages == nil || len(got.Messages) != 0 {
		t.Errorf("new conversation = %+v", got)
	}
	msgs := []madspark.ChatMessage{
		{Role: madspark.ChatUser, Content: "Which is faster to learn?", CreatedAt: base.Add(time.Second)},
		{Role: madspark.ChatAssistant, Content: "Go, **by far**.\n```go\nfmt.Println()\n```", RunID: "r1", Model: "madspark-debate", CreatedAt: base.Add(2 * time.Second)},
		{Role: madspark.ChatUser, Content: "Why?"}, // now
	}
	before := time.Now().Add(-time.Second)
	for i := range msgs {
		if err := s.AppendMessage(ctx, "c1", &msgs[i]); err != nil {
			t.Fatalf("AppendMessage %d: %v", i, err)
		}
		if msgs[i].Seq != int64(i+1) {
			t.Errorf("message %d: Seq = %d, want %d", i, msgs[i].Seq, i+1)
		}
	}
	got = mustConversation(t, s, "c1")
	if len(got.Messages) != 3 {
		t.Fatalf("messages = %+v, want 3", got.Messages)
	}
	for i, m := range got.Messages {
		w := msgs[i]
		if m.Seq != int64(i+1) || m.Role != w.Role || m.Content != w.Content || m.RunID != w.RunID || m.Model != w.Model ||
			(!w.CreatedAt.IsZero() && !sameTime(m.CreatedAt, w.CreatedAt)) || m.CreatedAt.Location() != time.UTC {
			t.Errorf("message %d = %+v, want %+v", i, m, w)
		}
	}
	if got.Messages[2].CreatedAt.Before(before) {
		t.Errorf("a message without a time got %v, want now", got.Messages[2].CreatedAt)
	}
	if !got.UpdatedAt.Equal(got.Messages[2].CreatedAt) || !sameTime(got.CreatedAt, base) {
		t.Errorf("times after appending = created %v updated %v, want %v and the last message's %v", got.CreatedAt, got.UpdatedAt, base, got.Messages[2].CreatedAt)
	}
}

// testConversationRejects: missing conversations are not found by every
// method, a repeated ID exists already, an empty ID is refused.
func testConversationRejects(t *testing.T, s Store) {
	ctx := context.Background()
	if err := s.CreateConversation(ctx, &madspark.Conversation{}); err == nil {
		t.Error("CreateConversation with no ID succeeded")
	}
	if err := s.CreateConversation(ctx, &madspark.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConversation(ctx, &madspark.Conversation{ID: "c", Title: "again"}); !errors.Is(err, madspark.ErrExists) {
		t.Errorf("CreateConversation twice: %v, want ErrExists", err)
	}
	if got := mustConversation(t, s, "c"); got.Title != "" {
		t.Errorf("the second create changed the title to %q", got.Title)
	}
	for name, err := range map[string]error{
		"Conversation": func() error { _, err := s.Conversation(ctx, "nope"); return err }(),
		"Rename":       s.RenameConversation(ctx, "nope", "x"),
		"Delete":       s.DeleteConversation(ctx, "nope"),
		"Append":       s.AppendMessage(ctx, "nope", &madspark.ChatMessage{Role: madspark.ChatUser, Content: "hi"}),
		"Truncate":     s.TruncateConversation(ctx, "nope", 0),
	} {
		if !errors.Is(err, madspark.ErrNotFound) || !strings.Contains(err.Error(), `conversation "nope"`) {
			t.Errorf("%s of a missing conversation: %v, want `conversation \"nope\": not found`", name, err)
		}
	}
}

// testConversationsOrder: listed by last update, newest first, then by
// descending ID; without messages; limit and offset page; empty, not nil.
func testConversationsOrder(t *testing.T, s Store) {
	ctx := context.Background()
	if got, err := s.Conversations(ctx, 0, 0); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Conversations of an empty store = %#v, %v; want empty, not nil", got, err)
	}
	for i, id := range []string{"a", "b", "c", "d"} {
		if err := s.CreateConversation(ctx, &madspark.Conversation{ID: id, CreatedAt: base.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	// A message moves b to the top; e, created next, ties with a.
	if err := s.AppendMessage(ctx, "b", &madspark.ChatMessage{Role: madspark.ChatUser, Content: "x", CreatedAt: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConversation(ctx, &madspark.Conversation{ID: "e", CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	ids := func(limit, offset int) string {
		cs, err := s.Conversations(ctx, limit, offset)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, c := range cs {
			if len(c.Messages) != 0 {
				t.Errorf("listed conversation %s has %d messages, want none", c.ID, len(c.Messages))
			}
			out += c.ID
		}
		return out
	}
	if got := ids(0, 0); got != "bdcea" {
		t.Errorf("order = %s, want bdcea (b updated last; e and a tie, by descending ID)", got)
	}
	if got := ids(2, 1); got != "dc" {
		t.Errorf("limit 2 offset 1 = %s, want dc", got)
	}
	if got := ids(10, 5); got != "" {
		t.Errorf("past the end = %q, want empty", got)
	}
}

// testConversationRenameDelete: renaming keeps the messages and UpdatedAt;
// deleting removes the conversation and its messages, and a conversation
// created again with the same ID starts empty.
func testConversationRenameDelete(t *testing.T, s Store) {
	ctx := context.Background()
	if err := s.CreateConversation(ctx, &madspark.Conversation{ID: "c", Title: "old", CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendMessage(ctx, "c", &madspark.ChatMessage{Role: madspark.ChatUser, Content: "q", CreatedAt: base.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.RenameConversation(ctx, "c", "Née «new»"); err != nil {
		t.Fatal(err)
	}
	got := mustConversation(t, s, "c")
	if got.Title != "Née «new»" || len(got.Messages) != 1 || !sameTime(got.UpdatedAt, base.Add(time.Minute)) {
		t.Errorf("renamed = %+v", got)
	}
	if err := s.DeleteConversation(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conversation(ctx, "c"); !errors.Is(err, madspark.ErrNotFound) {
		t.Errorf("deleted conversation: %v, want ErrNotFound", err)
	}
	if err := s.CreateConversation(ctx, &madspark.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if got := mustConversation(t, s, "c"); len(got.Messages) != 0 {
		t.Errorf("recreated conversation has the old messages %+v", got.Messages)
	}
}

// testConversationTruncate: messages after keep go, and the next message
// takes the next number after those kept.
func testConversationTruncate(t *testing.T, s Store) {
	ctx := context.Background()
	if err := s.CreateConversation(ctx, &madspark.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := s.AppendMessage(ctx, "c", &madspark.ChatMessage{Role: madspark.ChatUser, Content: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TruncateConversation(ctx, "c", 2); err != nil {
		t.Fatal(err)
	}
	m := &madspark.ChatMessage{Role: madspark.ChatAssistant, Content: "again"}
	if err := s.AppendMessage(ctx, "c", m); err != nil {
		t.Fatal(err)
	}
	got := mustConversation(t, s, "c").Messages
	if len(got) != 3 || got[0].Content != "0" || got[1].Content != "1" || got[2].Content != "again" || got[2].Seq != 3 || m.Seq != 3 {
		t.Errorf("after truncating to 2 and appending: %+v", got)
	}
	if err := s.TruncateConversation(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	if got := mustConversation(t, s, "c").Messages; len(got) != 0 {
		t.Errorf("after truncating to 0: %+v", got)
	}
}

// testConcurrentAppendMessage: concurrent appends to one conversation get
// distinct, consecutive numbers.
func testConcurrentAppendMessage(t *testing.T, s Store) {
	ctx := context.Background()
	if err := s.CreateConversation(ctx, &madspark.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.AppendMessage(ctx, "c", &madspark.ChatMessage{Role: madspark.ChatUser, Content: fmt.Sprint(i)})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("AppendMessage: %v", err)
		}
	}
	got := mustConversation(t, s, "c").Messages
	if len(got) != n {
		t.Fatalf("%d messages, want %d", len(got), n)
	}
	for i, m := range got {
		if m.Seq != int64(i+1) {
			t.Errorf("message %d has Seq %d", i, m.Seq)
		}
	}
}
