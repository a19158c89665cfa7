-- The model calls a run makes beside its turns (a turn's own usage is in `turns`): one row
-- per sidecar call, with what it was for and what the provider reported, so a run's usage
-- counts every call made for it and says which purpose each served.
CREATE TABLE model_calls (
    id                INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id           INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    -- The run's latest turn when the call was made (0 before its first).
    turn              INTEGER NOT NULL CHECK (turn >= 0),
    purpose           TEXT NOT NULL CHECK (purpose IN ('session_notes', 'rerank')),
    prompt_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    total_tokens      INTEGER NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    cost              REAL NOT NULL DEFAULT 0 CHECK (cost >= 0),
    created_at        TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX idx_model_calls_run ON model_calls (run_id);
CREATE INDEX idx_runs_delegated_by ON runs (delegated_by);
