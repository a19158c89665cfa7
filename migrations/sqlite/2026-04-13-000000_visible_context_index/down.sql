DROP INDEX IF EXISTS idx_known_entries_visible;
