-- 0009_run_leases: which process works a run, until when. A run is worked
-- by at most one process; a lease that expires without being renewed marks
-- its process gone, and the run interrupted.

CREATE TABLE run_leases (
    run_id     TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    token      TEXT        NOT NULL,
    holder     TEXT        NOT NULL DEFAULT '',
    host       TEXT        NOT NULL DEFAULT '',
    pid        BIGINT      NOT NULL DEFAULT 0,
    started_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
