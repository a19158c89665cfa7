-- Back to server-wide run names (fails if two projects now share one) and a config path.
PRAGMA foreign_keys = OFF;
BEGIN;

ALTER TABLE projects ADD COLUMN config_path TEXT;

CREATE TEMP TABLE runs_sequence AS SELECT seq FROM sqlite_sequence WHERE name = 'runs';

CREATE TABLE runs_global (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id    INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    parent_run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    model         TEXT,
    status        INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    alias         TEXT NOT NULL UNIQUE CHECK (length(alias) BETWEEN 1 AND 256),
    temperature   REAL CHECK (temperature IS NULL OR temperature BETWEEN 0 AND 2),
    persona       TEXT,
    context_limit INTEGER CHECK (context_limit IS NULL OR context_limit >= 1024),
    next_turn     INTEGER NOT NULL DEFAULT 1 CHECK (next_turn >= 1),
    next_loop     INTEGER NOT NULL DEFAULT 1 CHECK (next_loop >= 1),
    created_at    TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    created_by    TEXT,
    delegated_by  INTEGER REFERENCES runs (id) ON DELETE SET NULL
);

INSERT INTO runs_global SELECT * FROM runs;
DROP TABLE runs;
ALTER TABLE runs_global RENAME TO runs;
CREATE INDEX idx_runs_project ON runs (project_id);

UPDATE sqlite_sequence SET seq = max(seq, (SELECT seq FROM runs_sequence))
WHERE name = 'runs' AND EXISTS (SELECT 1 FROM runs_sequence);
DROP TABLE runs_sequence;

CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
WHEN NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status IN (200, 413, 500) AND NEW.status IN (102, 499))
    OR (OLD.status = 499 AND NEW.status = 102)
)
BEGIN
    SELECT RAISE(ABORT, 'invalid run state transition');
END;

COMMIT;
PRAGMA foreign_keys = ON;
