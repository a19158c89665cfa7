DROP INDEX idx_rpc_log_created_at;
ALTER TABLE rpc_log DROP COLUMN person;
ALTER TABLE rpc_log DROP COLUMN run;
ALTER TABLE rpc_log DROP COLUMN result_bytes;
ALTER TABLE rpc_log DROP COLUMN params_bytes;
ALTER TABLE rpc_log DROP COLUMN status;
ALTER TABLE rpc_log DROP COLUMN duration_ms;
