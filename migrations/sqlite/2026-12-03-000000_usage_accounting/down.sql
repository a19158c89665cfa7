ALTER TABLE models DROP COLUMN output_price;
ALTER TABLE models DROP COLUMN cached_price;
ALTER TABLE models DROP COLUMN input_price;
CREATE TABLE model_calls_every (
    id                INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id           INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    turn              INTEGER NOT NULL CHECK (turn >= 0),
    purpose           TEXT NOT NULL CHECK (purpose IN ('turn', 'session_notes', 'rerank')),
    prompt_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    total_tokens      INTEGER NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    cost              REAL NOT NULL DEFAULT 0 CHECK (cost >= 0),
    created_at        TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO model_calls_every
SELECT id, run_id, loop_id, turn, CASE purpose WHEN 'subagent' THEN 'turn' ELSE purpose END,
       prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, total_tokens,
       cost_micros / 1000000.0, created_at
FROM model_calls;
DROP TABLE model_calls;
ALTER TABLE model_calls_every RENAME TO model_calls;
CREATE INDEX idx_model_calls_run ON model_calls (run_id);
