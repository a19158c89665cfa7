-- Usage accounting: each answered model call says who it was for (the person who started
-- the run, NULL for the operator or the server), in which project, which model served it,
-- and what it cost in micro-dollars (an integer, so sums and caps compare exactly), fixed
-- when it is recorded. A sub-agent's turns are recorded as 'subagent'. The catalogue keeps
-- a price per model: micro-dollars per million tokens of uncached input, cached input and
-- output. SQLite cannot change a CHECK, so the table is built again; the rows before keep
-- their cost (rounded to the micro-dollar) and take their run's person, project and model.
CREATE TABLE model_calls_priced (
    id                INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id           INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    -- The call's turn: a turn's own number, or the run's latest turn (0 before its first).
    turn              INTEGER NOT NULL CHECK (turn >= 0),
    purpose           TEXT NOT NULL
                      CHECK (purpose IN ('turn', 'session_notes', 'rerank', 'subagent')),
    prompt_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    total_tokens      INTEGER NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    created_at        TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    person            TEXT,
    project_id        INTEGER NOT NULL,
    model             TEXT NOT NULL DEFAULT '',
    cost_micros       INTEGER NOT NULL DEFAULT 0 CHECK (cost_micros >= 0)
);
INSERT INTO model_calls_priced (id, run_id, loop_id, turn, purpose, prompt_tokens, cached_tokens,
                                completion_tokens, reasoning_tokens, total_tokens, created_at,
                                person, project_id, model, cost_micros)
SELECT c.id, c.run_id, c.loop_id, c.turn, c.purpose, c.prompt_tokens, c.cached_tokens,
       c.completion_tokens, c.reasoning_tokens, c.total_tokens, c.created_at,
       r.created_by, r.project_id, COALESCE(m.actual, r.model, ''),
       CAST(ROUND(c.cost * 1000000) AS INTEGER)
FROM model_calls AS c JOIN runs AS r ON r.id = c.run_id
LEFT JOIN models AS m ON m.alias = r.model;
DROP TABLE model_calls;
ALTER TABLE model_calls_priced RENAME TO model_calls;
CREATE INDEX idx_model_calls_run ON model_calls (run_id);
CREATE INDEX idx_model_calls_created ON model_calls (created_at);
CREATE INDEX idx_model_calls_person ON model_calls (person, created_at);
CREATE INDEX idx_model_calls_project ON model_calls (project_id, created_at);
ALTER TABLE models ADD COLUMN input_price INTEGER NOT NULL DEFAULT 0 CHECK (input_price >= 0);
ALTER TABLE models ADD COLUMN cached_price INTEGER NOT NULL DEFAULT 0 CHECK (cached_price >= 0);
ALTER TABLE models ADD COLUMN output_price INTEGER NOT NULL DEFAULT 0 CHECK (output_price >= 0);
