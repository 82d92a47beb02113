-- 0004_queue: what the job queue keeps beside River's own tables: batches of
-- runs submitted together, and the leases of the workers that run jobs.

CREATE TABLE batches (
    id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    pipeline   TEXT        NOT NULL,
    source     TEXT        NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE batch_items (
    batch_id TEXT COLLATE "C" NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    idx      INTEGER NOT NULL,
    line     BIGINT  NOT NULL,
    topic    TEXT    NOT NULL DEFAULT '',
    tags     TEXT    NOT NULL DEFAULT '[]',
    run_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    error    TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (batch_id, idx)
);

CREATE TABLE worker_leases (
    id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    host       TEXT        NOT NULL DEFAULT '',
    pid        BIGINT      NOT NULL DEFAULT 0,
    started_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
