-- Usage accounting: each answered model call says who it was for (the person who started
-- the run, NULL for the operator or the server), in which project, which model served it,
-- and what it cost in micro-dollars (an integer, so sums and caps compare exactly), fixed
-- when it is recorded. A sub-agent's turns are recorded as 'subagent'. The catalogue keeps
-- a price per model: micro-dollars per million tokens of uncached input, cached input and
-- output. The rows before keep their cost (rounded to the micro-dollar) and take their
-- run's person, project and model.
ALTER TABLE model_calls DROP CONSTRAINT model_calls_purpose_check;
ALTER TABLE model_calls ADD CONSTRAINT model_calls_purpose_check
    CHECK (purpose IN ('turn', 'session_notes', 'rerank', 'subagent'));
ALTER TABLE model_calls ADD COLUMN person TEXT;
ALTER TABLE model_calls ADD COLUMN project_id BIGINT;
ALTER TABLE model_calls ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE model_calls ADD COLUMN cost_micros BIGINT NOT NULL DEFAULT 0 CHECK (cost_micros >= 0);
UPDATE model_calls AS c
SET person = r.created_by, project_id = r.project_id,
    model = COALESCE((SELECT m.actual FROM models AS m WHERE m.alias = r.model), r.model, ''),
    cost_micros = CAST(ROUND(CAST(c.cost AS NUMERIC) * 1000000) AS BIGINT)
FROM runs AS r WHERE r.id = c.run_id;
ALTER TABLE model_calls ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE model_calls DROP COLUMN cost;
CREATE INDEX idx_model_calls_created ON model_calls (created_at);
CREATE INDEX idx_model_calls_person ON model_calls (person, created_at);
CREATE INDEX idx_model_calls_project ON model_calls (project_id, created_at);
ALTER TABLE models ADD COLUMN input_price BIGINT NOT NULL DEFAULT 0 CHECK (input_price >= 0);
ALTER TABLE models ADD COLUMN cached_price BIGINT NOT NULL DEFAULT 0 CHECK (cached_price >= 0);
ALTER TABLE models ADD COLUMN output_price BIGINT NOT NULL DEFAULT 0 CHECK (output_price >= 0);
