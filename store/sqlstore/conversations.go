package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/madspark/madspark"
)

// conversationColumns are the columns scanConversation reads, in order.
const conversationColumns = `id, title, model, created_at, updated_at`

// CreateConversation stores a new conversation. c.ID must be set; one with
// the same ID gives an error wrapping madspark.ErrExists. Zero times are set
// to the current time, in *c as well as in the store.
func (s *Store) CreateConversation(ctx context.Context, c *madspark.Conversation) error {
	const op = "create conversation"
	if c == nil || c.ID == "" {
		return s.fail(errors.New("conversation ID is empty"), "%s", op)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.now()
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.Messages = []madspark.ChatMessage{}
	return s.write(ctx, op, func(tx *Tx) error {
		err := one(tx.ExecContext(ctx, `INSERT INTO conversations (`+conversationColumns+`)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, c.ID, c.Title, c.Model, s.d.Time(c.CreatedAt), s.d.Time(c.UpdatedAt)))("conversation", c.ID)
		if errors.Is(err, madspark.ErrNotFound) {
			return fmt.Errorf("conversation %q: %w", c.ID, madspark.ErrExists)
		}
		return err
	})
}

// scanConversation reads a row of conversationColumns.
func scanConversation(row scanner) (*madspark.Conversation, error) {
	c := madspark.Conversation{Messages: []madspark.ChatMessage{}}
	return &c, row.Scan(&c.ID, &c.Title, &c.Model, at{&c.CreatedAt}, at{&c.UpdatedAt})
}

// Conversation returns a conversation with its messages, or an error
// wrapping madspark.ErrNotFound. It reads both from one snapshot.
func (s *Store) Conversation(ctx context.Context, id string) (*madspark.Conversation, error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, s.fail(err, "conversation %q", id)
	}
	defer func() { _ = tx.Rollback() }()
	c, err := scanConversation(tx.QueryRowContext(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, missing("conversation", id)
	}
	if err == nil {
		c.Messages, err = all(ctx, tx, func(row scanner) (m madspark.ChatMessage, err error) {
			return m, row.Scan(&m.Seq, &m.Role, &m.Content, &m.RunID, &m.Model, at{&m.CreatedAt})
		}, `SELECT seq, role, content, run_id, model, created_at FROM conversation_messages WHERE conversation_id = $1 ORDER BY seq`, id)
	}
	if err != nil {
		return nil, s.fail(err, "conversation %q", id)
	}
	return c, nil
}

// Conversations lists conversations without their messages, the most
// recently updated first.
func (s *Store) Conversations(ctx context.Context, n, offset int) ([]*madspark.Conversation, error) {
	cs, err := all(ctx, s.read, scanConversation, `SELECT `+conversationColumns+` FROM conversations
ORDER BY updated_at DESC, id DESC LIMIT $1 OFFSET $2`, limit(n, defaultLimit), max(offset, 0))
	return cs, s.fail(err, "conversations")
}

// RenameConversation sets a conversation's title.
func (s *Store) RenameConversation(ctx context.Context, id, title string) error {
	return s.write(ctx, "rename conversation", func(tx *Tx) error {
		return one(tx.ExecContext(ctx, `UPDATE conversations SET title = $1 WHERE id = $2`, title, id))("conversation", id)
	})
}

// DeleteConversation removes a conversation and its messages.
func (s *Store) DeleteConversation(ctx context.Context, id string) error {
	return s.write(ctx, "delete conversation", func(tx *Tx) error {
		return one(tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = $1`, id))("conversation", id)
	})
}

// AppendMessage adds m as the last message of conversation id. Updating
// the conversation's row holds it, so that appends to one conversation
// number their messages one after the other.
func (s *Store) AppendMessage(ctx context.Context, id string, m *madspark.ChatMessage) error {
	const op = "append message"
	if m == nil {
		return s.fail(errors.New("message is nil"), "%s", op)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.now()
	}
	return s.write(ctx, op, func(tx *Tx) error {
		err := one(tx.ExecContext(ctx, `UPDATE conversations SET updated_at = $1 WHERE id = $2`, s.d.Time(m.CreatedAt), id))("conversation", id)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO conversation_messages (conversation_id, seq, role, content, run_id, model, created_at)
VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_messages WHERE conversation_id = $1), $2, $3, $4, $5, $6)
RETURNING seq`, id, string(m.Role), m.Content, m.RunID, m.Model, s.d.Time(m.CreatedAt)).Scan(&seq); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		m.Seq = seq
		return nil
	})
}

// TruncateConversation removes the messages of conversation id after keep.
func (s *Store) TruncateConversation(ctx context.Context, id string, keep int64) error {
	return s.write(ctx, "truncate conversation", func(tx *Tx) error {
		var x int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = $1`+s.d.RowLock, id).Scan(&x)
		if errors.Is(err, sql.ErrNoRows) {
			return missing("conversation", id)
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM conversation_messages WHERE conversation_id = $1 AND seq > $2`, id, keep)
		}
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		return nil
	})
}
