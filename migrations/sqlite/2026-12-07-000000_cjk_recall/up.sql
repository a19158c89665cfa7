-- Recall finds text written without spaces between words (Chinese, Japanese, Korean): the
-- FTS5 indexes hold each topic and body as `searchable` rewrites it (a run of such
-- characters as its overlapping pairs: src/db/queries/memory/words.rs, registered on every
-- connection), the same words PostgreSQL's `search` columns hold and a question is searched
-- by. What they index is no longer the text of `memory_facts` and `memory_history`, so they
-- become contentless tables (recall reads the text from the tables themselves); the
-- triggers hand them the rewritten text, and a removal the same text again.
DROP TRIGGER trg_memory_facts_fts_insert;
DROP TRIGGER trg_memory_facts_fts_delete;
DROP TRIGGER trg_memory_facts_fts_update;
DROP TRIGGER trg_memory_history_fts_insert;
DROP TRIGGER trg_memory_history_fts_delete;
DROP TABLE memory_facts_fts;
DROP TABLE memory_history_fts;

CREATE VIRTUAL TABLE memory_facts_fts USING fts5 (
    topic, body, content = '', tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER trg_memory_facts_fts_insert AFTER INSERT ON memory_facts BEGIN
    INSERT INTO memory_facts_fts (rowid, topic, body)
    VALUES (NEW.id, searchable(NEW.topic), searchable(NEW.body));
END;

CREATE TRIGGER trg_memory_facts_fts_delete AFTER DELETE ON memory_facts BEGIN
    INSERT INTO memory_facts_fts (memory_facts_fts, rowid, topic, body)
    VALUES ('delete', OLD.id, searchable(OLD.topic), searchable(OLD.body));
END;

CREATE TRIGGER trg_memory_facts_fts_update AFTER UPDATE OF topic, body ON memory_facts BEGIN
    INSERT INTO memory_facts_fts (memory_facts_fts, rowid, topic, body)
    VALUES ('delete', OLD.id, searchable(OLD.topic), searchable(OLD.body));
    INSERT INTO memory_facts_fts (rowid, topic, body)
    VALUES (NEW.id, searchable(NEW.topic), searchable(NEW.body));
END;

CREATE VIRTUAL TABLE memory_history_fts USING fts5 (
    topic, body, content = '', tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER trg_memory_history_fts_insert AFTER INSERT ON memory_history BEGIN
    INSERT INTO memory_history_fts (rowid, topic, body)
    VALUES (NEW.id, searchable(NEW.topic), searchable(NEW.body));
END;

CREATE TRIGGER trg_memory_history_fts_delete AFTER DELETE ON memory_history BEGIN
    INSERT INTO memory_history_fts (memory_history_fts, rowid, topic, body)
    VALUES ('delete', OLD.id, searchable(OLD.topic), searchable(OLD.body));
END;

-- What is already kept.
INSERT INTO memory_facts_fts (rowid, topic, body)
SELECT id, searchable(topic), searchable(body) FROM memory_facts;
INSERT INTO memory_history_fts (rowid, topic, body)
SELECT id, searchable(topic), searchable(body) FROM memory_history;
