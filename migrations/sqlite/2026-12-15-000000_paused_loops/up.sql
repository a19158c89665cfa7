-- Caps pause a loop instead of ending it (agent::paused). A run at 402 is paused: its loop
-- waits, pending (100) in `loops` with its place (its turn and iteration in `loops.result`),
-- and is not claimed while its row here exists; the row goes when the loop is unpaused
-- (the cap raised or removed, its period reset, or `run/resume`: 402 -> 102) or aborted
-- (402 -> 499). A paused run neither completes nor resumes on a resolution (402 -> 200 is
-- no longer a move): only its own loop, taken up again, ends it. A run stopped at a cap by
-- an earlier version keeps its 402 and has no row here: a new prompt continues it.
DROP TRIGGER trg_run_state_transition;
CREATE TRIGGER trg_run_state_transition
BEFORE UPDATE OF status ON runs
WHEN NEW.status <> OLD.status AND NOT (
       (OLD.status = 100 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 402, 413, 499, 500))
    OR (OLD.status = 202 AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 200 AND NEW.status IN (102, 499))
    OR (OLD.status = 402 AND NEW.status IN (102, 499))
    OR (OLD.status IN (413, 500) AND NEW.status IN (102, 200, 499))
    OR (OLD.status = 499 AND NEW.status IN (102, 200))
)
BEGIN
    SELECT RAISE(ABORT, 'invalid run state transition');
END;
CREATE TABLE paused_loops (
    loop_id   INTEGER PRIMARY KEY REFERENCES loops (id) ON DELETE CASCADE,
    run_id    INTEGER NOT NULL UNIQUE REFERENCES runs (id) ON DELETE CASCADE,
    -- The cap that stopped it as the wire shows it (`usage::StandingView`, JSON), its
    -- message, and the end of its period (seconds since the epoch, UTC): the next time it
    -- may resume by itself.
    cap       TEXT NOT NULL,
    error     TEXT NOT NULL,
    resets_at INTEGER NOT NULL
);
CREATE INDEX idx_paused_loops_resets ON paused_loops (resets_at);
