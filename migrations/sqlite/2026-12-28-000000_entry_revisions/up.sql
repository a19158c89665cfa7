-- What changed in a run's entries since a reader last looked (src/agent/state/carried.rs):
-- each run counts the writes to its entries (entries_revision) and the entries it lost
-- (entries_removed: deleted, or moved to another run); each entry is stamped with its run's
-- count after its latest write of a column run/state reports. The triggers keep them, so
-- no writer can forget to. Entries written before this migration keep revision 0.
ALTER TABLE runs ADD COLUMN entries_revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN entries_removed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE known_entries ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
CREATE INDEX idx_known_entries_run_revision ON known_entries (run_id, revision);

CREATE TRIGGER trg_entry_revision_insert
AFTER INSERT ON known_entries
BEGIN
    UPDATE runs SET entries_revision = entries_revision + 1 WHERE id = NEW.run_id;
    UPDATE known_entries
    SET revision = (SELECT entries_revision FROM runs WHERE id = NEW.run_id)
    WHERE id = NEW.id;
END;

-- The stamp's own UPDATE sets no listed column, so it does not fire this trigger.
CREATE TRIGGER trg_entry_revision_update
AFTER UPDATE OF run_id, path, body, status, attributes, turn ON known_entries
BEGIN
    UPDATE runs SET entries_removed = entries_removed + 1
    WHERE id = OLD.run_id AND OLD.run_id <> NEW.run_id;
    UPDATE runs SET entries_revision = entries_revision + 1 WHERE id = NEW.run_id;
    UPDATE known_entries
    SET revision = (SELECT entries_revision FROM runs WHERE id = NEW.run_id)
    WHERE id = NEW.id;
END;

CREATE TRIGGER trg_entry_revision_delete
AFTER DELETE ON known_entries
BEGIN
    UPDATE runs SET entries_removed = entries_removed + 1 WHERE id = OLD.run_id;
END;
