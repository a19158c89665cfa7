ALTER TABLE memory_facts DROP COLUMN by_person;
