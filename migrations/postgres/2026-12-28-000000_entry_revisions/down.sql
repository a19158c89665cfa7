DROP TRIGGER trg_entry_revision_delete ON known_entries;
DROP FUNCTION count_entry_removal();
DROP TRIGGER trg_entry_revision_write ON known_entries;
DROP FUNCTION stamp_entry_revision();
DROP INDEX idx_known_entries_run_revision;
ALTER TABLE known_entries DROP COLUMN revision;
ALTER TABLE runs DROP COLUMN entries_removed;
ALTER TABLE runs DROP COLUMN entries_revision;
