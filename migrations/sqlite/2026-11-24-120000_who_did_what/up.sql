-- Who did what: the person who created a run, who queued each loop, and who resolved a
-- proposal or aborted a loop. NULL: the operator (the shared token, or a server without
-- tokens), who is nobody in particular.
ALTER TABLE runs ADD COLUMN created_by TEXT;
ALTER TABLE loops ADD COLUMN requested_by TEXT;

CREATE TABLE run_actions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id    INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    person     TEXT,
    action     TEXT NOT NULL CHECK (action IN ('accept', 'reject', 'error', 'abort')),
    path       TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX idx_run_actions_run ON run_actions (run_id, id);
