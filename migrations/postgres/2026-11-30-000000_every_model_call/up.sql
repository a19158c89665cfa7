-- Every answered model call of a run is recorded here, its turns' too (`purpose` 'turn'), by
-- the provider path that made it: one ledger of what a run spent. A turn's own usage stays
-- on its `turns` row, which is what a run's usage counts for its turns. Turns answered
-- before are recorded from their rows (those that reported usage).
ALTER TABLE model_calls DROP CONSTRAINT model_calls_purpose_check;
ALTER TABLE model_calls ADD CONSTRAINT model_calls_purpose_check
    CHECK (purpose IN ('turn', 'session_notes', 'rerank'));
INSERT INTO model_calls (run_id, loop_id, turn, purpose, prompt_tokens, cached_tokens,
                         completion_tokens, reasoning_tokens, total_tokens, cost, created_at)
SELECT run_id, loop_id, sequence, 'turn', prompt_tokens, cached_tokens, completion_tokens,
       reasoning_tokens, total_tokens, GREATEST(cost, 0), created_at
FROM turns
WHERE prompt_tokens > 0 OR completion_tokens > 0 OR cost > 0
ORDER BY id;
