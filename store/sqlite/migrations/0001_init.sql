-- 0001_init: runs, their step journal, and the response cache.
--
-- Kept portable to PostgreSQL: JSON is stored as TEXT, timestamps as
-- fixed-width RFC 3339 TEXT in UTC (so that text order is time order), and
-- numbers as INTEGER or REAL.

CREATE TABLE runs (
    id          TEXT    NOT NULL PRIMARY KEY,
    pipeline    TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    mode        TEXT    NOT NULL DEFAULT '',
    provider    TEXT    NOT NULL DEFAULT '',
    model       TEXT    NOT NULL DEFAULT '',
    params      TEXT,
    result      TEXT,
    error       TEXT    NOT NULL DEFAULT '',
    usage       TEXT    NOT NULL DEFAULT '{}',
    created_at  TEXT    NOT NULL,
    finished_at TEXT
);

CREATE INDEX runs_created_at_idx ON runs (created_at DESC);
CREATE INDEX runs_pipeline_created_at_idx ON runs (pipeline, created_at);

CREATE TABLE steps (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key         TEXT    NOT NULL,
    input_hash  TEXT    NOT NULL DEFAULT '',
    status      TEXT    NOT NULL,
    output      TEXT,
    error       TEXT    NOT NULL DEFAULT '',
    usage       TEXT    NOT NULL DEFAULT '{}',
    started_at  TEXT,
    finished_at TEXT,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (run_id, key)
);

CREATE INDEX steps_run_seq_idx ON steps (run_id, seq);

CREATE TABLE llm_cache (
    key        TEXT NOT NULL PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at TEXT NOT NULL
);

CREATE INDEX llm_cache_created_at_idx ON llm_cache (created_at);
