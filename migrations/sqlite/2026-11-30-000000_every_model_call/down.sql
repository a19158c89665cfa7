CREATE TABLE model_calls_beside (
    id                INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id           INTEGER REFERENCES loops (id) ON DELETE SET NULL,
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
INSERT INTO model_calls_beside SELECT * FROM model_calls WHERE purpose <> 'turn';
DROP TABLE model_calls;
ALTER TABLE model_calls_beside RENAME TO model_calls;
CREATE INDEX idx_model_calls_run ON model_calls (run_id);
