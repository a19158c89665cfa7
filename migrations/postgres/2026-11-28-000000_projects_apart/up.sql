-- Projects apart (see the SQLite migration): a run's name is unique within its project;
-- `init`'s `configPath`, stored and never read, is gone. The unique index also serves the
-- lookups by project that `idx_runs_project` served.
ALTER TABLE runs DROP CONSTRAINT runs_alias_key;
ALTER TABLE runs ADD CONSTRAINT runs_project_alias_key UNIQUE (project_id, alias);
DROP INDEX idx_runs_project;
ALTER TABLE projects DROP COLUMN config_path;
