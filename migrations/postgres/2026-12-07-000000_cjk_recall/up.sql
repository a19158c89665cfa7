-- Recall finds text written without spaces between words (Chinese, Japanese, Korean), as on
-- SQLite (see its migration of the same version): a topic's and a body's words are those of
-- `searchable(text)`, which replaces each run of such characters by its overlapping pairs
-- (the function of src/db/queries/memory/words.rs, which a question is read through). The
-- `search` columns are computed again and, through the triggers of
-- 2026-11-27-000000_memory_word_counts, the counts of their words with them.

-- `source` with each run of CJK letters (the ranges of `is_cjk` in words.rs) replaced by
-- its overlapping pairs, space-separated, with a space on either side, and each mark of
-- wide punctuation (`is_wide_punctuation`: this database's `[[:punct:]]` may know no
-- character past ASCII) by a space; the rest as it was.
CREATE FUNCTION searchable(source TEXT) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    letters CONSTANT TEXT := '\u1100-\u11FF\u3005-\u3007\u3041-\u3096\u309D-\u309F'
        '\u30A1-\u30FA\u30FC-\u30FF\u3131-\u318E\u31F0-\u31FF\u3400-\u4DBF\u4E00-\u9FFF'
        '\uA960-\uA97C\uAC00-\uD7A3\uD7B0-\uD7FB\uF900-\uFAFF\uFF66-\uFF9F'
        '\U00020000-\U0003134F';
    marks CONSTANT TEXT := '\u2000-\u206F\u3000-\u3004\u3008-\u3020\u3030\u303D-\u303F'
        '\u30A0\u30FB\uFE30-\uFE4F\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65';
    piece TEXT;
    rewritten TEXT := '';
BEGIN
    IF source !~ ('[' || letters || marks || ']') THEN
        RETURN source;
    END IF;
    FOR piece IN
        SELECT part.found[1]
        FROM regexp_matches(regexp_replace(source, '[' || marks || ']', ' ', 'g'),
                            '([' || letters || ']+|[^' || letters || ']+)', 'g')
             WITH ORDINALITY AS part(found, n)
        ORDER BY part.n
    LOOP
        IF piece ~ ('^[' || letters || ']') THEN
            rewritten := rewritten || ' '
                || coalesce((SELECT string_agg(substr(piece, i, 2), ' ' ORDER BY i)
                             FROM generate_series(1, length(piece) - 1) AS i), '')
                || ' ';
        ELSE
            rewritten := rewritten || piece;
        END IF;
    END LOOP;
    RETURN rewritten;
END
$$;

CREATE OR REPLACE FUNCTION memory_search(topic TEXT, body TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('simple',
               regexp_replace(searchable(topic), '[[:punct:][:space:][:cntrl:]]+', ' ', 'g')), 'A')
        || setweight(to_tsvector('simple',
               regexp_replace(searchable(body), '[[:punct:][:space:][:cntrl:]]+', ' ', 'g')), 'B')
$$;

-- What is already kept: an update computes a row's generated `search` again.
UPDATE memory_facts SET topic = topic;
UPDATE memory_history SET topic = topic;
