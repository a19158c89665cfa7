-- A call is recorded within bounds (each token count at most a billion, a total at most two,
-- a cost at most US$ 10 000: `usage::recorded`), so every count fits its INTEGER column and
-- no sum over `model_calls` overflows. A row recorded before past them (a count up to the
-- 32-bit maximum, a cost a provider reported as absurd) is brought within them.
UPDATE model_calls SET
    prompt_tokens = LEAST(prompt_tokens, 1000000000),
    cached_tokens = LEAST(cached_tokens, 1000000000),
    completion_tokens = LEAST(completion_tokens, 1000000000),
    reasoning_tokens = LEAST(reasoning_tokens, 1000000000),
    total_tokens = LEAST(total_tokens, 2000000000),
    cost_micros = LEAST(cost_micros, 10000000000)
WHERE prompt_tokens > 1000000000 OR cached_tokens > 1000000000
   OR completion_tokens > 1000000000 OR reasoning_tokens > 1000000000
   OR total_tokens > 2000000000 OR cost_micros > 10000000000;
