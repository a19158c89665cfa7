-- Spend caps. A loop a cap stops ends 402 (the run too), which a later prompt resumes like a
-- 413 or a 500. A run keeps the caps its starter gave it (JSON: `caps::Limits`). The 80 %
-- warning of a cap is sent once per cap and period: the first to insert its row sends it,
-- whichever instance it runs on.
DROP TRIGGER trg_run_state_transition;
CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
WHEN NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 402, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status IN (200, 402, 413, 500) AND NEW.status IN (102, 499))
    OR (OLD.status = 499 AND NEW.status = 102)
)
BEGIN
    SELECT RAISE(ABORT, 'invalid run state transition');
END;
DROP TRIGGER trg_loop_state_transition;
CREATE TRIGGER trg_loop_state_transition
BEFORE UPDATE OF status ON loops
WHEN NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 499))
    OR (OLD.status = 102 AND NEW.status IN (100, 200, 202, 402, 413, 499, 500))
)
BEGIN
    SELECT RAISE(ABORT, 'invalid loop state transition');
END;
ALTER TABLE runs ADD COLUMN caps TEXT;
CREATE TABLE cap_warnings (
    -- `server`, `project`, `person` or `run`, and which one ('' for the server).
    scope   TEXT NOT NULL,
    subject TEXT NOT NULL,
    -- `day` or `month`, and the period's first second (UTC, `YYYY-MM-DD HH:MM:SS`).
    period  TEXT NOT NULL,
    starts  TEXT NOT NULL,
    -- `tokens` or `dollars`.
    unit    TEXT NOT NULL,
    PRIMARY KEY (scope, subject, period, starts, unit)
);
