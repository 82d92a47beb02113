-- 0001_init: runs, their step journal, and the response cache.
--
-- The same tables as the SQLite store's, in PostgreSQL's types: timestamps
-- are TIMESTAMPTZ (microsecond precision), usage is JSONB. The JSON documents
-- that callers hand in (params, result, output) are TEXT, kept byte for byte:
-- JSONB would reorder their keys and reject the valid escape \u0000. IDs are
-- compared byte-wise (COLLATE "C"), as in SQLite, so that listings order the
-- same whatever the database's collation.

CREATE TABLE runs (
    id          TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    pipeline    TEXT        NOT NULL,
    status      TEXT        NOT NULL,
    mode        TEXT        NOT NULL DEFAULT '',
    provider    TEXT        NOT NULL DEFAULT '',
    model       TEXT        NOT NULL DEFAULT '',
    params      TEXT,
    result      TEXT,
    error       TEXT        NOT NULL DEFAULT '',
    usage       JSONB       NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ
);

CREATE INDEX runs_created_at_idx ON runs (created_at DESC, id DESC);
CREATE INDEX runs_pipeline_created_at_idx ON runs (pipeline, created_at DESC, id DESC);

CREATE TABLE steps (
    run_id      TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key         TEXT        NOT NULL,
    input_hash  TEXT        NOT NULL DEFAULT '',
    status      TEXT        NOT NULL,
    output      TEXT,
    error       TEXT        NOT NULL DEFAULT '',
    usage       JSONB       NOT NULL DEFAULT '{}',
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    -- seq numbers the steps of a run in the order they were first saved.
    seq         INTEGER     NOT NULL,
    PRIMARY KEY (run_id, key),
    CONSTRAINT steps_run_seq_key UNIQUE (run_id, seq)
);

CREATE TABLE llm_cache (
    key        TEXT        NOT NULL PRIMARY KEY,
    value      BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX llm_cache_created_at_idx ON llm_cache (created_at);
