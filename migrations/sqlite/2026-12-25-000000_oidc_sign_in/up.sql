-- How a console session was signed in: 'token' (a token of the users file or the shared
-- token, whose SHA-256 is token_hash) or 'oidc' (through the identity provider, token_hash
-- '': the session lasts while the person is known, `oidc_people` or the users file).
ALTER TABLE console_sessions ADD COLUMN signed_in_with TEXT NOT NULL DEFAULT 'token'
    CHECK (signed_in_with IN ('token', 'oidc'));

-- People who signed in through the identity provider (`console::oidc`): their name (the
-- configured claim), the issuer and subject that named them (a name never passes to another
-- subject), and the groups the provider gave at their last sign-in, from which their role
-- and projects follow by the server's group mapping.
CREATE TABLE oidc_people (
    name         TEXT PRIMARY KEY NOT NULL,
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    -- A JSON array of strings.
    groups       TEXT NOT NULL,
    -- Unix seconds.
    signed_in_at BIGINT NOT NULL
);

-- Sign-ins sent to the identity provider and not back yet: the SHA-256 (hex) of the state
-- and of the browser's binding cookie, the nonce and PKCE verifier. Each is taken once (a
-- replayed state finds nothing) and opens nothing after expires_at (unix seconds).
CREATE TABLE oidc_logins (
    state_hash    TEXT PRIMARY KEY NOT NULL,
    browser_hash  TEXT NOT NULL,
    nonce         TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    expires_at    BIGINT NOT NULL
);
CREATE INDEX oidc_logins_expires_at ON oidc_logins (expires_at);
