DELETE FROM model_calls WHERE purpose = 'turn';
ALTER TABLE model_calls DROP CONSTRAINT model_calls_purpose_check;
ALTER TABLE model_calls ADD CONSTRAINT model_calls_purpose_check
    CHECK (purpose IN ('session_notes', 'rerank'));
