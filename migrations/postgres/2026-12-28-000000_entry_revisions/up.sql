-- What changed in a run's entries since a reader last looked (src/agent/state/carried.rs):
-- each run counts the writes to its entries (entries_revision) and the entries it lost
-- (entries_removed: deleted, or moved to another run); entry_revisions holds each entry's
-- run's count after its latest write of a column run/state reports. The triggers keep them,
-- so no writer can forget to. The run's row lock orders the writers of one run (instances
-- share the store), so a run's stamps become visible in their order. Entries written
-- before this migration have no stamp.
ALTER TABLE runs ADD COLUMN entries_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN entries_removed BIGINT NOT NULL DEFAULT 0;

CREATE TABLE entry_revisions (
    entry_id BIGINT PRIMARY KEY,
    run_id   BIGINT NOT NULL,
    revision BIGINT NOT NULL
);
CREATE INDEX idx_entry_revisions_run ON entry_revisions (run_id, revision);

CREATE FUNCTION stamp_entry_revision() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    stamp BIGINT;
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.run_id <> NEW.run_id THEN
        UPDATE runs SET entries_removed = entries_removed + 1 WHERE id = OLD.run_id;
    END IF;
    UPDATE runs SET entries_revision = entries_revision + 1 WHERE id = NEW.run_id
    RETURNING entries_revision INTO stamp;
    INSERT INTO entry_revisions (entry_id, run_id, revision)
    VALUES (NEW.id, NEW.run_id, stamp)
    ON CONFLICT (entry_id) DO UPDATE SET run_id = EXCLUDED.run_id, revision = EXCLUDED.revision;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_entry_revision_write
AFTER INSERT OR UPDATE OF run_id, path, body, status, attributes, turn ON known_entries
FOR EACH ROW EXECUTE FUNCTION stamp_entry_revision();

CREATE FUNCTION count_entry_removal() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE runs SET entries_removed = entries_removed + 1 WHERE id = OLD.run_id;
    DELETE FROM entry_revisions WHERE entry_id = OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_entry_revision_delete
AFTER DELETE ON known_entries
FOR EACH ROW EXECUTE FUNCTION count_entry_removal();
