-- People in a run (the `presence` module) and what they dismissed from their inbox
-- (`inbox`).
--
-- Who is in a run now: one row per connection that watches (or last acted on) a run, on
-- the instance serving it. A row lives as long as its instance's heartbeat row: an instance
-- that dies (its row expired and released) takes its connections' presence with it, so no
-- second liveness is kept. `acted_ms`: when the connection last prompted, resolved,
-- injected or aborted the run; the present connection that acted last drives it.
CREATE TABLE run_presence (
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    conn_id     BIGINT NOT NULL,
    run_id      BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    person      TEXT,
    client_name TEXT NOT NULL,
    client_kind TEXT NOT NULL,
    since_ms    BIGINT NOT NULL,
    acted_ms    BIGINT,
    PRIMARY KEY (instance_id, conn_id)
);
CREATE INDEX idx_run_presence_run ON run_presence (run_id);

-- An inbox item a person dismissed: the run's item stays away while the run's latest
-- notification is the one it had when dismissed (`seq`); anything new on the run brings
-- back whatever item the run then makes. `person` is '' for the operator.
CREATE TABLE inbox_dismissals (
    person TEXT NOT NULL,
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,
    PRIMARY KEY (person, run_id)
);
CREATE INDEX idx_inbox_dismissals_run ON inbox_dismissals (run_id);
