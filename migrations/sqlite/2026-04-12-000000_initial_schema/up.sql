-- rummy's whole persistent state. Everything the model sees lives in known_entries; the other
-- tables are the skeleton (projects > runs > loops > turns) plus configuration and audit.
-- Statuses are HTTP-like integers. Functions schemeOf and countTokens are registered by the
-- server on every connection before this migration runs.

-- The scheme registry: which entry schemes exist, whether the model may see them, and which
-- section of the context they render in. Bare paths (files) join through the `file` row.
CREATE TABLE schemes (
    name          TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    model_visible BOOLEAN NOT NULL DEFAULT 1 CHECK (model_visible IN (0, 1)),
    category      TEXT NOT NULL DEFAULT 'logging'
                  CHECK (category IN ('data', 'logging', 'unknown', 'prompt', 'audit'))
);

INSERT INTO schemes (name, model_visible, category) VALUES
    ('instructions', 0, 'audit'),
    ('system',       0, 'audit'),
    ('reasoning',    0, 'audit'),
    ('model',        0, 'audit'),
    ('error',        0, 'audit'),
    ('user',         0, 'audit'),
    ('assistant',    0, 'audit'),
    ('content',      0, 'audit'),
    ('prompt',       1, 'prompt'),
    ('progress',     1, 'prompt'),
    ('file',         1, 'data'),
    ('http',         1, 'data'),
    ('https',        1, 'data'),
    ('known',        1, 'data'),
    ('skill',        1, 'data'),
    ('unknown',      1, 'unknown'),
    ('get',          1, 'logging'),
    ('set',          1, 'logging'),
    ('rm',           1, 'logging'),
    ('cp',           1, 'logging'),
    ('mv',           1, 'logging'),
    ('sh',           1, 'logging'),
    ('env',          1, 'logging'),
    ('ask_user',     1, 'logging'),
    ('summarize',    1, 'logging'),
    ('update',       1, 'logging'),
    ('budget',       1, 'logging'),
    ('search',       1, 'logging'),
    ('think',        0, 'logging');

CREATE TABLE projects (
    id           INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name         TEXT NOT NULL UNIQUE CHECK (length(name) >= 1),
    project_root TEXT,
    config_path  TEXT,
    created_at   TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE models (
    id             INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    alias          TEXT NOT NULL UNIQUE CHECK (length(alias) >= 1),
    actual         TEXT NOT NULL CHECK (length(actual) >= 1),
    context_length INTEGER CHECK (context_length IS NULL OR context_length >= 1),
    created_at     TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id    INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    parent_run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    model         TEXT,
    status        INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    alias         TEXT NOT NULL UNIQUE CHECK (length(alias) BETWEEN 1 AND 256),
    temperature   REAL CHECK (temperature IS NULL OR temperature BETWEEN 0 AND 2),
    persona       TEXT,
    context_limit INTEGER CHECK (context_limit IS NULL OR context_limit >= 1024),
    next_turn     INTEGER NOT NULL DEFAULT 1 CHECK (next_turn >= 1),
    next_loop     INTEGER NOT NULL DEFAULT 1 CHECK (next_loop >= 1),
    created_at    TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX idx_runs_project ON runs (project_id);

-- The run state machine, in one place. 102 is running, 200 completed, 202 waiting on
-- proposals, 413 context overflow that could not be recovered, 499 aborted, 500 failed.
-- Every terminal state may go back to running: runs are long-lived.
CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
WHEN NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status IN (200, 413, 500) AND NEW.status IN (102, 499))
    OR (OLD.status = 499 AND NEW.status = 102)
)
BEGIN
    SELECT RAISE(ABORT, 'invalid run state transition');
END;

-- The prompt queue. Claims go by priority (a panic loop and its retry jump the queue), then
-- FIFO by id. At most one loop per run is running.
CREATE TABLE loops (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sequence   INTEGER NOT NULL CHECK (sequence >= 1),
    mode       TEXT NOT NULL CHECK (mode IN ('ask', 'act', 'panic')),
    model      TEXT,
    prompt     TEXT NOT NULL DEFAULT '',
    priority   INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 2),
    status     INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    config     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
    result     TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (run_id, sequence)
);

CREATE UNIQUE INDEX idx_loops_one_active ON loops (run_id) WHERE status = 102;
CREATE INDEX idx_loops_claim ON loops (run_id, status, priority, id);

-- Pending (100) loops are claimed (102), and a claimed loop either finishes with its outcome
-- or goes back to pending when the server stops under it. Finished loops never change.
CREATE TRIGGER trg_loop_state_transition
BEFORE UPDATE OF status ON loops
WHEN NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 499))
    OR (OLD.status = 102 AND NEW.status IN (100, 200, 202, 413, 499, 500))
)
BEGIN
    SELECT RAISE(ABORT, 'invalid loop state transition');
END;

CREATE TABLE turns (
    id                INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id           INTEGER NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    sequence          INTEGER NOT NULL CHECK (sequence >= 1),
    context_tokens    INTEGER NOT NULL DEFAULT 0 CHECK (context_tokens >= 0),
    reasoning_content TEXT,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    total_tokens      INTEGER NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    cost              REAL NOT NULL DEFAULT 0 CHECK (cost >= 0),
    created_at        TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE UNIQUE INDEX idx_turns_run_sequence ON turns (run_id, sequence);
CREATE INDEX idx_turns_loop ON turns (loop_id);

CREATE TABLE file_constraints (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    pattern    TEXT NOT NULL CHECK (length(pattern) BETWEEN 1 AND 2048),
    visibility TEXT NOT NULL CHECK (visibility IN ('active', 'readonly', 'ignore')),
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    UNIQUE (project_id, pattern)
);

-- The store. `tokens_full` is the cost of the raw body, `tokens` the display cost at the
-- current fidelity (the summary attribute, else the first 80 characters, at summary; nothing
-- at index or archive); both are computed by SQLite, whoever writes.
CREATE TABLE known_entries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id     INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    turn        INTEGER NOT NULL DEFAULT 0 CHECK (turn >= 0),
    path        TEXT NOT NULL CHECK (length(path) BETWEEN 1 AND 2048),
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
                        CAST(json_extract(attributes, '$.summary') AS TEXT), substr(body, 1, 80)))
                    ELSE 0 END) STORED NOT NULL,
    tokens_full INTEGER GENERATED ALWAYS AS (countTokens(body)) STORED NOT NULL,
    refs        INTEGER NOT NULL DEFAULT 0 CHECK (refs >= 0),
    write_count INTEGER NOT NULL DEFAULT 1 CHECK (write_count >= 1),
    created_at  TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at  TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE UNIQUE INDEX idx_known_entries_run_path ON known_entries (run_id, path);
CREATE INDEX idx_known_entries_run_scheme_status ON known_entries (run_id, scheme, status);
CREATE INDEX idx_known_entries_run_turn ON known_entries (run_id, turn);

-- What the model saw on one turn: the projected rows, in context order.
CREATE TABLE turn_context (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id     INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    turn        INTEGER NOT NULL CHECK (turn >= 1),
    ordinal     INTEGER NOT NULL CHECK (ordinal >= 0),
    path        TEXT NOT NULL,
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
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id INTEGER REFERENCES projects (id) ON DELETE SET NULL,
    method     TEXT NOT NULL,
    rpc_id     TEXT,
    params     TEXT,
    result     TEXT,
    error      TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX idx_rpc_log_project ON rpc_log (project_id);
CREATE INDEX idx_rpc_log_method ON rpc_log (method);

-- Proposals waiting for the client.
CREATE VIEW v_unresolved AS
SELECT id, run_id, path, body, attributes, turn
FROM known_entries
WHERE status = 202;

-- The rows the model can see, in context order: by section (data, logging, unknown, prompt),
-- skills first among data, then by fidelity group (index, summary, full), then
-- chronologically by the turn of the last touch and insertion order. Unregistered schemes,
-- invisible schemes, archived entries and pending proposals are left out; an index-fidelity
-- row shows its path only.
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
WHERE s.model_visible = 1
  AND e.fidelity <> 'archive'
  AND e.status <> 202;

-- A run's history for clients: every scheme entry except pending proposals and the bulky
-- audit copies of what was sent and received.
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
