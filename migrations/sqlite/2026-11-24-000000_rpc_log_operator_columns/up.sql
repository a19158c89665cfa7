-- What an operator needs of each audited call, kept even when its texts are not
-- (RUMMY_RPC_LOG=meta). NULL in rows written before this migration.
--   duration_ms   how long the call took, from its request read to its reply ready
--   status        the JSON-RPC error code of a failed call; NULL for a success
--   params_bytes  bytes of the params JSON text, before any cut
--   result_bytes  bytes of the result JSON text, before any cut; NULL for a failed call
--   run           the run alias the call named in its `run` string param, if any
--   person        who made the call
ALTER TABLE rpc_log ADD COLUMN duration_ms INTEGER;
ALTER TABLE rpc_log ADD COLUMN status INTEGER;
ALTER TABLE rpc_log ADD COLUMN params_bytes INTEGER;
ALTER TABLE rpc_log ADD COLUMN result_bytes INTEGER;
ALTER TABLE rpc_log ADD COLUMN run TEXT;
ALTER TABLE rpc_log ADD COLUMN person TEXT;

-- The log is pruned by age as it is written: the oldest rows are found without a scan.
CREATE INDEX idx_rpc_log_created_at ON rpc_log (created_at);
