-- Several rummy instances on one store (see the SQLite migration of the same version).
CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

CREATE TABLE run_leases (
    run_id      BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE
);
CREATE INDEX idx_run_leases_instance ON run_leases (instance_id);

CREATE TABLE loop_waiters (
    loop_id     BIGINT PRIMARY KEY REFERENCES loops (id) ON DELETE CASCADE,
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE
);
CREATE INDEX idx_loop_waiters_instance ON loop_waiters (instance_id);
