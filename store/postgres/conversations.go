package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/madspark/madspark"
)

var _ madspark.ConversationStore = (*DB)(nil)

// conversationColumns are the columns scanConversation reads, in order.
const conversationColumns = `id, title, model, created_at, updated_at`

// CreateConversation stores a new conversation. c.ID must be set; one with
// the same ID gives an error wrapping madspark.ErrExists. Zero times are set
// to the current time (truncated to microseconds), in *c as well as in the
// store.
func (db *DB) CreateConversation(ctx context.Context, c *madspark.Conversation) error {
	const op = "create conversation"
	if c == nil || c.ID == "" {
		return fmt.Errorf("postgres: %s: conversation ID is empty", op)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = dbTime(time.Now())
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.Messages = []madspark.ChatMessage{}
	tag, err := db.pool.Exec(ctx, `INSERT INTO conversations (`+conversationColumns+`)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, c.ID, c.Title, c.Model, dbTime(c.CreatedAt), dbTime(c.UpdatedAt))
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, c.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("conversation %q: %w", c.ID, madspark.ErrExists)
	}
	return nil
}

// scanConversation reads a row of conversationColumns.
func scanConversation(row pgx.Row) (*madspark.Conversation, error) {
	var c madspark.Conversation
	if err := row.Scan(&c.ID, &c.Title, &c.Model, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	c.Messages = []madspark.ChatMessage{}
	return &c, nil
}

// Conversation returns a conversation with its messages, or an error
// wrapping madspark.ErrNotFound.
func (db *DB) Conversation(ctx context.Context, id string) (*madspark.Conversation, error) {
	var c *madspark.Conversation
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		c, err = scanConversation(tx.QueryRow(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE id = $1`, id))
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT seq, role, content, run_id, model, created_at
FROM conversation_messages WHERE conversation_id = $1 ORDER BY seq`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				m    madspark.ChatMessage
				role string
			)
			if err := rows.Scan(&m.Seq, &role, &m.Content, &m.RunID, &m.Model, &m.CreatedAt); err != nil {
				return err
			}
			m.Role, m.CreatedAt = madspark.ChatRole(role), m.CreatedAt.UTC()
			c.Messages = append(c.Messages, m)
		}
		return rows.Err()
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("conversation %q: %w", id, madspark.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: conversation %q: %w", id, err)
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
	rows, err := db.pool.Query(ctx, `SELECT `+conversationColumns+` FROM conversations
ORDER BY updated_at DESC, id DESC LIMIT $1 OFFSET $2`, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("postgres: conversations: %w", err)
	}
	defer rows.Close()
	out := []*madspark.Conversation{}
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: conversations: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: conversations: %w", err)
	}
	return out, nil
}

// oneConversation turns the outcome of a statement on conversation id into
// an error: one wrapping madspark.ErrNotFound when it touched no row.
func oneConversation(op, id string, tag pgconn.CommandTag, err error) error {
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("conversation %q: %w", id, madspark.ErrNotFound)
	}
	return nil
}

// RenameConversation sets a conversation's title.
func (db *DB) RenameConversation(ctx context.Context, id, title string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE conversations SET title = $1 WHERE id = $2`, title, id)
	return oneConversation("rename conversation", id, tag, err)
}

// DeleteConversation removes a conversation and its messages.
func (db *DB) DeleteConversation(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM conversations WHERE id = $1`, id)
	return oneConversation("delete conversation", id, tag, err)
}

// AppendMessage adds m as the last message of conversation id. The
// conversation's row is locked while the next sequence number is taken,
// so that concurrent appends number their messages one after the other.
func (db *DB) AppendMessage(ctx context.Context, id string, m *madspark.ChatMessage) error {
	const op = "append message"
	if m == nil {
		return fmt.Errorf("postgres: %s: message is nil", op)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = dbTime(time.Now())
	}
	return db.inTx(ctx, op, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE conversations SET updated_at = $1 WHERE id = $2`, dbTime(m.CreatedAt), id)
		if err := oneConversation(op, id, tag, err); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_messages WHERE conversation_id = $1`, id).Scan(&seq); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO conversation_messages (conversation_id, seq, role, content, run_id, model, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, seq, string(m.Role), m.Content, m.RunID, m.Model, dbTime(m.CreatedAt)); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		m.Seq = seq
		return nil
	})
}

// TruncateConversation removes the messages of conversation id after keep.
func (db *DB) TruncateConversation(ctx context.Context, id string, keep int64) error {
	const op = "truncate conversation"
	return db.inTx(ctx, op, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, id)
		if err := oneConversation(op, id, tag, err); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM conversation_messages WHERE conversation_id = $1 AND seq > $2`, id, keep); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		return nil
	})
}
