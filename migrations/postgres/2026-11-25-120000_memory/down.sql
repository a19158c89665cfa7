DROP TABLE memory_disabled;
DROP TRIGGER trg_memory_fact_replaced ON memory_facts;
DROP FUNCTION memory_fact_replaced();
DROP TABLE memory_history;
DROP TABLE memory_facts;
DROP FUNCTION memory_search(TEXT, TEXT);
DELETE FROM schemes WHERE name = 'memory';
UPDATE schemes SET category = 'data' WHERE category = 'memory';
ALTER TABLE schemes DROP CONSTRAINT schemes_category_check;
ALTER TABLE schemes ADD CONSTRAINT schemes_category_check
    CHECK (category IN ('data', 'logging', 'unknown', 'prompt', 'audit'));
