-- Spend caps an admin set at run time (`caps/set`, `llm::stored_caps`): one row per scope
-- ('server', 'project' or 'person') and subject (the project's or person's name; '' for the
-- server), its caps as `usage::CapLimits` JSON. Each of them replaces the configured cap of
-- the same scope, subject, period and unit; the configured ones it does not name stay.
CREATE TABLE stored_caps (
    scope   TEXT NOT NULL CHECK (scope IN ('server', 'project', 'person')),
    subject TEXT NOT NULL,
    caps    TEXT NOT NULL,
    set_by  TEXT NOT NULL,
    set_at  TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (scope, subject)
);

-- Each change an admin made to what the server shares (people, caps): who ('' for the
-- operator), when, what (`action`: the method), to whom or what (`subject`), and its
-- details as JSON, never a token or a secret.
CREATE TABLE admin_changes (
    id      INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    made_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    made_by TEXT NOT NULL,
    action  TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail  TEXT NOT NULL
);
