-- rummy's whole persistent state on PostgreSQL: the same tables, constraints, triggers and
-- views as the SQLite migrations (migrations/sqlite/, up to 2026-11-24-120000_who_did_what),
-- in one step. Later changes come as a migration in each folder, with the same version.
--
-- First the SQLite functions rummy's SQL and schema use, with SQLite's results, so each
-- query is written once: schemeOf and countTokens (registered from Rust on SQLite),
-- datetime('now'[, modifier]) as UTC text, json_valid, json_type, json_extract for `$.a.b`
-- paths, and json_patch (RFC 7396 merge patch). Timestamps are TEXT in SQLite's
-- 'YYYY-MM-DD HH:MM:SS' UTC form; JSON is TEXT, checked as SQLite checks it. Paths sort
-- byte by byte (COLLATE "C"), as SQLite's BINARY collation does.

-- The text before the first '://' when it is not empty; NULL for bare paths.
CREATE FUNCTION schemeOf(path TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(path, '://') > 1 THEN substr(path, 1, strpos(path, '://') - 1) END
$$;

-- ceil(characters / divisor), 0 for NULL. The divisor is the connection's setting
-- rummy.token_divisor (RUMMY_TOKEN_DIVISOR, set when rummy connects; 4 without it), as
-- SQLite's countTokens is registered per connection: declared IMMUTABLE so that generated
-- columns may use it, which holds for a server that keeps one divisor.
CREATE FUNCTION countTokens(body TEXT) RETURNS INTEGER
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN body IS NULL THEN 0 ELSE
        ((char_length(body) + divisor - 1) / divisor)::INTEGER END
    FROM (SELECT greatest(1, COALESCE(
        NULLIF(current_setting('rummy.token_divisor', true), '')::INTEGER, 4)) AS divisor) AS setting
$$;

-- SQLite's datetime('now') and datetime('now', '-3 days'): UTC text to the second.
CREATE FUNCTION datetime(time_value TEXT, modifier TEXT DEFAULT '0 seconds') RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF time_value <> 'now' THEN
        RAISE EXCEPTION 'datetime: only ''now'' is supported, not %', time_value;
    END IF;
    RETURN to_char((now() AT TIME ZONE 'UTC') + modifier::INTERVAL, 'YYYY-MM-DD HH24:MI:SS');
END
$$;

-- Whether the text is well-formed JSON; NULL for NULL.
CREATE FUNCTION json_valid(value TEXT) RETURNS BOOLEAN
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    PERFORM value::JSON;
    RETURN TRUE;
EXCEPTION WHEN others THEN
    RETURN FALSE;
END
$$;

-- SQLite's json_type names: object, array, text, integer, real, true, false, null.
CREATE FUNCTION json_type(value TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE json_typeof(value::JSON)
        WHEN 'string' THEN 'text'
        WHEN 'number' THEN CASE WHEN value::JSONB::TEXT ~ '^-?[0-9]+$' THEN 'integer' ELSE 'real' END
        WHEN 'boolean' THEN value::JSONB::TEXT
        ELSE json_typeof(value::JSON) END
$$;

-- The value at a `$.key.key` path: a string as its text, anything else as JSON text,
-- NULL when missing or JSON null.
CREATE FUNCTION json_extract(value TEXT, path TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE json_typeof(found)
        WHEN 'string' THEN found #>> '{}'
        WHEN 'null' THEN NULL
        ELSE found::TEXT END
    FROM (SELECT value::JSON #> string_to_array(substr(path, 3), '.') AS found) AS lookup
$$;

-- SQLite's json_patch: RFC 7396 (the patch's members replace the target's, recursively; a
-- null removes a member; a patch that is not an object replaces the target), keeping the
-- target's members in their order, then the new ones in the patch's, as compact text.
CREATE FUNCTION json_patch(target TEXT, patch TEXT) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    members TEXT[] := '{}';
    member RECORD;
    patched JSON;
BEGIN
    IF json_typeof(patch::JSON) <> 'object' THEN
        RETURN patch;
    END IF;
    IF json_typeof(target::JSON) <> 'object' THEN
        target := '{}';
    END IF;
    FOR member IN SELECT key, value FROM json_each(target::JSON) LOOP
        patched := patch::JSON -> member.key;
        IF patched IS NULL THEN
            members := members || (to_json(member.key)::TEXT || ':' || member.value::TEXT);
        ELSIF json_typeof(patched) <> 'null' THEN
            members := members || (to_json(member.key)::TEXT || ':'
                || json_patch(member.value::TEXT, patched::TEXT));
        END IF;
    END LOOP;
    FOR member IN SELECT key, value FROM json_each(patch::JSON) LOOP
        IF target::JSON -> member.key IS NULL AND json_typeof(member.value) <> 'null' THEN
            members := members || (to_json(member.key)::TEXT || ':'
                || json_patch('{}', member.value::TEXT));
        END IF;
    END LOOP;
    RETURN '{' || array_to_string(members, ',') || '}';
END
$$;

CREATE FUNCTION raise_invalid_transition() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'invalid % state transition', TG_ARGV[0];
END
$$;

CREATE TABLE schemes (
    name          TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    model_visible BOOLEAN NOT NULL DEFAULT TRUE,
    category      TEXT NOT NULL DEFAULT 'logging'
                  CHECK (category IN ('data', 'logging', 'unknown', 'prompt', 'audit'))
);

INSERT INTO schemes (name, model_visible, category) VALUES
    ('instructions', FALSE, 'audit'),
    ('system',       FALSE, 'audit'),
    ('reasoning',    FALSE, 'audit'),
    ('model',        FALSE, 'audit'),
    ('error',        FALSE, 'audit'),
    ('user',         FALSE, 'audit'),
    ('assistant',    FALSE, 'audit'),
    ('content',      FALSE, 'audit'),
    ('prompt',       TRUE,  'prompt'),
    ('progress',     TRUE,  'prompt'),
    ('file',         TRUE,  'data'),
    ('http',         TRUE,  'data'),
    ('https',        TRUE,  'data'),
    ('known',        TRUE,  'data'),
    ('skill',        TRUE,  'data'),
    ('unknown',      TRUE,  'unknown'),
    ('get',          TRUE,  'logging'),
    ('set',          TRUE,  'logging'),
    ('rm',           TRUE,  'logging'),
    ('cp',           TRUE,  'logging'),
    ('mv',           TRUE,  'logging'),
    ('sh',           TRUE,  'logging'),
    ('env',          TRUE,  'logging'),
    ('ask_user',     TRUE,  'logging'),
    ('summarize',    TRUE,  'logging'),
    ('update',       TRUE,  'logging'),
    ('budget',       TRUE,  'logging'),
    ('search',       TRUE,  'logging'),
    ('think',        FALSE, 'logging');

CREATE TABLE projects (
    id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE CHECK (length(name) >= 1),
    project_root TEXT,
    config_path  TEXT,
    created_at   TEXT NOT NULL DEFAULT datetime('now')
);

CREATE TABLE models (
    id             BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    alias          TEXT NOT NULL UNIQUE CHECK (length(alias) >= 1),
    actual         TEXT NOT NULL CHECK (length(actual) >= 1),
    context_length INTEGER CHECK (context_length IS NULL OR context_length >= 1),
    created_at     TEXT NOT NULL DEFAULT datetime('now')
);

CREATE TABLE runs (
    id            BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    project_id    BIGINT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    parent_run_id BIGINT REFERENCES runs (id) ON DELETE SET NULL,
    model         TEXT,
    status        INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    alias         TEXT NOT NULL UNIQUE CHECK (length(alias) BETWEEN 1 AND 256),
    temperature   DOUBLE PRECISION CHECK (temperature IS NULL OR temperature BETWEEN 0 AND 2),
    persona       TEXT,
    context_limit INTEGER CHECK (context_limit IS NULL OR context_limit >= 1024),
    next_turn     INTEGER NOT NULL DEFAULT 1 CHECK (next_turn >= 1),
    next_loop     INTEGER NOT NULL DEFAULT 1 CHECK (next_loop >= 1),
    created_at    TEXT NOT NULL DEFAULT datetime('now'),
    created_by    TEXT
);

CREATE INDEX idx_runs_project ON runs (project_id);

-- The run state machine (see the SQLite migrations): 100 may go to 102, 200 or 499.
CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
FOR EACH ROW
WHEN (NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status IN (200, 413, 500) AND NEW.status IN (102, 499))
    OR (OLD.status = 499 AND NEW.status = 102)
))
EXECUTE FUNCTION raise_invalid_transition('run');

CREATE TABLE loops (
    id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id       BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sequence     INTEGER NOT NULL CHECK (sequence >= 1),
    mode         TEXT NOT NULL CHECK (mode IN ('ask', 'act', 'panic')),
    model        TEXT,
    prompt       TEXT NOT NULL DEFAULT '',
    priority     INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 2),
    status       INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    config       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
    result       TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at   TEXT NOT NULL DEFAULT datetime('now'),
    requested_by TEXT,
    UNIQUE (run_id, sequence)
);

CREATE UNIQUE INDEX idx_loops_one_active ON loops (run_id) WHERE status = 102;
CREATE INDEX idx_loops_claim ON loops (run_id, status, priority, id);

CREATE TRIGGER trg_loop_state_transition
BEFORE UPDATE OF status ON loops
FOR EACH ROW
WHEN (NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 499))
    OR (OLD.status = 102 AND NEW.status IN (100, 200, 202, 413, 499, 500))
))
EXECUTE FUNCTION raise_invalid_transition('loop');

CREATE TABLE turns (
    id                BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id            BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id           BIGINT NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    sequence          INTEGER NOT NULL CHECK (sequence >= 1),
    context_tokens    INTEGER NOT NULL DEFAULT 0 CHECK (context_tokens >= 0),
    reasoning_content TEXT,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    total_tokens      INTEGER NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    cost              DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (cost >= 0),
    created_at        TEXT NOT NULL DEFAULT datetime('now')
);

CREATE UNIQUE INDEX idx_turns_run_sequence ON turns (run_id, sequence);
CREATE INDEX idx_turns_loop ON turns (loop_id);

CREATE TABLE file_constraints (
    id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    pattern    TEXT NOT NULL CHECK (length(pattern) BETWEEN 1 AND 2048),
    visibility TEXT NOT NULL CHECK (visibility IN ('active', 'readonly', 'ignore')),
    created_at TEXT NOT NULL DEFAULT datetime('now'),
    UNIQUE (project_id, pattern)
);

CREATE TABLE known_entries (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id      BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id     BIGINT REFERENCES loops (id) ON DELETE SET NULL,
    turn        INTEGER NOT NULL DEFAULT 0 CHECK (turn >= 0),
    path        TEXT COLLATE "C" NOT NULL CHECK (length(path) BETWEEN 1 AND 2048),
    body        TEXT NOT NULL DEFAULT '',
    scheme      TEXT GENERATED ALWAYS AS (schemeOf(path)) STORED,
    status      INTEGER NOT NULL DEFAULT 200 CHECK (status BETWEEN 100 AND 599),
    fidelity    TEXT NOT NULL DEFAULT 'full'
                CHECK (fidelity IN ('full', 'summary', 'index', 'archive')),
    hash        TEXT,
    attributes  TEXT NOT NULL DEFAULT '{}'
                CHECK (json_valid(attributes) AND json_type(attributes) = 'object'),
    tokens      INTEGER GENERATED ALWAYS AS (CASE fidelity
                    WHEN 'full' THEN countTokens(body)
                    WHEN 'summary' THEN countTokens(COALESCE(
                        json_extract(attributes, '$.summary'), substr(body, 1, 80)))
                    ELSE 0 END) STORED NOT NULL,
    tokens_full INTEGER GENERATED ALWAYS AS (countTokens(body)) STORED NOT NULL,
    refs        INTEGER NOT NULL DEFAULT 0 CHECK (refs >= 0),
    write_count INTEGER NOT NULL DEFAULT 1 CHECK (write_count >= 1),
    created_at  TEXT NOT NULL DEFAULT datetime('now'),
    updated_at  TEXT NOT NULL DEFAULT datetime('now')
);

CREATE UNIQUE INDEX idx_known_entries_run_path ON known_entries (run_id, path);
CREATE INDEX idx_known_entries_run_scheme_status ON known_entries (run_id, scheme, status);
CREATE INDEX idx_known_entries_run_turn ON known_entries (run_id, turn);
CREATE INDEX idx_known_entries_visible ON known_entries (run_id)
WHERE fidelity <> 'archive' AND status <> 202;

-- The change log for entry.changed (src/db/entry_changes.rs): a connection that created the
-- temporary table entry_changes (the writer) gets each change to an entry logged in it, by
-- the same rules as the SQLite connection's temporary triggers; any other writes nothing.
CREATE FUNCTION log_entry_change() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    change TEXT;
BEGIN
    IF to_regclass('pg_temp.entry_changes') IS NULL THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO pg_temp.entry_changes (run_id, path, change_type)
        VALUES (NEW.run_id, NEW.path, 'upsert');
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO pg_temp.entry_changes (run_id, path, change_type)
        VALUES (OLD.run_id, OLD.path, 'remove');
    ELSIF NEW.path <> OLD.path OR NEW.run_id <> OLD.run_id THEN
        INSERT INTO pg_temp.entry_changes (run_id, path, change_type)
        VALUES (OLD.run_id, OLD.path, 'remove');
        INSERT INTO pg_temp.entry_changes (run_id, path, change_type)
        VALUES (NEW.run_id, NEW.path, 'upsert');
    ELSE
        change := CASE
            WHEN NEW.write_count <> OLD.write_count THEN 'upsert'
            WHEN NEW.status <> OLD.status THEN 'resolve'
            WHEN NEW.fidelity <> OLD.fidelity THEN
                CASE NEW.fidelity WHEN 'full' THEN 'promote' WHEN 'archive' THEN 'demote'
                    ELSE 'fidelity' END
            WHEN NEW.body <> OLD.body THEN 'body'
            WHEN NEW.attributes <> OLD.attributes THEN 'attributes'
            WHEN NEW.turn <> OLD.turn THEN 'promote'
        END;
        IF change IS NOT NULL THEN
            INSERT INTO pg_temp.entry_changes (run_id, path, change_type)
            VALUES (NEW.run_id, NEW.path, change);
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_entry_changes
AFTER INSERT OR UPDATE OR DELETE ON known_entries
FOR EACH ROW EXECUTE FUNCTION log_entry_change();

CREATE TABLE turn_context (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id      BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id     BIGINT REFERENCES loops (id) ON DELETE SET NULL,
    turn        INTEGER NOT NULL CHECK (turn >= 1),
    ordinal     INTEGER NOT NULL CHECK (ordinal >= 0),
    path        TEXT COLLATE "C" NOT NULL,
    scheme      TEXT GENERATED ALWAYS AS (schemeOf(path)) STORED,
    status      INTEGER NOT NULL DEFAULT 200 CHECK (status BETWEEN 100 AND 599),
    fidelity    TEXT NOT NULL CHECK (fidelity IN ('full', 'summary', 'index')),
    body        TEXT NOT NULL DEFAULT '',
    tokens      INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    attributes  TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(attributes)),
    category    TEXT NOT NULL DEFAULT 'logging',
    source_turn INTEGER NOT NULL DEFAULT 0 CHECK (source_turn >= 0)
);

CREATE INDEX idx_turn_context_run_turn ON turn_context (run_id, turn);

CREATE TABLE rpc_log (
    id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    project_id   BIGINT REFERENCES projects (id) ON DELETE SET NULL,
    method       TEXT NOT NULL,
    rpc_id       TEXT,
    params       TEXT,
    result       TEXT,
    error        TEXT,
    created_at   TEXT NOT NULL DEFAULT datetime('now'),
    duration_ms  BIGINT,
    status       BIGINT,
    params_bytes BIGINT,
    result_bytes BIGINT,
    run          TEXT,
    person       TEXT
);

CREATE INDEX idx_rpc_log_project ON rpc_log (project_id);
CREATE INDEX idx_rpc_log_method ON rpc_log (method);
CREATE INDEX idx_rpc_log_created_at ON rpc_log (created_at);

CREATE TABLE run_actions (
    id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id     BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id    BIGINT REFERENCES loops (id) ON DELETE SET NULL,
    person     TEXT,
    action     TEXT NOT NULL CHECK (action IN ('accept', 'reject', 'error', 'abort')),
    path       TEXT,
    created_at TEXT NOT NULL DEFAULT datetime('now')
);

CREATE INDEX idx_run_actions_run ON run_actions (run_id, id);

CREATE VIEW v_unresolved AS
SELECT id, run_id, path, body, attributes, turn
FROM known_entries
WHERE status = 202;

CREATE VIEW v_model_context AS
SELECT
    e.id AS entry_id,
    e.run_id,
    e.path,
    e.scheme,
    e.fidelity,
    e.status,
    CASE WHEN e.fidelity = 'index' THEN '' ELSE e.body END AS body,
    e.attributes,
    s.category,
    e.turn,
    ROW_NUMBER() OVER (
        PARTITION BY e.run_id
        ORDER BY
            CASE s.category WHEN 'data' THEN 2 WHEN 'logging' THEN 3 WHEN 'unknown' THEN 4 ELSE 5 END,
            CASE WHEN e.scheme = 'skill' THEN 0 ELSE 1 END,
            CASE e.fidelity WHEN 'index' THEN 0 WHEN 'summary' THEN 1 ELSE 2 END,
            e.turn,
            e.id
    ) AS ordinal,
    countTokens(CASE WHEN e.fidelity = 'index' THEN '' ELSE e.body END) AS tokens
FROM known_entries AS e
JOIN schemes AS s ON s.name = COALESCE(e.scheme, 'file')
WHERE s.model_visible
  AND e.fidelity <> 'archive'
  AND e.status <> 202;

CREATE VIEW v_run_log AS
SELECT
    e.id,
    e.run_id,
    e.path,
    e.body,
    e.status,
    e.scheme AS tool,
    CAST(COALESCE(
        json_extract(e.attributes, '$.command'),
        json_extract(e.attributes, '$.file'),
        json_extract(e.attributes, '$.path'),
        json_extract(e.attributes, '$.question'),
        ''
    ) AS TEXT) AS target
FROM known_entries AS e
JOIN schemes AS s ON s.name = e.scheme
WHERE e.status <> 202
  AND e.scheme NOT IN ('system', 'reasoning', 'model', 'content');
