DROP TRIGGER trg_entry_revision_delete;
DROP TRIGGER trg_entry_revision_update;
DROP TRIGGER trg_entry_revision_insert;
DROP TABLE entry_revisions;
ALTER TABLE runs DROP COLUMN entries_removed;
ALTER TABLE runs DROP COLUMN entries_revision;
