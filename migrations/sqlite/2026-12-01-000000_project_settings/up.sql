-- A project's own settings, set by admins with `project/config`: where its accepted commands
-- run and the limits of their sandbox, as a JSON object whose missing keys take the server's
-- defaults. A project without a row has none of its own.
CREATE TABLE project_settings (
    project_id INTEGER PRIMARY KEY NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    settings   TEXT NOT NULL,
    -- Who set them last (NULL: the operator).
    updated_by TEXT,
    updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
