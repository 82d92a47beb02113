-- 0005_bookmarks: the tags a run was started with, and bookmarks: ideas a
-- user kept, with their tags in a table of their own so that a tag filter
-- is an indexed lookup.

ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';

CREATE TABLE bookmarks (
    id              TEXT    NOT NULL PRIMARY KEY,
    run_id          TEXT    NOT NULL DEFAULT '',
    candidate_index INTEGER NOT NULL DEFAULT 0,
    idea_text       TEXT    NOT NULL,
    improved_idea   TEXT    NOT NULL DEFAULT '',
    topic           TEXT    NOT NULL DEFAULT '',
    context         TEXT    NOT NULL DEFAULT '',
    score           REAL    NOT NULL DEFAULT 0,
    improved_score  REAL    NOT NULL DEFAULT 0,
    tags            TEXT    NOT NULL DEFAULT '[]',
    notes           TEXT    NOT NULL DEFAULT '',
    metadata        TEXT    NOT NULL DEFAULT '{}',
    created_at      TEXT    NOT NULL
);

CREATE INDEX bookmarks_created_at_idx ON bookmarks (created_at DESC, id DESC);

CREATE TABLE bookmark_tags (
    bookmark_id TEXT NOT NULL REFERENCES bookmarks (id) ON DELETE CASCADE,
    tag         TEXT NOT NULL,
    PRIMARY KEY (tag, bookmark_id)
);
