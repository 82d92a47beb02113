--
-- PostgreSQL database dump
--

\restrict btWsJaeKe1AXxVVYhhOA28Q7tfctsBUxRUoXJ98H2QfMCsCQWrzq8Rn0nLWzCUH

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
-- Name: fx_v10; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA fx_v10;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: batch_items; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.batch_items (
    batch_id text NOT NULL COLLATE pg_catalog."C",
    idx integer NOT NULL,
    line bigint NOT NULL,
    topic text DEFAULT ''::text NOT NULL,
    tags text DEFAULT '[]'::text NOT NULL,
    run_id text DEFAULT ''::text NOT NULL COLLATE pg_catalog."C",
    error text DEFAULT ''::text NOT NULL
);


--
-- Name: batches; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.batches (
    id text NOT NULL COLLATE pg_catalog."C",
    pipeline text NOT NULL,
    source text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: bookmark_tags; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.bookmark_tags (
    bookmark_id text NOT NULL COLLATE pg_catalog."C",
    tag text NOT NULL
);


--
-- Name: bookmarks; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.bookmarks (
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
-- Name: conversation_messages; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.conversation_messages (
    conversation_id text NOT NULL COLLATE pg_catalog."C",
    seq bigint NOT NULL,
    role text NOT NULL,
    content text NOT NULL,
    run_id text DEFAULT ''::text NOT NULL COLLATE pg_catalog."C",
    model text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: conversations; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.conversations (
    id text NOT NULL COLLATE pg_catalog."C",
    title text DEFAULT ''::text NOT NULL,
    model text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: llm_cache; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.llm_cache (
    key text NOT NULL,
    value bytea NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: remembered_ideas; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.remembered_ideas (
    memory text NOT NULL,
    name text NOT NULL,
    data text NOT NULL,
    run_id text DEFAULT ''::text NOT NULL,
    iteration bigint DEFAULT 0 NOT NULL,
    accepted_at timestamp with time zone NOT NULL,
    seq bigint NOT NULL
);


--
-- Name: run_events; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.run_events (
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
-- Name: run_leases; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.run_leases (
    run_id text NOT NULL COLLATE pg_catalog."C",
    token text NOT NULL,
    holder text DEFAULT ''::text NOT NULL,
    host text DEFAULT ''::text NOT NULL,
    pid bigint DEFAULT 0 NOT NULL,
    started_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);


--
-- Name: runs; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.runs (
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
    tags text DEFAULT '[]'::text NOT NULL,
    subject text DEFAULT ''::text NOT NULL
);


--
-- Name: schema_migrations; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.schema_migrations (
    version integer NOT NULL,
    name text DEFAULT ''::text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: steps; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.steps (
    run_id text NOT NULL COLLATE pg_catalog."C",
    key text NOT NULL,
    input_hash text DEFAULT ''::text NOT NULL,
    status text NOT NULL,
    output text,
    error text DEFAULT ''::text NOT NULL,
    usage jsonb DEFAULT '{}'::jsonb NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    seq integer NOT NULL,
    repairs text DEFAULT '[]'::text NOT NULL,
    calls text DEFAULT '[]'::text NOT NULL
);


--
-- Name: worker_leases; Type: TABLE; Schema: fx_v10; Owner: -
--

CREATE TABLE fx_v10.worker_leases (
    id text NOT NULL COLLATE pg_catalog."C",
    host text DEFAULT ''::text NOT NULL,
    pid bigint DEFAULT 0 NOT NULL,
    started_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);


--
-- Data for Name: batch_items; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.batch_items VALUES ('fx-batch', 0, 2, 'Urban bees', '["bees"]', 'fx-done', '');
INSERT INTO fx_v10.batch_items VALUES ('fx-batch', 1, 3, '', 'null', '', 'the topic is empty');


--
-- Data for Name: batches; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.batches VALUES ('fx-batch', 'spark', 'topics.csv', '2025-06-07 08:09:10.123456+00');


--
-- Data for Name: bookmark_tags; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.bookmark_tags VALUES ('fx-mark', 'bees');
INSERT INTO fx_v10.bookmark_tags VALUES ('fx-mark', 'keep');


--
-- Data for Name: bookmarks; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.bookmarks VALUES ('fx-mark', 'fx-done', 1, 'Rooftop hives', 'Rooftop hives, mapped', 'Urban bees', 'roofs', 8.5, 9, '["bees","keep"]', 'try it', '{"model_used":"gpt-4o-mini","temperature":0.7,"token_count":200}', '2025-06-07 08:09:10.123456+00');


--
-- Data for Name: conversation_messages; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.conversation_messages VALUES ('fx-chat', 1, 'user', 'Rust or Go?', '', '', '2025-06-07 08:09:11.123456+00');
INSERT INTO fx_v10.conversation_messages VALUES ('fx-chat', 2, 'assistant', 'Go, for this.', 'fx-live', 'madspark-debate', '2025-06-07 08:09:12.123456+00');


--
-- Data for Name: conversations; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.conversations VALUES ('fx-chat', 'Rust or Go?', 'madspark-debate', '2025-06-07 08:09:10.123456+00', '2025-06-07 08:09:12.123456+00');


--
-- Data for Name: llm_cache; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.llm_cache VALUES ('fx-key', '\x66782d76616c7565', '2026-11-27 20:35:54.698322+00');


--
-- Data for Name: remembered_ideas; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.remembered_ideas VALUES ('urban bees', 'Rooftop hives', '{"score":8.5}', 'fx-done', 1, '2025-06-07 08:09:10.123456+00', 1);
INSERT INTO fx_v10.remembered_ideas VALUES ('urban bees', 'Hive map', '{"score":7}', 'fx-done', 2, '2025-06-07 08:09:11.123456+00', 2);


--
-- Data for Name: run_events; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.run_events VALUES ('fx-done', 1, 'progress', 'generate', 20, 'generating', NULL, '2025-06-07 08:09:11.123456+00');
INSERT INTO fx_v10.run_events VALUES ('fx-done', 2, 'result', 'done', 100, '', '{"ideas":[{"title":"Rooftop hives","score":8.5}]}', '2025-06-07 08:10:40.123456+00');
INSERT INTO fx_v10.run_events VALUES ('fx-live', 1, 'progress', 'route', 5, '', NULL, '2025-06-07 08:10:11.123456+00');


--
-- Data for Name: run_leases; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.run_leases VALUES ('fx-live', 'fx-token', 'madspark serve (pid 7 on host fx)', 'fx', 7, '2026-11-27 20:35:54.697115+00', '2076-11-14 20:35:54.697115+00');


--
-- Data for Name: runs; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.runs VALUES ('fx-live', 'debate', 'running', 'mock', 'mock', 'mock-1', '{"query":"Rust or Go?"}', NULL, '', '{"priced": true, "cost_usd": 0, "llm_calls": 0, "cached_calls": 0, "input_tokens": 0, "output_tokens": 0}', '2025-06-07 08:10:10.123456+00', NULL, 'null', '');
INSERT INTO fx_v10.runs VALUES ('fx-done', 'spark', 'succeeded', 'live', 'openai', 'gpt-4o-mini', '{"topic":"Urban bees","context":"roofs"}', '{"ideas":[{"title":"Rooftop hives","score":8.5}]}', '', '{"priced": true, "cost_usd": 0.0125, "llm_calls": 2, "cached_calls": 0, "input_tokens": 120, "output_tokens": 80}', '2025-06-07 08:09:10.123456+00', '2025-06-07 08:10:40.123456+00', '["bees","city"]', 'Urban bees');


--
-- Data for Name: schema_migrations; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.schema_migrations VALUES (1, '0001_init.sql', '2026-11-27 20:35:54.437986+00');
INSERT INTO fx_v10.schema_migrations VALUES (2, '0002_ideas.sql', '2026-11-27 20:35:54.503145+00');
INSERT INTO fx_v10.schema_migrations VALUES (3, '0003_events.sql', '2026-11-27 20:35:54.527515+00');
INSERT INTO fx_v10.schema_migrations VALUES (4, '0004_queue.sql', '2026-11-27 20:35:54.551773+00');
INSERT INTO fx_v10.schema_migrations VALUES (5, '0005_bookmarks.sql', '2026-11-27 20:35:54.578196+00');
INSERT INTO fx_v10.schema_migrations VALUES (6, '0006_repairs.sql', '2026-11-27 20:35:54.592887+00');
INSERT INTO fx_v10.schema_migrations VALUES (7, '0007_step_calls.sql', '2026-11-27 20:35:54.594497+00');
INSERT INTO fx_v10.schema_migrations VALUES (8, '0008_conversations.sql', '2026-11-27 20:35:54.596033+00');
INSERT INTO fx_v10.schema_migrations VALUES (9, '0009_run_leases.sql', '2026-11-27 20:35:54.613364+00');
INSERT INTO fx_v10.schema_migrations VALUES (10, '0010_run_subject.sql', '2026-11-27 20:35:54.621718+00');


--
-- Data for Name: steps; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.steps VALUES ('fx-done', 'generate', 'h1', 'done', '{"ideas":[]}', '', '{"priced": true, "cost_usd": 0.0125, "llm_calls": 2, "cached_calls": 0, "input_tokens": 120, "output_tokens": 80}', '2025-06-07 08:09:11.123456+00', '2025-06-07 08:09:13.123456+00', 1, '[{"agent":"spark.generate","rule":"key","action":"Title → title"}]', '[{"agent":"spark.generate","provider":"openai","model":"gpt-4o-mini","system":"You generate ideas.","messages":[{"role":"user","content":"Urban bees"}],"temperature":0.7,"max_tokens":500,"response":"{\"ideas\":[]}","finish_reason":"stop","attempt":1,"cached":false,"usage":{"llm_calls":2,"cached_calls":0,"input_tokens":120,"output_tokens":80,"cost_usd":0.0125,"priced":true},"started_at":"2025-06-07T08:09:11.123456Z","latency_ns":1500000000}]');
INSERT INTO fx_v10.steps VALUES ('fx-done', 'evaluate', 'h2', 'failed', NULL, 'the model said no', '{"priced": true, "cost_usd": 0, "llm_calls": 0, "cached_calls": 0, "input_tokens": 0, "output_tokens": 0}', '2025-06-07 08:09:14.123456+00', '2025-06-07 08:09:15.123456+00', 2, '[]', '[]');
INSERT INTO fx_v10.steps VALUES ('fx-live', 'route', 'h3', 'running', NULL, '', '{"priced": true, "cost_usd": 0, "llm_calls": 0, "cached_calls": 0, "input_tokens": 0, "output_tokens": 0}', '2025-06-07 08:10:11.123456+00', NULL, 1, '[]', '[]');


--
-- Data for Name: worker_leases; Type: TABLE DATA; Schema: fx_v10; Owner: -
--

INSERT INTO fx_v10.worker_leases VALUES ('fx-worker', 'fx', 8, '2026-11-27 20:35:54.697982+00', '2076-11-14 20:35:54.697982+00');


--
-- Name: batch_items batch_items_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.batch_items
    ADD CONSTRAINT batch_items_pkey PRIMARY KEY (batch_id, idx);


--
-- Name: batches batches_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.batches
    ADD CONSTRAINT batches_pkey PRIMARY KEY (id);


--
-- Name: bookmark_tags bookmark_tags_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.bookmark_tags
    ADD CONSTRAINT bookmark_tags_pkey PRIMARY KEY (tag, bookmark_id);


--
-- Name: bookmarks bookmarks_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.bookmarks
    ADD CONSTRAINT bookmarks_pkey PRIMARY KEY (id);


--
-- Name: conversation_messages conversation_messages_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.conversation_messages
    ADD CONSTRAINT conversation_messages_pkey PRIMARY KEY (conversation_id, seq);


--
-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (id);


--
-- Name: llm_cache llm_cache_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.llm_cache
    ADD CONSTRAINT llm_cache_pkey PRIMARY KEY (key);


--
-- Name: remembered_ideas remembered_ideas_memory_seq_key; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.remembered_ideas
    ADD CONSTRAINT remembered_ideas_memory_seq_key UNIQUE (memory, seq);


--
-- Name: remembered_ideas remembered_ideas_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.remembered_ideas
    ADD CONSTRAINT remembered_ideas_pkey PRIMARY KEY (memory, name);


--
-- Name: run_events run_events_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.run_events
    ADD CONSTRAINT run_events_pkey PRIMARY KEY (run_id, seq);


--
-- Name: run_leases run_leases_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.run_leases
    ADD CONSTRAINT run_leases_pkey PRIMARY KEY (run_id);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: steps steps_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.steps
    ADD CONSTRAINT steps_pkey PRIMARY KEY (run_id, key);


--
-- Name: steps steps_run_seq_key; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.steps
    ADD CONSTRAINT steps_run_seq_key UNIQUE (run_id, seq);


--
-- Name: worker_leases worker_leases_pkey; Type: CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.worker_leases
    ADD CONSTRAINT worker_leases_pkey PRIMARY KEY (id);


--
-- Name: bookmarks_created_at_idx; Type: INDEX; Schema: fx_v10; Owner: -
--

CREATE INDEX bookmarks_created_at_idx ON fx_v10.bookmarks USING btree (created_at DESC, id DESC);


--
-- Name: conversations_updated_at_idx; Type: INDEX; Schema: fx_v10; Owner: -
--

CREATE INDEX conversations_updated_at_idx ON fx_v10.conversations USING btree (updated_at DESC, id DESC);


--
-- Name: llm_cache_created_at_idx; Type: INDEX; Schema: fx_v10; Owner: -
--

CREATE INDEX llm_cache_created_at_idx ON fx_v10.llm_cache USING btree (created_at);


--
-- Name: runs_created_at_idx; Type: INDEX; Schema: fx_v10; Owner: -
--

CREATE INDEX runs_created_at_idx ON fx_v10.runs USING btree (created_at DESC, id DESC);


--
-- Name: runs_pipeline_created_at_idx; Type: INDEX; Schema: fx_v10; Owner: -
--

CREATE INDEX runs_pipeline_created_at_idx ON fx_v10.runs USING btree (pipeline, created_at DESC, id DESC);


--
-- Name: batch_items batch_items_batch_id_fkey; Type: FK CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.batch_items
    ADD CONSTRAINT batch_items_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES fx_v10.batches(id) ON DELETE CASCADE;


--
-- Name: bookmark_tags bookmark_tags_bookmark_id_fkey; Type: FK CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.bookmark_tags
    ADD CONSTRAINT bookmark_tags_bookmark_id_fkey FOREIGN KEY (bookmark_id) REFERENCES fx_v10.bookmarks(id) ON DELETE CASCADE;


--
-- Name: conversation_messages conversation_messages_conversation_id_fkey; Type: FK CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.conversation_messages
    ADD CONSTRAINT conversation_messages_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES fx_v10.conversations(id) ON DELETE CASCADE;


--
-- Name: run_events run_events_run_id_fkey; Type: FK CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.run_events
    ADD CONSTRAINT run_events_run_id_fkey FOREIGN KEY (run_id) REFERENCES fx_v10.runs(id) ON DELETE CASCADE;


--
-- Name: run_leases run_leases_run_id_fkey; Type: FK CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.run_leases
    ADD CONSTRAINT run_leases_run_id_fkey FOREIGN KEY (run_id) REFERENCES fx_v10.runs(id) ON DELETE CASCADE;


--
-- Name: steps steps_run_id_fkey; Type: FK CONSTRAINT; Schema: fx_v10; Owner: -
--

ALTER TABLE ONLY fx_v10.steps
    ADD CONSTRAINT steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES fx_v10.runs(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

\unrestrict btWsJaeKe1AXxVVYhhOA28Q7tfctsBUxRUoXJ98H2QfMCsCQWrzq8Rn0nLWzCUH

