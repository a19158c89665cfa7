DROP TABLE loop_waiters;
DROP TABLE run_leases;
DROP TABLE instances;
