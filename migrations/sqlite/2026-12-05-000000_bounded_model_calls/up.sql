-- A call is recorded within bounds (each token count at most a billion, a total at most two,
-- a cost at most US$ 10 000: `usage::recorded`), so no sum over `model_calls` overflows. A
-- row recorded before past them, as a provider's absurd report could leave one (then
-- `usage/report` and every cap failed on "integer overflow"), is brought within them.
UPDATE model_calls SET
    prompt_tokens = MIN(prompt_tokens, 1000000000),
    cached_tokens = MIN(cached_tokens, 1000000000),
    completion_tokens = MIN(completion_tokens, 1000000000),
    reasoning_tokens = MIN(reasoning_tokens, 1000000000),
    total_tokens = MIN(total_tokens, 2000000000),
    cost_micros = MIN(cost_micros, 10000000000)
WHERE prompt_tokens > 1000000000 OR cached_tokens > 1000000000
   OR completion_tokens > 1000000000 OR reasoning_tokens > 1000000000
   OR total_tokens > 2000000000 OR cost_micros > 10000000000;
