-- Projects apart: a run's name is unique within its project, not across the server (a name
-- taken in another project no longer answers "already taken", which told one project
-- another's run names); and `init`'s `configPath`, stored and never read, is gone.
--
-- SQLite cannot drop the inline UNIQUE of `runs.alias`: the table is rebuilt (SQLite's
-- twelve steps, foreign keys off so that dropping the old table deletes nothing through
-- them), keeping its ids and its AUTOINCREMENT high-water mark.
PRAGMA foreign_keys = OFF;
BEGIN;

CREATE TEMP TABLE runs_sequence AS SELECT seq FROM sqlite_sequence WHERE name = 'runs';

CREATE TABLE runs_apart (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id    INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    parent_run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    model         TEXT,
    status        INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    alias         TEXT NOT NULL CHECK (length(alias) BETWEEN 1 AND 256),
    temperature   REAL CHECK (temperature IS NULL OR temperature BETWEEN 0 AND 2),
    persona       TEXT,
    context_limit INTEGER CHECK (context_limit IS NULL OR context_limit >= 1024),
    next_turn     INTEGER NOT NULL DEFAULT 1 CHECK (next_turn >= 1),
    next_loop     INTEGER NOT NULL DEFAULT 1 CHECK (next_loop >= 1),
    created_at    TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    created_by    TEXT,
    delegated_by  INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    UNIQUE (project_id, alias)
);

INSERT INTO runs_apart (id, project_id, parent_run_id, model, status, alias, temperature,
                        persona, context_limit, next_turn, next_loop, created_at, created_by,
                        delegated_by)
SELECT id, project_id, parent_run_id, model, status, alias, temperature, persona,
       context_limit, next_turn, next_loop, created_at, created_by, delegated_by
FROM runs;

DROP TABLE runs;
ALTER TABLE runs_apart RENAME TO runs;

UPDATE sqlite_sequence SET seq = max(seq, (SELECT seq FROM runs_sequence))
WHERE name = 'runs' AND EXISTS (SELECT 1 FROM runs_sequence);
INSERT INTO sqlite_sequence (name, seq)
SELECT 'runs', seq FROM runs_sequence
WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'runs');
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

ALTER TABLE projects DROP COLUMN config_path;

COMMIT;
PRAGMA foreign_keys = ON;
