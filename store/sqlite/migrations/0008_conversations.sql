-- 0008_conversations: chats with the debate assistant and their messages.

CREATE TABLE conversations (
    id         TEXT NOT NULL PRIMARY KEY,
    title      TEXT NOT NULL DEFAULT '',
    model      TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE INDEX conversations_updated_at_idx ON conversations (updated_at DESC, id DESC);

CREATE TABLE conversation_messages (
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    role            TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    run_id          TEXT    NOT NULL DEFAULT '',
    model           TEXT    NOT NULL DEFAULT '',
    created_at      TEXT    NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);
