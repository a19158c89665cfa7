ALTER TABLE projects ADD COLUMN config_path TEXT;
CREATE INDEX idx_runs_project ON runs (project_id);
ALTER TABLE runs DROP CONSTRAINT runs_project_alias_key;
ALTER TABLE runs ADD CONSTRAINT runs_alias_key UNIQUE (alias);
