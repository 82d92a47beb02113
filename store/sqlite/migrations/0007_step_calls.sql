-- 0007_step_calls: the LLM calls of each step (prompt, raw reply, usage,
-- latency), as JSON, for inspecting a run call by call.

ALTER TABLE steps ADD COLUMN calls TEXT NOT NULL DEFAULT '[]';
