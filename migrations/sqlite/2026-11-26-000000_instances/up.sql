-- Several rummy instances on one store (PostgreSQL; on SQLite there is only ever one).
-- An instance's heartbeat row: it is alive until `expires_at` (milliseconds since the Unix
-- epoch), which its heartbeat pushes forward by the lease TTL. Deleting the row (a clean
-- stop, or another instance finding it expired) drops its leases and waiters with it.
CREATE TABLE instances (
    id         TEXT PRIMARY KEY NOT NULL,
    expires_at INTEGER NOT NULL
);

-- Which instance drives a run's loops: taken by the instance's drain in the unit of work
-- that claims a loop, given back in the one that finds no loop left for it. A lease lasts
-- as long as its instance's heartbeat row.
CREATE TABLE run_leases (
    run_id      INTEGER PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE
);
CREATE INDEX idx_run_leases_instance ON run_leases (instance_id);

-- The instance whose client waits for a pending loop's outcome: only that instance claims
-- the loop. A loop without a row (a panic's recovery loop, or one whose instance is gone)
-- is claimed by whichever instance holds the run's lease.
CREATE TABLE loop_waiters (
    loop_id     INTEGER PRIMARY KEY NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE
);
CREATE INDEX idx_loop_waiters_instance ON loop_waiters (instance_id);
