-- The durable event log: every notification of a run (run/progress, run/proposal,
-- run/state), numbered and kept for run/replay (db::queries::run_events).
--
-- A run's numbering: its first notification took `first_seq`, its latest `last_seq`; the
-- next takes `last_seq + 1`. Taken (and raised) in the unit of work that writes the
-- notifications, so the row's lock orders every instance's writers and no seq is ever given
-- twice. It outlives the frames, which are pruned oldest first.
CREATE TABLE run_event_seqs (
    run_id    INTEGER PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL
);

-- One notification as it was sent: its frame's text, whose length in bytes is `bytes`, and
-- when it was written (milliseconds since the Unix epoch), which the bounds prune by. The
-- frame last, so that the sums of `bytes` never read through a long frame.
CREATE TABLE run_events (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    bytes      INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    frame      TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX idx_run_events_created ON run_events (created_ms);
