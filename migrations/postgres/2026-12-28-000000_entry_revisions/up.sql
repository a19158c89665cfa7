-- What changed in a run's entries since a reader last looked (src/agent/state/carried.rs):
-- each run counts the writes to its entries (entries_revision) and the entries it lost
-- (entries_removed: deleted, or moved to another run); each entry is stamped with its run's
-- count after its latest write of a column run/state reports. The triggers keep them, so
-- no writer can forget to. The run's row lock orders the writers of one run (instances
-- share the store), so a run's stamps become visible in their order. Entries written
-- before this migration keep revision 0.
ALTER TABLE runs ADD COLUMN entries_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN entries_removed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE known_entries ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX idx_known_entries_run_revision ON known_entries (run_id, revision);

CREATE FUNCTION stamp_entry_revision() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.run_id <> NEW.run_id THEN
        UPDATE runs SET entries_removed = entries_removed + 1 WHERE id = OLD.run_id;
    END IF;
    UPDATE runs SET entries_revision = entries_revision + 1 WHERE id = NEW.run_id
    RETURNING entries_revision INTO NEW.revision;
    RETURN NEW;
END
$$;

CREATE TRIGGER trg_entry_revision_write
BEFORE INSERT OR UPDATE OF run_id, path, body, status, attributes, turn ON known_entries
FOR EACH ROW EXECUTE FUNCTION stamp_entry_revision();

CREATE FUNCTION count_entry_removal() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE runs SET entries_removed = entries_removed + 1 WHERE id = OLD.run_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_entry_revision_delete
AFTER DELETE ON known_entries
FOR EACH ROW EXECUTE FUNCTION count_entry_removal();
