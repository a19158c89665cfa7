-- Whether a person set the fact (through `memory/set` or `memory/server/set`): such a fact
-- stays until a person changes it; a model's `<remember>` or a loop's consolidation on its
-- topic leaves it as it is. Facts kept before have no such mark: those no run wrote are
-- taken to be a person's.
ALTER TABLE memory_facts ADD COLUMN by_person BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE memory_facts SET by_person = TRUE WHERE run_id IS NULL;
