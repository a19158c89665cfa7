ALTER TABLE runs DROP COLUMN delegated_by;
