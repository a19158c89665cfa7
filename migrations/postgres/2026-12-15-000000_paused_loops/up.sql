-- Caps pause a loop instead of ending it (see the SQLite migration of the same version).
DROP TRIGGER trg_run_state_transition ON runs;
CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
FOR EACH ROW
WHEN (NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 402, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 200 AND NEW.status IN (102, 499))
    OR (OLD.status = 402 AND NEW.status IN (102, 499))
    OR (OLD.status IN (413, 500) AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 499 AND NEW.status IN (102, 200))
))
EXECUTE FUNCTION raise_invalid_transition('run');
CREATE TABLE paused_loops (
    loop_id   BIGINT PRIMARY KEY REFERENCES loops (id) ON DELETE CASCADE,
    run_id    BIGINT NOT NULL UNIQUE REFERENCES runs (id) ON DELETE CASCADE,
    cap       TEXT NOT NULL,
    error     TEXT NOT NULL,
    resets_at BIGINT NOT NULL
);
CREATE INDEX idx_paused_loops_resets ON paused_loops (resets_at);
