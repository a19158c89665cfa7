DROP TABLE paused_loops;
DROP TRIGGER trg_run_state_transition ON runs;
CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
FOR EACH ROW
WHEN (NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 402, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 200 AND NEW.status IN (102, 499))
    OR (OLD.status IN (402, 413, 500) AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 499 AND NEW.status IN (102, 200))
))
EXECUTE FUNCTION raise_invalid_transition('run');
