-- 0006_repairs: the repairs made to a step's usable replies (a JSON list of
-- {agent, rule, action}), kept with the step so that a replayed step
-- reports them again.

ALTER TABLE steps ADD COLUMN repairs TEXT NOT NULL DEFAULT '[]';
