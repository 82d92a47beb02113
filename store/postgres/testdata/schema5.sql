--
-- PostgreSQL database dump
--

\restrict STyoRBNmyEOmbrvW964Z031jyAGU5h152kLrldMlVuHSVBfWMLt7xQfdIBmT8yl

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: fx_v5; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA fx_v5;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: batch_items; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.batch_items (
    batch_id text NOT NULL COLLATE pg_catalog."C",
    idx integer NOT NULL,
    line bigint NOT NULL,
    topic text DEFAULT ''::text NOT NULL,
    tags text DEFAULT '[]'::text NOT NULL,
    run_id text DEFAULT ''::text NOT NULL COLLATE pg_catalog."C",
    error text DEFAULT ''::text NOT NULL
);


--
-- Name: batches; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.batches (
    id text NOT NULL COLLATE pg_catalog."C",
    pipeline text NOT NULL,
    source text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: bookmark_tags; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.bookmark_tags (
    bookmark_id text NOT NULL COLLATE pg_catalog."C",
    tag text NOT NULL
);


--
-- Name: bookmarks; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.bookmarks (
    id text NOT NULL COLLATE pg_catalog."C",
    run_id text DEFAULT ''::text NOT NULL COLLATE pg_catalog."C",
    candidate_index integer DEFAULT 0 NOT NULL,
    idea_text text NOT NULL,
    improved_idea text DEFAULT ''::text NOT NULL,
    topic text DEFAULT ''::text NOT NULL,
    context text DEFAULT ''::text NOT NULL,
    score double precision DEFAULT 0 NOT NULL,
    improved_score double precision DEFAULT 0 NOT NULL,
    tags text DEFAULT '[]'::text NOT NULL,
    notes text DEFAULT ''::text NOT NULL,
    metadata text DEFAULT '{}'::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: llm_cache; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.llm_cache (
    key text NOT NULL,
    value bytea NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: remembered_ideas; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.remembered_ideas (
    memory text NOT NULL,
    name text NOT NULL,
    data text NOT NULL,
    run_id text DEFAULT ''::text NOT NULL,
    iteration bigint DEFAULT 0 NOT NULL,
    accepted_at timestamp with time zone NOT NULL,
    seq bigint NOT NULL
);


--
-- Name: run_events; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.run_events (
    run_id text NOT NULL COLLATE pg_catalog."C",
    seq bigint NOT NULL,
    type text NOT NULL,
    stage text DEFAULT ''::text NOT NULL,
    progress integer DEFAULT 0 NOT NULL,
    message text DEFAULT ''::text NOT NULL,
    data text,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: runs; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.runs (
    id text NOT NULL COLLATE pg_catalog."C",
    pipeline text NOT NULL,
    status text NOT NULL,
    mode text DEFAULT ''::text NOT NULL,
    provider text DEFAULT ''::text NOT NULL,
    model text DEFAULT ''::text NOT NULL,
    params text,
    result text,
    error text DEFAULT ''::text NOT NULL,
    usage jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    tags text DEFAULT '[]'::text NOT NULL
);


--
-- Name: schema_migrations; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.schema_migrations (
    version integer NOT NULL,
    name text DEFAULT ''::text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: steps; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.steps (
    run_id text NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL,
    input_hash text DEFAULT ''::text NOT NULL,
    status text NOT NULL,
    output text,
    error text DEFAULT ''::text NOT NULL,
    usage jsonb DEFAULT '{}'::jsonb NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    seq integer NOT NULL
);


--
-- Name: worker_leases; Type: TABLE; Schema: fx_v5; Owner: -
--

CREATE TABLE fx_v5.worker_leases (
    id text NOT NULL COLLATE pg_catalog."C",
    host text DEFAULT ''::text NOT NULL,
    pid bigint DEFAULT 0 NOT NULL,
    started_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);


--
-- Data for Name: batch_items; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Data for Name: batches; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Data for Name: bookmark_tags; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Data for Name: bookmarks; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Data for Name: llm_cache; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Data for Name: remembered_ideas; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Data for Name: run_events; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Data for Name: runs; Type: TABLE DATA; Schema: fx_v5; Owner: -
--

INSERT INTO fx_v5.runs VALUES ('fx-old', 'spark', 'succeeded', 'live', 'openai', 'gpt-4o', '{"topic":"Old bees"}', '{"ideas":[]}', '', '{"llm_calls": 1, "input_tokens": 10}', '2024-01-02 03:04:05.678901+00', '2024-01-02 03:05:05+00', '["old"]');


--
-- Data for Name: schema_migrations; Type: TABLE DATA; Schema: fx_v5; Owner: -
--

INSERT INTO fx_v5.schema_migrations VALUES (1, '0001_init.sql', '2026-11-27 20:35:54.711136+00');
INSERT INTO fx_v5.schema_migrations VALUES (2, '0002_ideas.sql', '2026-11-27 20:35:54.731307+00');
INSERT INTO fx_v5.schema_migrations VALUES (3, '0003_events.sql', '2026-11-27 20:35:54.749695+00');
INSERT INTO fx_v5.schema_migrations VALUES (4, '0004_queue.sql', '2026-11-27 20:35:54.765344+00');
INSERT INTO fx_v5.schema_migrations VALUES (5, '0005_bookmarks.sql', '2026-11-27 20:35:54.799105+00');


--
-- Data for Name: steps; Type: TABLE DATA; Schema: fx_v5; Owner: -
--

INSERT INTO fx_v5.steps VALUES ('fx-old', 'generate', 'h0', 'done', '{"ideas":[]}', '', '{"llm_calls": 1}', '2024-01-02 03:04:06+00', '2024-01-02 03:04:07+00', 1);


--
-- Data for Name: worker_leases; Type: TABLE DATA; Schema: fx_v5; Owner: -
--



--
-- Name: batch_items batch_items_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.batch_items
    ADD CONSTRAINT batch_items_pkey PRIMARY KEY (batch_id, idx);


--
-- Name: batches batches_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.batches
    ADD CONSTRAINT batches_pkey PRIMARY KEY (id);


--
-- Name: bookmark_tags bookmark_tags_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.bookmark_tags
    ADD CONSTRAINT bookmark_tags_pkey PRIMARY KEY (tag, bookmark_id);


--
-- Name: bookmarks bookmarks_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.bookmarks
    ADD CONSTRAINT bookmarks_pkey PRIMARY KEY (id);


--
-- Name: llm_cache llm_cache_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.llm_cache
    ADD CONSTRAINT llm_cache_pkey PRIMARY KEY (key);


--
-- Name: remembered_ideas remembered_ideas_memory_seq_key; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.remembered_ideas
    ADD CONSTRAINT remembered_ideas_memory_seq_key UNIQUE (memory, seq);


--
-- Name: remembered_ideas remembered_ideas_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.remembered_ideas
    ADD CONSTRAINT remembered_ideas_pkey PRIMARY KEY (memory, name);


--
-- Name: run_events run_events_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.run_events
    ADD CONSTRAINT run_events_pkey PRIMARY KEY (run_id, seq);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: steps steps_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.steps
    ADD CONSTRAINT steps_pkey PRIMARY KEY (run_id, key);


--
-- Name: steps steps_run_seq_key; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.steps
    ADD CONSTRAINT steps_run_seq_key UNIQUE (run_id, seq);


--
-- Name: worker_leases worker_leases_pkey; Type: CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.worker_leases
    ADD CONSTRAINT worker_leases_pkey PRIMARY KEY (id);


--
-- Name: bookmarks_created_at_idx; Type: INDEX; Schema: fx_v5; Owner: -
--

CREATE INDEX bookmarks_created_at_idx ON fx_v5.bookmarks USING btree (created_at DESC, id DESC);


--
-- Name: llm_cache_created_at_idx; Type: INDEX; Schema: fx_v5; Owner: -
--

CREATE INDEX llm_cache_created_at_idx ON fx_v5.llm_cache USING btree (created_at);


--
-- Name: runs_created_at_idx; Type: INDEX; Schema: fx_v5; Owner: -
--

CREATE INDEX runs_created_at_idx ON fx_v5.runs USING btree (created_at DESC, id DESC);


--
-- Name: runs_pipeline_created_at_idx; Type: INDEX; Schema: fx_v5; Owner: -
--

CREATE INDEX runs_pipeline_created_at_idx ON fx_v5.runs USING btree (pipeline, created_at DESC, id DESC);


--
-- Name: batch_items batch_items_batch_id_fkey; Type: FK CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.batch_items
    ADD CONSTRAINT batch_items_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES fx_v5.batches(id) ON DELETE CASCADE;


--
-- Name: bookmark_tags bookmark_tags_bookmark_id_fkey; Type: FK CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.bookmark_tags
    ADD CONSTRAINT bookmark_tags_bookmark_id_fkey FOREIGN KEY (bookmark_id) REFERENCES fx_v5.bookmarks(id) ON DELETE CASCADE;


--
-- Name: run_events run_events_run_id_fkey; Type: FK CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.run_events
    ADD CONSTRAINT run_events_run_id_fkey FOREIGN KEY (run_id) REFERENCES fx_v5.runs(id) ON DELETE CASCADE;


--
-- Name: steps steps_run_id_fkey; Type: FK CONSTRAINT; Schema: fx_v5; Owner: -
--

ALTER TABLE ONLY fx_v5.steps
    ADD CONSTRAINT steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES fx_v5.runs(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

\unrestrict STyoRBNmyEOmbrvW964Z031jyAGU5h152kLrldMlVuHSVBfWMLt7xQfdIBmT8yl

