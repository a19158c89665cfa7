-- What a run changed (`run/changes`, `run/revert`): one row per file an accepted proposal
-- changed, written in the resolution's unit of work (`plugins::engine::changed_files`): the
-- file's content before and after (NULL: it did not exist), the proposal, its loop and turn,
-- and who accepted it. Nothing is written per turn.
CREATE TABLE file_changes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id    INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    turn       INTEGER NOT NULL,
    proposal   TEXT NOT NULL,
    file       TEXT NOT NULL,
    before     TEXT,
    after      TEXT,
    person     TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX idx_file_changes_run ON file_changes (run_id, id);
-- `revert` is one more action a person takes on a run (its CHECK rebuilt: SQLite cannot
-- alter one).
CREATE TABLE run_actions_next (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id    INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    person     TEXT,
    action     TEXT NOT NULL CHECK (action IN ('accept', 'reject', 'error', 'abort', 'cancel', 'revert')),
    path       TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO run_actions_next (id, run_id, loop_id, person, action, path, created_at)
SELECT id, run_id, loop_id, person, action, path, created_at FROM run_actions;
DROP TABLE run_actions;
ALTER TABLE run_actions_next RENAME TO run_actions;
CREATE INDEX idx_run_actions_run ON run_actions (run_id, id);
