-- A turn's snapshot is stored as its difference from the run's previous one: 'set' rows are
-- new or changed since then, 'removed' rows left the context; 'whole' rows (those written
-- before this change) are a turn's entire snapshot. `entry_id` is the store entry a row came
-- from, which orders rows of the same section, fidelity and turn as v_model_context does.
ALTER TABLE turn_context ADD COLUMN change TEXT NOT NULL DEFAULT 'whole'
    CHECK (change IN ('whole', 'set', 'removed'));
ALTER TABLE turn_context ADD COLUMN entry_id INTEGER;
