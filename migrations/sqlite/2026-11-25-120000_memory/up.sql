-- Memory across runs. Durable facts live per project (`project_id` set) or in the
-- server-wide layer every project shares (`project_id` NULL); a fact is keyed by its topic
-- within its layer, so a newer fact on a topic replaces the older one, which a trigger keeps
-- in `memory_history`. Both tables are indexed for recall by SQLite FTS5 (external-content
-- tables kept in sync by triggers). A project listed in `memory_disabled` has its memory
-- switched off: nothing is recalled or written for it.

-- Entries of the `memory` scheme (what was recalled for a run) render in a section of their
-- own: the category list grows by one, which in SQLite means rebuilding the small `schemes`
-- table, and the views that read it with it.
DROP VIEW v_model_context;
DROP VIEW v_run_log;

CREATE TABLE schemes_with_memory (
    name          TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    model_visible BOOLEAN NOT NULL DEFAULT 1 CHECK (model_visible IN (0, 1)),
    category      TEXT NOT NULL DEFAULT 'logging'
                  CHECK (category IN ('data', 'logging', 'unknown', 'prompt', 'audit', 'memory'))
);
INSERT INTO schemes_with_memory (name, model_visible, category)
SELECT name, model_visible, category FROM schemes;
DROP TABLE schemes;
ALTER TABLE schemes_with_memory RENAME TO schemes;
INSERT INTO schemes (name, model_visible, category) VALUES ('memory', 1, 'memory');

CREATE VIEW v_model_context AS
SELECT
    e.id AS entry_id,
    e.run_id,
    e.path,
    e.scheme,
    e.fidelity,
    e.status,
    CASE WHEN e.fidelity = 'index' THEN '' ELSE e.body END AS body,
    e.attributes,
    s.category,
    e.turn,
    ROW_NUMBER() OVER (
        PARTITION BY e.run_id
        ORDER BY
            CASE s.category WHEN 'data' THEN 2 WHEN 'logging' THEN 3 WHEN 'unknown' THEN 4 ELSE 5 END,
            CASE WHEN e.scheme = 'skill' THEN 0 ELSE 1 END,
            CASE e.fidelity WHEN 'index' THEN 0 WHEN 'summary' THEN 1 ELSE 2 END,
            e.turn,
            e.id
    ) AS ordinal,
    countTokens(CASE WHEN e.fidelity = 'index' THEN '' ELSE e.body END) AS tokens
FROM known_entries AS e
JOIN schemes AS s ON s.name = COALESCE(e.scheme, 'file')
WHERE s.model_visible = 1
  AND e.fidelity <> 'archive'
  AND e.status <> 202;

CREATE VIEW v_run_log AS
SELECT
    e.id,
    e.run_id,
    e.path,
    e.body,
    e.status,
    e.scheme AS tool,
    CAST(COALESCE(
        json_extract(e.attributes, '$.command'),
        json_extract(e.attributes, '$.file'),
        json_extract(e.attributes, '$.path'),
        json_extract(e.attributes, '$.question'),
        ''
    ) AS TEXT) AS target
FROM known_entries AS e
JOIN schemes AS s ON s.name = e.scheme
WHERE e.status <> 202
  AND e.scheme NOT IN ('system', 'reasoning', 'model', 'content');

CREATE TABLE memory_facts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id INTEGER REFERENCES projects (id) ON DELETE CASCADE,
    topic      TEXT NOT NULL CHECK (length(topic) BETWEEN 1 AND 200),
    body       TEXT NOT NULL CHECK (length(body) >= 1),
    -- The run that learned it (NULL: written by a client, or the run is gone).
    run_id     INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    -- Who wrote it through a method (NULL: a run, or the operator).
    person     TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE UNIQUE INDEX idx_memory_facts_topic ON memory_facts (COALESCE(project_id, 0), topic);

CREATE TABLE memory_history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id  INTEGER REFERENCES projects (id) ON DELETE CASCADE,
    topic       TEXT NOT NULL,
    body        TEXT NOT NULL,
    -- 'replaced': a newer fact on its topic took its place; 'narrative': a run's session
    -- narrative (its title, state and work log), moved here when one of its loops ended.
    reason      TEXT NOT NULL CHECK (reason IN ('replaced', 'narrative')),
    run_id      INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    -- When the fact was written, and when it left memory for the history.
    written_at  TEXT NOT NULL,
    archived_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX idx_memory_history_project ON memory_history (project_id, id);

-- A fact whose body changes leaves its older body in the history.
CREATE TRIGGER trg_memory_fact_replaced
AFTER UPDATE OF body ON memory_facts
WHEN NEW.body <> OLD.body
BEGIN
    INSERT INTO memory_history (project_id, topic, body, reason, run_id, written_at)
    VALUES (OLD.project_id, OLD.topic, OLD.body, 'replaced', OLD.run_id, OLD.updated_at);
END;

CREATE TABLE memory_disabled (
    project_id  INTEGER PRIMARY KEY NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    person      TEXT,
    disabled_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- The FTS5 indexes recall scores with bm25, kept in sync by triggers (PostgreSQL: a tsvector
-- column per table, in the migration of the same version).
CREATE VIRTUAL TABLE memory_facts_fts USING fts5 (
    topic, body, content = 'memory_facts', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER trg_memory_facts_fts_insert AFTER INSERT ON memory_facts BEGIN
    INSERT INTO memory_facts_fts (rowid, topic, body) VALUES (NEW.id, NEW.topic, NEW.body);
END;

CREATE TRIGGER trg_memory_facts_fts_delete AFTER DELETE ON memory_facts BEGIN
    INSERT INTO memory_facts_fts (memory_facts_fts, rowid, topic, body)
    VALUES ('delete', OLD.id, OLD.topic, OLD.body);
END;

CREATE TRIGGER trg_memory_facts_fts_update AFTER UPDATE OF topic, body ON memory_facts BEGIN
    INSERT INTO memory_facts_fts (memory_facts_fts, rowid, topic, body)
    VALUES ('delete', OLD.id, OLD.topic, OLD.body);
    INSERT INTO memory_facts_fts (rowid, topic, body) VALUES (NEW.id, NEW.topic, NEW.body);
END;

CREATE VIRTUAL TABLE memory_history_fts USING fts5 (
    topic, body, content = 'memory_history', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER trg_memory_history_fts_insert AFTER INSERT ON memory_history BEGIN
    INSERT INTO memory_history_fts (rowid, topic, body) VALUES (NEW.id, NEW.topic, NEW.body);
END;

CREATE TRIGGER trg_memory_history_fts_delete AFTER DELETE ON memory_history BEGIN
    INSERT INTO memory_history_fts (memory_history_fts, rowid, topic, body)
    VALUES ('delete', OLD.id, OLD.topic, OLD.body);
END;
