-- The change log (src/db/entry_changes.rs) names each change's entry by its row and turn
-- too, so that entry.changed can name an entry whose path is made of the model's words
-- without that path.
CREATE OR REPLACE FUNCTION log_entry_change() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    change TEXT;
BEGIN
    IF to_regclass('pg_temp.entry_changes') IS NULL THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO pg_temp.entry_changes (run_id, entry_id, turn, path, change_type)
        VALUES (NEW.run_id, NEW.id, NEW.turn, NEW.path, 'upsert');
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO pg_temp.entry_changes (run_id, entry_id, turn, path, change_type)
        VALUES (OLD.run_id, OLD.id, OLD.turn, OLD.path, 'remove');
    ELSIF NEW.path <> OLD.path OR NEW.run_id <> OLD.run_id THEN
        INSERT INTO pg_temp.entry_changes (run_id, entry_id, turn, path, change_type)
        VALUES (OLD.run_id, OLD.id, OLD.turn, OLD.path, 'remove');
        INSERT INTO pg_temp.entry_changes (run_id, entry_id, turn, path, change_type)
        VALUES (NEW.run_id, NEW.id, NEW.turn, NEW.path, 'upsert');
    ELSE
        change := CASE
            WHEN NEW.write_count <> OLD.write_count THEN 'upsert'
            WHEN NEW.status <> OLD.status THEN 'resolve'
            WHEN NEW.fidelity <> OLD.fidelity THEN
                CASE NEW.fidelity WHEN 'full' THEN 'promote' WHEN 'archive' THEN 'demote'
                    ELSE 'fidelity' END
            WHEN NEW.body <> OLD.body THEN 'body'
            WHEN NEW.attributes <> OLD.attributes THEN 'attributes'
            WHEN NEW.turn <> OLD.turn THEN 'promote'
        END;
        IF change IS NOT NULL THEN
            INSERT INTO pg_temp.entry_changes (run_id, entry_id, turn, path, change_type)
            VALUES (NEW.run_id, NEW.id, NEW.turn, NEW.path, change);
        END IF;
    END IF;
    RETURN NULL;
END
$$;
