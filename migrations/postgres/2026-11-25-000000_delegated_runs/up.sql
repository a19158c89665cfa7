-- A run a sub-agent runs for a parent's sub-task: the parent run that delegated it (see the
-- SQLite migration of the same version).
ALTER TABLE runs ADD COLUMN delegated_by BIGINT REFERENCES runs (id) ON DELETE SET NULL;
