DROP TABLE run_actions;
ALTER TABLE loops DROP COLUMN requested_by;
ALTER TABLE runs DROP COLUMN created_by;
