-- 0003_events: the progress events of runs, kept so that a client that
-- connects late or reconnects replays what it missed. seq numbers a run's
-- events from 1 in the order they were stored.

CREATE TABLE run_events (
    run_id     TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    stage      TEXT    NOT NULL DEFAULT '',
    progress   INTEGER NOT NULL DEFAULT 0,
    message    TEXT    NOT NULL DEFAULT '',
    data       TEXT,
    created_at TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
);
