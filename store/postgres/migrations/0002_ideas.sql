-- 0002_ideas: ideas that pipelines accepted and remember across runs.

CREATE TABLE remembered_ideas (
    memory      TEXT        NOT NULL,
    name        TEXT        NOT NULL,
    data        TEXT        NOT NULL,
    run_id      TEXT        NOT NULL DEFAULT '',
    iteration   BIGINT      NOT NULL DEFAULT 0,
    accepted_at TIMESTAMPTZ NOT NULL,
    -- seq numbers a memory's ideas in the order they were first remembered.
    seq         BIGINT      NOT NULL,
    PRIMARY KEY (memory, name),
    CONSTRAINT remembered_ideas_memory_seq_key UNIQUE (memory, seq)
);
