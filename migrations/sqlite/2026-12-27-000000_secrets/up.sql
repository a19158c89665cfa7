-- Secrets at rest (`secrets`): each sealed under the server key whose id is beside it, for
-- its row (person, kind, name) only. `person` is '' for the server's own (the admin-set
-- provider keys); `kind` says what it is ('provider': a provider key named by the
-- provider's slug; 'mcp': an MCP server's credential; other parts of the server keep their
-- own kinds). Nothing here is readable without the server key.
CREATE TABLE secrets (
    id           INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    person       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    sealed       BLOB NOT NULL,
    key_id       TEXT NOT NULL,
    created_at   TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at   TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    last_used_at TEXT,
    UNIQUE (person, kind, name)
);
