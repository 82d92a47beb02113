package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/madspark/madspark"
)

var _ madspark.ConversationStore = (*DB)(nil)

// conversationColumns are the columns scanConversation reads, in order.
const conversationColumns = `id, title, model, created_at, updated_at`

// CreateConversation stores a new conversation. c.ID must be set; one with
// the same ID gives an error wrapping madspark.ErrExists. Zero times are set
// to the current time, in *c as well as in the store.
func (db *DB) CreateConversation(ctx context.Context, c *madspark.Conversation) error {
	const op = "create conversation"
	if c == nil || c.ID == "" {
		return fmt.Errorf("sqlite: %s: conversation ID is empty", op)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now().UTC()
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.Messages = []madspark.ChatMessage{}
	return db.write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO conversations (`+conversationColumns+`)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			c.ID, c.Title, c.Model, formatTime(c.CreatedAt), formatTime(c.UpdatedAt))
		if err != nil {
			return fmt.Errorf("%q: %w", c.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("%q: %w", c.ID, err)
		} else if n == 0 {
			return fmt.Errorf("conversation %q: %w", c.ID, madspark.ErrExists)
		}
		return nil
	})
}

// scanConversation reads a row of conversationColumns.
func scanConversation(s scanner) (*madspark.Conversation, error) {
	var (
		c                madspark.Conversation
		created, updated sql.NullString
	)
	if err := s.Scan(&c.ID, &c.Title, &c.Model, &created, &updated); err != nil {
		return nil, err
	}
	var err error
	if c.CreatedAt, err = parseTime(created); err != nil {
		return nil, fmt.Errorf("conversation %q: %w", c.ID, err)
	}
	if c.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, fmt.Errorf("conversation %q: %w", c.ID, err)
	}
	c.Messages = []madspark.ChatMessage{}
	return &c, nil
}

// Conversation returns a conversation with its messages, or an error
// wrapping madspark.ErrNotFound.
func (db *DB) Conversation(ctx context.Context, id string) (*madspark.Conversation, error) {
	tx, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: conversation %q: %w", id, err)
	}
	defer func() { _ = tx.Rollback() }()
	c, err := scanConversation(tx.QueryRowContext(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("conversation %q: %w", id, madspark.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: conversation %q: %w", id, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, role, content, run_id, model, created_at
FROM conversation_messages WHERE conversation_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: conversation %q: messages: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			m       madspark.ChatMessage
			role    string
			created sql.NullString
		)
		if err := rows.Scan(&m.Seq, &role, &m.Content, &m.RunID, &m.Model, &created); err != nil {
			return nil, fmt.Errorf("sqlite: conversation %q: messages: %w", id, err)
		}
		m.Role = madspark.ChatRole(role)
		if m.CreatedAt, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("sqlite: conversation %q: message %d: %w", id, m.Seq, err)
		}
		c.Messages = append(c.Messages, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: conversation %q: messages: %w", id, err)
	}
	return c, nil
}

// Conversations lists conversations without their messages, the most
// recently updated first.
func (db *DB) Conversations(ctx context.Context, limit, offset int) ([]*madspark.Conversation, error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	offset = max(offset, 0)
	rows, err := db.r.QueryContext(ctx, `SELECT `+conversationColumns+` FROM conversations
ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?`, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("sqlite: conversations: %w", err)
	}
	defer rows.Close()
	out := []*madspark.Conversation{}
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: conversations: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: conversations: %w", err)
	}
	return out, nil
}

// RenameConversation sets a conversation's title.
func (db *DB) RenameConversation(ctx context.Context, id, title string) error {
	return db.write(ctx, "rename conversation", func(tx *sql.Tx) error {
		return affected(tx.ExecContext(ctx, `UPDATE conversations SET title = ? WHERE id = ?`, title, id))(id)
	})
}

// DeleteConversation removes a conversation and its messages.
func (db *DB) DeleteConversation(ctx context.Context, id string) error {
	return db.write(ctx, "delete conversation", func(tx *sql.Tx) error {
		return affected(tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = ?`, id))(id)
	})
}

// affected turns the outcome of a statement on one conversation into an
// error: one wrapping madspark.ErrNotFound when it touched no row.
func affected(res sql.Result, err error) func(id string) error {
	return func(id string) error {
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("conversation %q: %w", id, madspark.ErrNotFound)
		}
		return nil
	}
}

// AppendMessage adds m as the last message of conversation id.
func (db *DB) AppendMessage(ctx context.Context, id string, m *madspark.ChatMessage) error {
	if m == nil {
		return fmt.Errorf("sqlite: append message: message is nil")
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	return db.write(ctx, "append message", func(tx *sql.Tx) error {
		if err := affected(tx.ExecContext(ctx, `UPDATE conversations SET updated_at = ? WHERE id = ?`, formatTime(m.CreatedAt), id))(id); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_messages WHERE conversation_id = ?`, id).Scan(&seq); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversation_messages (conversation_id, seq, role, content, run_id, model, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, id, seq, string(m.Role), m.Content, m.RunID, m.Model, formatTime(m.CreatedAt)); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		m.Seq = seq
		return nil
	})
}

// TruncateConversation removes the messages of conversation id after keep.
func (db *DB) TruncateConversation(ctx context.Context, id string, keep int64) error {
	return db.write(ctx, "truncate conversation", func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversations WHERE id = ?`, id).Scan(&n); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("conversation %q: %w", id, madspark.ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM conversation_messages WHERE conversation_id = ? AND seq > ?`, id, keep); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		return nil
	})
}
