-- 0002_ideas: ideas that pipelines accepted and remember across runs.

CREATE TABLE remembered_ideas (
    memory      TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    run_id      TEXT    NOT NULL DEFAULT '',
    iteration   INTEGER NOT NULL DEFAULT 0,
    accepted_at TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (memory, name)
);

CREATE INDEX remembered_ideas_memory_seq_idx ON remembered_ideas (memory, seq);
