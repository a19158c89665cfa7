DROP TRIGGER trg_entry_revision_delete;
DROP TRIGGER trg_entry_revision_update;
DROP TRIGGER trg_entry_revision_insert;
DROP INDEX idx_known_entries_run_revision;
ALTER TABLE known_entries DROP COLUMN revision;
ALTER TABLE runs DROP COLUMN entries_removed;
ALTER TABLE runs DROP COLUMN entries_revision;
