-- Webhooks (README "Webhooks", `webhooks`): a project's HTTP endpoints, set by admins, each
-- sent the events it names; an outbox of deliveries, written in the unit of work that makes
-- the event and delivered by a background worker on any instance; and each delivery's
-- attempts.
--
-- `events`: the events it is sent, each between commas (',run.finished,cap.warning,').
-- `secret`: the key its requests are signed with (HMAC-SHA256), shown once when added.
CREATE TABLE webhooks (
    id         TEXT PRIMARY KEY NOT NULL,
    project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL,
    format     TEXT NOT NULL,
    secret     TEXT NOT NULL,
    created_by TEXT,
    created_ms INTEGER NOT NULL
);
CREATE INDEX idx_webhooks_project ON webhooks (project_id);

-- One event for one webhook. Its id (never reused) is the delivery id receivers deduplicate
-- by. `detail`: what the event says (the run/outcome frame, or a cap's standing as JSON).
-- `state`: 0 pending, 1 delivered, 2 given up. A worker claims a pending one due at
-- `next_ms` while no claim holds it (`claimed_until`, ms), records the attempt and
-- releases it, delivered, given up or due again later.
CREATE TABLE webhook_deliveries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id    TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    run_id        INTEGER REFERENCES runs (id) ON DELETE CASCADE,
    event         TEXT NOT NULL,
    detail        TEXT NOT NULL,
    title         TEXT,
    who           TEXT,
    created_ms    INTEGER NOT NULL,
    state         INTEGER NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_ms       INTEGER NOT NULL,
    claimed_by    TEXT,
    claimed_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_webhook_deliveries_due ON webhook_deliveries (state, next_ms);
CREATE INDEX idx_webhook_deliveries_hook ON webhook_deliveries (webhook_id, id);
CREATE INDEX idx_webhook_deliveries_created ON webhook_deliveries (created_ms);

-- One attempt of a delivery: when (ms), how long it took, and the receiver's status code or
-- why there was none.
CREATE TABLE webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at_ms       INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    status      INTEGER,
    error       TEXT
);
CREATE INDEX idx_webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);

-- A run's end (run/outcome) becomes a delivery for each webhook of its project that is sent
-- its event, in the unit of work that writes it to the event log: 202 approval.pending,
-- 200 run.finished, 500 and 413 run.failed, 402 cap.reached (a loop stopped by a spend
-- cap). A project without webhooks writes nothing (an index probe finds none). Sub-agents'
-- runs are left out.
CREATE TRIGGER trg_webhook_outbox
AFTER INSERT ON run_events
WHEN substr(NEW.frame, 1, 40) = '{"jsonrpc":"2.0","method":"run/outcome",'
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, run_id, event, detail, title, who, created_ms, next_ms)
    SELECT w.id, NEW.run_id, ended.event, NEW.frame,
           (SELECT substr(prompt, 1, 200) FROM loops
             WHERE run_id = NEW.run_id ORDER BY sequence LIMIT 1),
           (SELECT requested_by FROM loops
             WHERE run_id = NEW.run_id ORDER BY sequence DESC LIMIT 1),
           NEW.created_ms, NEW.created_ms
      FROM runs r
      JOIN webhooks w ON w.project_id = r.project_id
      JOIN (SELECT CASE CAST(json_extract(NEW.frame, '$.params.status') AS INTEGER)
                       WHEN 202 THEN 'approval.pending'
                       WHEN 200 THEN 'run.finished'
                       WHEN 500 THEN 'run.failed'
                       WHEN 413 THEN 'run.failed'
                       WHEN 402 THEN 'cap.reached'
                   END AS event) ended
        ON w.events LIKE '%,' || ended.event || ',%'
     WHERE r.id = NEW.run_id AND r.delegated_by IS NULL;
END;
