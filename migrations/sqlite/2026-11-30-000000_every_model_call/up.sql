-- Every answered model call of a run is recorded here, its turns' too (`purpose` 'turn'), by
-- the provider path that made it: one ledger of what a run spent. A turn's own usage stays
-- on its `turns` row, which is what a run's usage counts for its turns. SQLite cannot change
-- a CHECK, so the table is built again; turns answered before are recorded from their rows
-- (those that reported usage).
CREATE TABLE model_calls_every (
    id                INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id           INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    -- The call's turn: a turn's own number, or the run's latest turn (0 before its first).
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
INSERT INTO model_calls_every SELECT * FROM model_calls;
DROP TABLE model_calls;
ALTER TABLE model_calls_every RENAME TO model_calls;
CREATE INDEX idx_model_calls_run ON model_calls (run_id);
INSERT INTO model_calls (run_id, loop_id, turn, purpose, prompt_tokens, cached_tokens,
                         completion_tokens, reasoning_tokens, total_tokens, cost, created_at)
SELECT run_id, loop_id, sequence, 'turn', prompt_tokens, cached_tokens, completion_tokens,
       reasoning_tokens, total_tokens, MAX(cost, 0), created_at
FROM turns
WHERE prompt_tokens > 0 OR completion_tokens > 0 OR cost > 0
ORDER BY id;
