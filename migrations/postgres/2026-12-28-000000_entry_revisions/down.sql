DROP TRIGGER trg_entry_revision_delete ON known_entries;
DROP FUNCTION count_entry_removal();
DROP TRIGGER trg_entry_revision_write ON known_entries;
DROP FUNCTION stamp_entry_revision();
DROP TABLE entry_revisions;
ALTER TABLE runs DROP COLUMN entries_removed;
ALTER TABLE runs DROP COLUMN entries_revision;
