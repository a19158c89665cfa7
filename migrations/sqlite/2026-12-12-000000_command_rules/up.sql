-- "Allow always": a person's rules of a project, each a pattern over a command line
-- (`agent::allow`); a command of `sh` or `env` that a loop of that person proposes and one
-- of their rules matches is accepted without asking. `person` is whose rule it is ('' for
-- the operator), `made_by` who made it (the same person, accepting a command with
-- `always`), `made_at` when.
CREATE TABLE command_rules (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    person     TEXT NOT NULL,
    pattern    TEXT NOT NULL CHECK (length(pattern) >= 1),
    made_by    TEXT NOT NULL,
    made_at    TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (project_id, person, pattern)
);

-- How many rules the project has, kept by the units that add and revoke them: a loop reads
-- it with its project's row, so a project without rules costs no lookup per proposal.
ALTER TABLE projects ADD COLUMN command_rules INTEGER NOT NULL DEFAULT 0;
