-- The web console's sign-ins. A session id is never stored: only its SHA-256 (hex), so a
-- copy of the database opens nothing. Signing out deletes the row, which ends the session
-- on every instance sharing the store.
CREATE TABLE console_sessions (
    id_hash    TEXT PRIMARY KEY NOT NULL,
    -- Whom it acts for (NULL: the operator, signed in with the shared token).
    person     TEXT,
    -- The SHA-256 (hex) of the token signed in with: once that token no longer opens the
    -- server (changed in the users file, a new shared token) the session opens nothing.
    token_hash TEXT NOT NULL,
    -- Unix seconds after which it opens nothing.
    expires_at BIGINT NOT NULL
);
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);
