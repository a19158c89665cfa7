-- Webhooks (see the SQLite migration of the same version, which says what each column is).
CREATE TABLE webhooks (
    id         TEXT PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL,
    format     TEXT NOT NULL,
    secret     TEXT NOT NULL,
    created_by TEXT,
    created_ms BIGINT NOT NULL
);
CREATE INDEX idx_webhooks_project ON webhooks (project_id);

CREATE TABLE webhook_deliveries (
    id            BIGSERIAL PRIMARY KEY,
    webhook_id    TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    run_id        BIGINT REFERENCES runs (id) ON DELETE CASCADE,
    event         TEXT NOT NULL,
    detail        TEXT NOT NULL,
    title         TEXT,
    who           TEXT,
    created_ms    BIGINT NOT NULL,
    state         INTEGER NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_ms       BIGINT NOT NULL,
    claimed_by    TEXT,
    claimed_until BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX idx_webhook_deliveries_due ON webhook_deliveries (state, next_ms);
CREATE INDEX idx_webhook_deliveries_hook ON webhook_deliveries (webhook_id, id);
CREATE INDEX idx_webhook_deliveries_created ON webhook_deliveries (created_ms);

CREATE TABLE webhook_attempts (
    id          BIGSERIAL PRIMARY KEY,
    delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at_ms       BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    status      INTEGER,
    error       TEXT
);
CREATE INDEX idx_webhook_attempts_delivery ON webhook_attempts (delivery_id, attempt);

-- A run's end becomes a delivery for each webhook of its project sent its event (the SQLite
-- migration says which), in the unit of work that writes it to the event log.
CREATE FUNCTION webhook_outbox() RETURNS trigger AS $$
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
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER trg_webhook_outbox
AFTER INSERT ON run_events
FOR EACH ROW
WHEN (substr(NEW.frame, 1, 40) = '{"jsonrpc":"2.0","method":"run/outcome",')
EXECUTE FUNCTION webhook_outbox();
