DROP INDEX idx_runs_delegated_by;
DROP TABLE model_calls;
