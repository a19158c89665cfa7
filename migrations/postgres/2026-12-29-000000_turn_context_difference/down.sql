ALTER TABLE turn_context DROP COLUMN entry_id;
ALTER TABLE turn_context DROP COLUMN change;
