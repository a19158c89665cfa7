DROP TABLE file_changes;
CREATE TABLE run_actions_next (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id    INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    person     TEXT,
    action     TEXT NOT NULL CHECK (action IN ('accept', 'reject', 'error', 'abort', 'cancel')),
    path       TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO run_actions_next (id, run_id, loop_id, person, action, path, created_at)
SELECT id, run_id, loop_id, person, action, path, created_at FROM run_actions
WHERE action <> 'revert';
DROP TABLE run_actions;
ALTER TABLE run_actions_next RENAME TO run_actions;
CREATE INDEX idx_run_actions_run ON run_actions (run_id, id);
