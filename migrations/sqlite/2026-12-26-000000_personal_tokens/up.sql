-- Personal access tokens: a person mints them for their editors (`tokens/mint`), each
-- acting for its person within its scope (read-only: a viewer at most; one project). A
-- token is never stored: only its SHA-256 (hex), which finds it when it is presented (a
-- token is 256 random bits, so a fast hash is as safe as a slow one), and its first
-- characters, by which its person recognises it. Revoking keeps the row (its audit stays
-- readable); an expired or revoked token opens nothing.
CREATE TABLE personal_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    -- Whose it is: it acts for this person, and opens nothing once they are gone.
    person       TEXT NOT NULL,
    -- What its person called it ("laptop", "CI").
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    -- The token's first characters (`rpat_` and eight hex digits), shown to recognise it.
    prefix       TEXT NOT NULL,
    -- 1: it acts as a viewer at most.
    read_only    BIGINT NOT NULL DEFAULT 0,
    -- The one project it opens (NULL: its person's projects).
    project      TEXT,
    -- Unix seconds, as every time of this table.
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    -- When it last opened a connection or served a call, written at most once a minute.
    last_used_at BIGINT,
    revoked_at   BIGINT,
    -- Who revoked it ('' for the operator).
    revoked_by   TEXT,
    -- When a refused use of it was last audited: at most one a minute reaches the audit.
    refused_at   BIGINT
);
CREATE INDEX personal_tokens_person ON personal_tokens (person);
