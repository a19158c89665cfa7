-- Memory hygiene. A transient fact holds only while the work at hand lasts (in-progress
-- state, a temporary workaround): the model marks it so (`<remember transient>`, or a
-- decision of the session notes marked transient), and it is pruned once the project has
-- started enough runs after the run that last wrote it (`RUMMY_MEMORY_TRANSIENT_RUNS`). A
-- person's fact is never transient.
ALTER TABLE memory_facts ADD COLUMN transient BOOLEAN NOT NULL DEFAULT FALSE;
-- The history is kept within bounds (`RUMMY_MEMORY_HISTORY_PER_TOPIC` items per topic,
-- `RUMMY_MEMORY_HISTORY_ITEMS` per layer): older items are folded, their text dropped and
-- counted here, on the oldest item of their topic that stays.
ALTER TABLE memory_history ADD COLUMN folded INTEGER NOT NULL DEFAULT 0;
