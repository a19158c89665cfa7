ALTER TABLE model_calls DROP COLUMN key_of;
ALTER TABLE projects DROP COLUMN personal_keys_required;
