ALTER TABLE models DROP COLUMN output_price;
ALTER TABLE models DROP COLUMN cached_price;
ALTER TABLE models DROP COLUMN input_price;
DROP INDEX idx_model_calls_project;
DROP INDEX idx_model_calls_person;
DROP INDEX idx_model_calls_created;
ALTER TABLE model_calls ADD COLUMN cost DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (cost >= 0);
UPDATE model_calls SET cost = cost_micros / 1000000.0;
UPDATE model_calls SET purpose = 'turn' WHERE purpose = 'subagent';
ALTER TABLE model_calls DROP COLUMN cost_micros;
ALTER TABLE model_calls DROP COLUMN model;
ALTER TABLE model_calls DROP COLUMN project_id;
ALTER TABLE model_calls DROP COLUMN person;
ALTER TABLE model_calls DROP CONSTRAINT model_calls_purpose_check;
ALTER TABLE model_calls ADD CONSTRAINT model_calls_purpose_check
    CHECK (purpose IN ('turn', 'session_notes', 'rerank'));
