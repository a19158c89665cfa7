-- What changed in a run's entries since a reader last looked (src/agent/state/carried.rs):
-- each run counts the writes to its entries (entries_revision) and the entries it lost
-- (entries_removed: deleted, or moved to another run); entry_revisions holds each entry's
-- run's count after its latest write of a column run/state reports (a narrow table of its
-- own, so that the stamp does not write the entry's row again). The triggers keep them, so
-- no writer can forget to. Entries written before this migration have no stamp.
ALTER TABLE runs ADD COLUMN entries_revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN entries_removed INTEGER NOT NULL DEFAULT 0;

CREATE TABLE entry_revisions (
    entry_id INTEGER PRIMARY KEY NOT NULL,
    run_id   INTEGER NOT NULL,
    revision INTEGER NOT NULL
);
CREATE INDEX idx_entry_revisions_run ON entry_revisions (run_id, revision);

CREATE TRIGGER trg_entry_revision_insert
AFTER INSERT ON known_entries
BEGIN
    UPDATE runs SET entries_revision = entries_revision + 1 WHERE id = NEW.run_id;
    INSERT INTO entry_revisions (entry_id, run_id, revision)
    SELECT NEW.id, NEW.run_id, entries_revision FROM runs WHERE id = NEW.run_id
    ON CONFLICT (entry_id) DO UPDATE SET run_id = excluded.run_id, revision = excluded.revision;
END;

CREATE TRIGGER trg_entry_revision_update
AFTER UPDATE OF run_id, path, body, status, attributes, turn ON known_entries
BEGIN
    UPDATE runs SET entries_removed = entries_removed + 1
    WHERE id = OLD.run_id AND OLD.run_id <> NEW.run_id;
    UPDATE runs SET entries_revision = entries_revision + 1 WHERE id = NEW.run_id;
    INSERT INTO entry_revisions (entry_id, run_id, revision)
    SELECT NEW.id, NEW.run_id, entries_revision FROM runs WHERE id = NEW.run_id
    ON CONFLICT (entry_id) DO UPDATE SET run_id = excluded.run_id, revision = excluded.revision;
END;

CREATE TRIGGER trg_entry_revision_delete
AFTER DELETE ON known_entries
BEGIN
    UPDATE runs SET entries_removed = entries_removed + 1 WHERE id = OLD.run_id;
    DELETE FROM entry_revisions WHERE entry_id = OLD.id;
END;
