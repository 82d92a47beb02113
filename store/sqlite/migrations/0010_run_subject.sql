-- 0010_run_subject: what a run is about, in one line, as its pipeline says
-- when the run is made (a topic, a query, a pipeline file's first input),
-- so that a listing shows it without knowing the pipeline.

ALTER TABLE runs ADD COLUMN subject TEXT NOT NULL DEFAULT '';
