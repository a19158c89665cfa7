-- A run a sub-agent runs for a parent's sub-task: the parent run that delegated it. Not
-- `parent_run_id`, which names the run a fork copied its store from: a delegated run starts
-- from the few entries its parent passed, and clients tell the two apart.
ALTER TABLE runs ADD COLUMN delegated_by INTEGER REFERENCES runs (id) ON DELETE SET NULL;
