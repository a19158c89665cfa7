-- The run's verbs (agent::verbs). The run's state machine is `agent::verbs::machine`; this
-- trigger holds the same table: a resolution may complete a run from any state a loop is
-- not running in (a client's proposal on a failed, capped, too large or aborted run too).
DROP TRIGGER trg_run_state_transition;
CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
WHEN NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 402, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 200 AND NEW.status IN (102, 499))
    OR (OLD.status IN (402, 413, 500) AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 499 AND NEW.status IN (102, 200))
)
BEGIN
    SELECT RAISE(ABORT, 'invalid run state transition');
END;
-- A proposal being accepted by one request while what accepting it does (a command on the
-- server, a tool's call) is carried out: every other request for it is answered that it is
-- being resolved, and an abort meanwhile marks it `aborted` (the acceptance is recorded,
-- and the run does not resume). The row goes in the unit of work that records the
-- resolution, or with its instance (a crash leaves the proposal pending again).
CREATE TABLE proposal_claims (
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    path        TEXT NOT NULL,
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    -- `accept` (the only action with work outside the store), and who asked for it.
    action      TEXT NOT NULL,
    person      TEXT,
    aborted     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, path)
);
CREATE INDEX idx_proposal_claims_instance ON proposal_claims (instance_id);
