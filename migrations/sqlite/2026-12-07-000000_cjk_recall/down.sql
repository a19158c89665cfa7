DROP TRIGGER trg_memory_facts_fts_insert;
DROP TRIGGER trg_memory_facts_fts_delete;
DROP TRIGGER trg_memory_facts_fts_update;
DROP TRIGGER trg_memory_history_fts_insert;
DROP TRIGGER trg_memory_history_fts_delete;
DROP TABLE memory_facts_fts;
DROP TABLE memory_history_fts;

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

INSERT INTO memory_facts_fts (memory_facts_fts) VALUES ('rebuild');
INSERT INTO memory_history_fts (memory_history_fts) VALUES ('rebuild');
