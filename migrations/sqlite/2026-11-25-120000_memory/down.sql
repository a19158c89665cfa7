DROP TABLE memory_history_fts;
DROP TABLE memory_facts_fts;
DROP TABLE memory_disabled;
DROP TABLE memory_history;
DROP TABLE memory_facts;
DELETE FROM schemes WHERE name = 'memory';
UPDATE schemes SET category = 'data' WHERE category = 'memory';
