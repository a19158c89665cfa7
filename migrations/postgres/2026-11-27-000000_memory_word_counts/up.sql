-- How many items of each full-text index hold each word, and how many items it has, kept
-- by triggers (as SQLite's FTS5 keeps them for bm25): recall picks a prompt's rarest words
-- and weighs each by these counts instead of counting through the GIN index, whose bitmap of
-- a common word's items alone takes milliseconds at 100k items. PostgreSQL only: on SQLite
-- recall asks its FTS5 tables.

-- The items of `source` (a table with a `search` tsvector) whose `search` holds `word`, a
-- lexeme; a word no item holds has no row. `items` has no CHECK: an upsert checks the row it
-- proposes (a removal's negative change) before adding it to the kept one.
CREATE TABLE memory_word_counts (
    source TEXT NOT NULL CHECK (source IN ('memory_facts', 'memory_history')),
    word   TEXT NOT NULL,
    items  BIGINT NOT NULL,
    PRIMARY KEY (source, word)
);

-- The items of `source`.
CREATE TABLE memory_item_counts (
    source TEXT PRIMARY KEY CHECK (source IN ('memory_facts', 'memory_history')),
    items  BIGINT NOT NULL CHECK (items >= 0)
);

-- Counts the items of `source_table` whose `search` left it (`removed`) or joined it (`added`).
-- Both rows of `memory_item_counts` are locked first, in one order, whichever table
-- changes: writers of memory take their turns (a replaced fact writes the history inside a
-- write of the facts, so locking only the changed table's row could deadlock two writers).
CREATE FUNCTION memory_words_counted(source_table TEXT, removed tsvector[], added tsvector[])
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    emptied TEXT[];
BEGIN
    PERFORM 1 FROM memory_item_counts ORDER BY memory_item_counts.source FOR UPDATE;
    UPDATE memory_item_counts AS c
    SET items = c.items + cardinality(added) - cardinality(removed)
    WHERE c.source = source_table;
    WITH changed AS (
        INSERT INTO memory_word_counts AS c (source, word, items)
        SELECT source_table, d.word, sum(d.delta)
        FROM (SELECT unnest(tsvector_to_array(r)) AS word, -1 AS delta FROM unnest(removed) AS r
              UNION ALL
              SELECT unnest(tsvector_to_array(a)), 1 FROM unnest(added) AS a) AS d
        GROUP BY d.word
        HAVING sum(d.delta) <> 0
        ON CONFLICT (source, word) DO UPDATE SET items = c.items + excluded.items
        RETURNING c.word, c.items
    )
    SELECT array_agg(changed.word) INTO emptied FROM changed WHERE changed.items = 0;
    DELETE FROM memory_word_counts AS c
    WHERE c.source = source_table AND c.word = ANY (emptied);
END
$$;

-- The trigger of each statement that writes `memory_facts` or `memory_history`, given the
-- rows it removed (`removed_items`) and added (`added_items`) as transition tables.
CREATE FUNCTION memory_items_written() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM memory_words_counted(TG_TABLE_NAME, '{}', ARRAY(SELECT search FROM added_items));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM memory_words_counted(TG_TABLE_NAME, ARRAY(SELECT search FROM removed_items), '{}');
    ELSE
        PERFORM memory_words_counted(TG_TABLE_NAME, ARRAY(SELECT search FROM removed_items),
                                     ARRAY(SELECT search FROM added_items));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_memory_facts_inserted AFTER INSERT ON memory_facts
REFERENCING NEW TABLE AS added_items
FOR EACH STATEMENT EXECUTE FUNCTION memory_items_written();
CREATE TRIGGER trg_memory_facts_updated AFTER UPDATE ON memory_facts
REFERENCING OLD TABLE AS removed_items NEW TABLE AS added_items
FOR EACH STATEMENT EXECUTE FUNCTION memory_items_written();
CREATE TRIGGER trg_memory_facts_deleted AFTER DELETE ON memory_facts
REFERENCING OLD TABLE AS removed_items
FOR EACH STATEMENT EXECUTE FUNCTION memory_items_written();

CREATE TRIGGER trg_memory_history_inserted AFTER INSERT ON memory_history
REFERENCING NEW TABLE AS added_items
FOR EACH STATEMENT EXECUTE FUNCTION memory_items_written();
CREATE TRIGGER trg_memory_history_updated AFTER UPDATE ON memory_history
REFERENCING OLD TABLE AS removed_items NEW TABLE AS added_items
FOR EACH STATEMENT EXECUTE FUNCTION memory_items_written();
CREATE TRIGGER trg_memory_history_deleted AFTER DELETE ON memory_history
REFERENCING OLD TABLE AS removed_items
FOR EACH STATEMENT EXECUTE FUNCTION memory_items_written();

-- The items already written.
INSERT INTO memory_item_counts (source, items) VALUES ('memory_facts', 0), ('memory_history', 0);
SELECT memory_words_counted('memory_facts', '{}', ARRAY(SELECT search FROM memory_facts));
SELECT memory_words_counted('memory_history', '{}', ARRAY(SELECT search FROM memory_history));
