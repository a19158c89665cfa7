ALTER TABLE memory_history DROP COLUMN folded;
ALTER TABLE memory_facts DROP COLUMN transient;
