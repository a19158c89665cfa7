-- A run's title, as people read it in the console: at first the first line of its first
-- prompt (`title_by` 'prompt'), then the title of its session notes once they have one
-- ('notes'), unless a person named it (`run/rename`: 'person'), which no automatic title
-- replaces. NULL: a run no prompt reached yet.
ALTER TABLE runs ADD COLUMN title TEXT;
ALTER TABLE runs ADD COLUMN title_by TEXT;
