ALTER TABLE projects DROP COLUMN command_rules;
DROP TABLE command_rules;
